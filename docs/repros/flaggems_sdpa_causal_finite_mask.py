"""FlagGems' scaled_dot_product_attention (5.0.2): does a key its causal band hides change the
row it is hidden from, once that key's logit is large enough? Yes, on an H200 (torch 2.11,
triton 3.6; the output beside this script): the forward hides the diagonal block's future keys by
adding -1.0e6 to their logits in base 2 (``_attn_fwd_inner``, STAGE 2: ``qk * qk_scale * LOG2E +
tl.where(mask, 0, -1.0e6)``), not -inf, so a hidden key whose logit leads the visible ones by
more than 1e6 wins the softmax. torch's SDPA (``--torch``) gives every line an error of 0.

Standalone (torch and flag_gems). Run on a CUDA GPU:

    python docs/repros/flaggems_sdpa_causal_finite_mask.py            # FlagGems, as it tunes itself
    python docs/repros/flaggems_sdpa_causal_finite_mask.py --torch    # torch's own SDPA (CPU too)

Query 0 of a causal call (equal lengths, so ``is_causal``) may attend key 0 only; key 1, in the
same key block under every configuration, is made ``magnitude`` times the signs of query 0: its
logit grows with the magnitude, and float64 attention, which never looks at it, gives query 0
exactly value 0. A second call puts the huge key at 300 instead, past the diagonal block. Each
line: dtype, magnitude, where the huge key is, the hidden and visible logits in base 2, and query
0's largest error against value 0 (the hidden key's value leaking in shows as an error of the
values' size). Boundary measured: a lead of 8.25e5 leaves query 0 exact; at 2.48e6 and more its
error is 3.34 at every magnitude, that of key 1's value in place of key 0's, in bfloat16, float16
and float32 alike; key 300 never leaks.
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
