"""cuDNN's SDPA backward gives float16 dQ NaN on the rows where ``|scale * delta| / e^lse`` passes float16's
largest value, 65504, however small the row's exact dS: ``delta = dO . O`` is the row's dot product of the
upstream gradient with the output, ``e^lse`` its softmax denominator (the sum of ``exp(scale * q . k)`` over the
keys it may attend). The math backend and bfloat16 stay finite.

Each row below attends exactly one key through a boolean mask: its probability is 1, dS = dP - delta = 0 and
the exact dQ is 0; the output, dK and dV are right. V is ``v`` everywhere and dO is ``g``, so that
``delta = 64 * v * g`` at head dim 64, and the visible key's logit ``a`` is the row's lse.

1. Every logit 0 (lse 0): dQ finite up to scale * delta = 65472, NaN from 65536 (float16 rounds 65520 and above
   to infinity); bfloat16 and the math backend finite.
2. The visible key's logit a (and hidden keys' logits a + c): the boundary moves to 65504 * e^a, whatever c.
3. Random q and k: the rows that turn NaN, against the rows where |scale * delta| / e^lse >= 65520, computed
   in float64 on the CPU from the same inputs.

Standalone: needs torch with cuDNN attention and a GPU.

    python sdpa_cudnn_float16_scaled_delta.py
"""
import math

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

LIMIT = 65520.0  # float16 rounds this and above to infinity
CUDNN, MATH = SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH


def nonfinite_dq_rows(q, k, v, mask, grad_out, scale, backend=CUDNN, dtype=torch.float16):
    """Which rows of dQ (the queries of one head) hold a value that is not finite."""
    q, k, v = (t.to("cuda", dtype).requires_grad_() for t in (q, k, v))
    with sdpa_kernel(backend):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask.cuda(), scale=scale)
    dq, = torch.autograd.grad(out, (q,), grad_out.to("cuda", dtype))
    return (~torch.isfinite(dq[0, 0])).any(-1).cpu()


def one_key_a_row(queries, keys):
    """Query i may attend key ``keys - queries + i`` alone."""
    mask = torch.zeros(queries, keys, dtype=torch.bool)
    mask[torch.arange(queries), keys - queries + torch.arange(queries)] = True
    return mask


def constant(queries, keys, v, g, visible=0.0, hidden=0.0, dim=64):
    """q, k, v, dO at scale 1: the visible keys' logits ``visible``, the hidden ones' ``hidden``."""
    q = torch.zeros(1, 1, queries, dim, dtype=torch.float64)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, keys, dim, dtype=torch.float64)
    k[..., 0] = hidden
    k[0, 0, keys - queries + torch.arange(queries), 0] = visible
    return (q, k, torch.full((1, 1, keys, dim), v, dtype=torch.float64),
            torch.full((1, 1, queries, dim), g, dtype=torch.float64))


def predicted_rows(q, k, v, mask, grad_out, scale):
    """Float64: the rows where |scale * delta| / e^lse reaches LIMIT."""
    s = (scale * q[0, 0] @ k[0, 0].T).masked_fill(~mask, -math.inf)
    lse = torch.logsumexp(s, -1)
    delta = (grad_out[0, 0] * (torch.softmax(s, -1) @ v[0, 0])).sum(-1)
    return (scale * delta).abs() * torch.exp(-lse) >= LIMIT


def pattern(rows):
    return "".join("x" if row else "." for row in rows)


if __name__ == "__main__":
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print("1. every logit 0, 64 keys, head dim 64, scale 1/8, V = 16, one key a row:")
    for queries in (1, 8):
        mask = one_key_a_row(queries, 64)
        for g in (400.0, 511.0, 511.5, 512.0, 512.5, 600.0):
            q, k, v, do = constant(queries, 64, 16.0, g)
            counts = ", ".join(f"{name} {int(nonfinite_dq_rows(q, k, v, mask, do, 1 / 8, backend, dtype).sum())}"
                               for name, backend, dtype in (("cuDNN float16", CUDNN, torch.float16),
                                                            ("cuDNN bfloat16", CUDNN, torch.bfloat16),
                                                            ("math float16", MATH, torch.float16)))
            print(f"  {queries} quer{'y' if queries == 1 else 'ies'}, scale * delta = {64 * 16 * g / 8:6.0f}: "
                  f"rows of dQ not finite: {counts} of {queries}", flush=True)
    print("2. 8 queries, 64 keys, scale 1, V = 1: the visible key's logit a, the hidden keys' a + c; "
          "scale * delta at fractions of 65504 * e^a:")
    mask = one_key_a_row(8, 64)
    for visible in (1.0, 0.0, -1.0, -2.5, -5.0):
        for gap in (-5.0, 3.0):
            boundary = 65504 * math.exp(visible)
            counts = []
            for fraction in (0.97, 0.995, 1.005, 1.03):
                q, k, v, do = constant(8, 64, 1.0, boundary * fraction / 64, visible, visible + gap)
                counts.append(f"{fraction}: {int(nonfinite_dq_rows(q, k, v, mask, do, 1.0).sum())}")
            print(f"  a = {visible:4.1f}, c = {gap:4.1f}, 65504 * e^a = {boundary:9.0f}: rows of 8 not finite at "
                  + ", ".join(counts), flush=True)
    print("3. random q and k (standard normal, drawn on the CPU), 8 queries, 64 keys, head dim 64, scale 1/8, V = 16:")
    mask = one_key_a_row(8, 64)
    agree = total = 0
    for seed in range(6):
        generator = torch.Generator().manual_seed(seed)
        q = torch.randn(1, 1, 8, 64, generator=generator, dtype=torch.float64).half().double()
        k = torch.randn(1, 1, 64, 64, generator=generator, dtype=torch.float64).half().double()
        v = torch.full((1, 1, 64, 64), 16.0, dtype=torch.float64)
        for g in (25.0, 50.0, 100.0, 200.0, 400.0):
            do = torch.full((1, 1, 8, 64), g, dtype=torch.float64)
            got, predicted = nonfinite_dq_rows(q, k, v, mask, do, 1 / 8), predicted_rows(q, k, v, mask, do, 1 / 8)
            total += 1
            agree += bool((got == predicted).all())
            print(f"  seed {seed}, scale * delta = {64 * 16 * g / 8:5.0f}: rows not finite {pattern(got)}, "
                  f"predicted {pattern(predicted)}", flush=True)
    print(f"  the rows not finite are the predicted ones in {agree} of {total} calls")
