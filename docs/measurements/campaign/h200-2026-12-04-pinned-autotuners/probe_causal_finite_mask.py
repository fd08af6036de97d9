"""Does FlagGems' scaled_dot_product_attention let a key hidden by its causal mask through, where
that key's logit is large enough? Not yet run on a GPU (written for the next device session).

Standalone (torch and flag_gems). Run on a CUDA GPU:

    python probe_causal_finite_mask.py            # FlagGems
    python probe_causal_finite_mask.py --torch    # torch's own SDPA, the harness's control (CPU too)

The campaign's lead: FlagGems' forward masks the future keys of the diagonal block by adding
``-1.0e6`` to their logits (``_attn_fwd_inner``, STAGE 2: ``qk * qk_scale * LOG2E +
tl.where(mask, 0, -1.0e6)``), not -inf, so that a hidden key whose logit (in base 2) exceeds the
visible ones by about 1e6 still wins the softmax. Query 0 of a causal call (top-left, equal
lengths) may attend key 0 only; key 1, in the same 16-key block of any configuration, is made
``magnitude`` times the sign of query 0, elementwise: its logit grows with the magnitude, and
float64 attention, which never looks at it, gives query 0 exactly value 0. A second call puts
the huge key past the first 256 keys instead, in a block the diagonal never reaches. Each line:
dtype, magnitude, where the huge key is, the hidden logit in base 2 against the visible one, and
query 0's largest error against float64 (a leak shows as an error of the values' size or
more, or NaN).
"""
import math
import sys

import torch

LOG2E = 1.4426950408889634


def attention(q, k, v, scale):
    if "--torch" in sys.argv:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    import flag_gems.ops as ops

    return ops.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)


def probe(dtype, magnitude, hidden, n=512, d=64, scale=1.0, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, d, generator=g, dtype=torch.float64) for _ in range(3))
    k[0, 0, hidden] = magnitude * q[0, 0, 0].sign()
    hidden_logit = scale * float(q[0, 0, 0] @ k[0, 0, hidden]) * LOG2E
    visible_logit = scale * float(q[0, 0, 0] @ k[0, 0, 0]) * LOG2E
    q, k, v = (t.to(dtype).to(device) for t in (q, k, v))
    out = attention(q, k, v, scale)[0, 0, 0].double()
    expected = v[0, 0, 0].double()  # query 0 sees key 0 alone
    error = (out - expected).abs().max().item()
    print(f"{str(dtype)[6:]:>8} magnitude {magnitude:8.0e} hidden key {hidden:>3}: logits (base 2) hidden "
          f"{hidden_logit:10.3g}, visible {visible_logit:8.3g}; query 0's error {error:.3g}", flush=True)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        top = 6e4 if dtype == torch.float16 else 1e7  # float16's largest finite is 65504
        for magnitude in (1e2, 1e3, 1e4, 3e4, 6e4, 1e5, 1e6, 1e7):
            if magnitude > top:
                continue
            for hidden in (1, 300):
                probe(dtype, magnitude, hidden, device=device)
    print(f"(one query head, 512 keys, head dim 64, scale 1; device {device}; "
          f"{'torch SDPA' if '--torch' in sys.argv else 'FlagGems'})")
