"""cuDNN's SDPA backward gives float16 dQ NaN on rows where ``scale * delta`` (``delta = dO . O``, equal to
``dO . V`` on a row that attends one key) times the row's largest probability *before masking*,
``max_j exp(scale * q.k_j - lse)`` over every key, hidden ones included, exceeds float16's largest value,
65504; there the exact dS, and dQ, are 0.

Each row below attends exactly one key through a boolean mask, so that its probability is 1, dS = 0 and the
exact dQ = 0; the output and dK, dV stay right. Every value of V is ``v`` and of dO is ``g``, so that
``delta = 64 * v * g`` at head dim 64.

1. Every logit 0 (q = k = 0): NaN from scale * delta = 65664, none at 65408; bfloat16 and the math backend
   finite.
2. Hidden keys whose logits exceed the visible key's by ``c``: the boundary moves to 65504 * e^-c; hidden
   keys below it (c < 0) leave it at 65504.
3. Random q and k: the rows that turn NaN are the rows where ``max_j exp(s_ij - lse_i) * scale * delta``
   exceeds 65504 (predicted in float64 on the CPU from the same inputs).

Standalone: needs torch with cuDNN attention and a GPU.

    python sdpa_cudnn_float16_scaled_delta.py
"""
import math

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

LIMIT = 65520  # float16 rounds this and above to infinity
CUDNN, MATH = SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH


def nonfinite_dq_rows(q, k, v, mask, grad_out, scale, backend=CUDNN, dtype=torch.float16):
    """Rows of dQ (over the queries of one head) holding a value that is not finite."""
    q, k, v = (t.to("cuda", dtype).requires_grad_() for t in (q, k, v))
    with sdpa_kernel(backend):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask.cuda(), scale=scale)
    dq, = torch.autograd.grad(out, (q,), grad_out.to("cuda", dtype))
    return (~torch.isfinite(dq[0, 0])).any(-1).cpu()


def one_key_a_row(queries, keys):
    """Query i may attend key keys - queries + i alone."""
    mask = torch.zeros(queries, keys, dtype=torch.bool)
    mask[torch.arange(queries), keys - queries + torch.arange(queries)] = True
    return mask


def flat(queries=8, keys=64, dim=64, v=16.0, g=1.0, gap=None):
    """q, k, v, dO: logits 0 on the visible key, ``gap`` on the hidden ones (None: 0), at scale 1."""
    q = torch.zeros(1, 1, queries, dim, dtype=torch.float64)
    k = torch.zeros(1, 1, keys, dim, dtype=torch.float64)
    if gap is not None:
        q[..., 0] = 1.0
        k[..., 0] = gap
        k[0, 0, keys - queries + torch.arange(queries), 0] = 0.0
    return q, k, torch.full((1, 1, keys, dim), v, dtype=torch.float64), torch.full((1, 1, queries, dim), g,
                                                                                   dtype=torch.float64)


def predicted_rows(q, k, v, mask, grad_out, scale):
    """Float64: rows where max over every key of exp(s_ij - lse_i), times |scale * delta_i|, reaches LIMIT."""
    s = scale * q[0, 0] @ k[0, 0].T
    lse = torch.logsumexp(s.masked_fill(~mask, -math.inf), -1, keepdim=True)
    out = torch.softmax(s.masked_fill(~mask, -math.inf), -1) @ v[0, 0]
    delta = (grad_out[0, 0] * out).sum(-1)
    return torch.exp(s - lse).amax(-1) * (scale * delta).abs() >= LIMIT, (scale * delta).abs() >= LIMIT


if __name__ == "__main__":
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print("1. every logit 0, one query (the last key visible) and 8 queries (one key each), head dim 64, scale 1/8:")
    for queries in (1, 8):
        mask = one_key_a_row(queries, 64)
        for g in (400.0, 511.0, 511.5, 512.0, 512.5, 513.0, 600.0):
            q, k, v, do = flat(queries, g=g)
            scaled = 64 * 16.0 * g / 8
            rows = {name: int(nonfinite_dq_rows(q, k, v, mask, do, 1 / 8, backend, dtype).sum())
                    for name, backend, dtype in (("cudnn float16", CUDNN, torch.float16),
                                                 ("cudnn bfloat16", CUDNN, torch.bfloat16),
                                                 ("math float16", MATH, torch.float16))}
            print(f"  {queries} quer{'y' if queries == 1 else 'ies'}, scale*delta {scaled:8.0f}: rows of dQ not finite "
                  + ", ".join(f"{name} {count} of {queries}" for name, count in rows.items()), flush=True)
    print("2. 8 queries, hidden keys' logits c above the visible key's, scale 1, head dim 64, V = 1: "
          "first scale*delta whose rows are NaN")
    mask = one_key_a_row(8, 64)
    for gap in (-5.0, 0.0, math.log(2), math.log(8), math.log(64)):
        first = None
        for g in [65504 * math.exp(-max(gap, 0.0)) / 64 * f for f in (0.9, 0.97, 0.995, 1.005, 1.03, 1.1)]:
            q, k, v, do = flat(8, v=1.0, g=g, gap=gap)
            bad = int(nonfinite_dq_rows(q, k, v, mask, do, 1.0).sum())
            if bad and first is None:
                first = (64 * g, bad)
        where = "none NaN up to 1.1x" if first is None else f"{first[0]:.0f} ({first[1]} of 8 rows)"
        print(f"  c = {gap:6.3f}: predicted boundary {65504 * math.exp(-max(gap, 0.0)):8.0f}; first NaN at {where}",
              flush=True)
    print("3. random q and k (standard normal, drawn on the CPU), 8 queries, 64 keys, head dim 64, scale 1/8, V = 16:")
    mask = one_key_a_row(8, 64)
    agree = 0
    total = 0
    for seed in range(6):
        generator = torch.Generator().manual_seed(seed)
        q = torch.randn(1, 1, 8, 64, generator=generator, dtype=torch.float64).half().double()
        k = torch.randn(1, 1, 64, 64, generator=generator, dtype=torch.float64).half().double()
        for g in (25.0, 50.0, 100.0, 200.0, 400.0):
            v = torch.full((1, 1, 64, 64), 16.0, dtype=torch.float64)
            do = torch.full((1, 1, 8, 64), g, dtype=torch.float64)
            got = nonfinite_dq_rows(q, k, v, mask, do, 1 / 8)
            predicted, visible_only = predicted_rows(q, k, v, mask, do, 1 / 8)
            total += 1
            agree += bool((got == predicted).all())
            print(f"  seed {seed} scale*delta {64 * 16 * g / 8:6.0f}: NaN rows {''.join('x' if b else '.' for b in got)}, "
                  f"predicted {''.join('x' if b else '.' for b in predicted)}, "
                  f"from the visible key alone {''.join('x' if b else '.' for b in visible_only)}", flush=True)
    print(f"  the NaN rows are the predicted ones in {agree} of {total} calls")
