"""torch SDPA's cuDNN backend with large logits: a hidden key far above a row's visible keys
(forward, is_causal), and large logits in the backward.

Part 1: causal attention, 64 queries and keys; key 40 is made to score G above the best key
query 10 may see (k[40] = t * q[10]), though causality hides it from query 10. Query 10's output
is compared with float64 attention, for several gaps G.
Part 2: one query (and 32) over 64 keys, logits of a few hundred (q and k normal with a large
standard deviation): each of dQ, dK, dV against float64 autograd, cuDNN beside the math backend
in the same dtype. Standalone: needs torch and a GPU cuDNN's SDPA supports.

    python sdpa_cudnn_large_logits.py
"""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def attention64(q, k, v, causal):
    s = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


def part1(gap, d=64, n=64, dtype=torch.float16):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, d, device="cuda", generator=g) for _ in range(3))
    s = (q @ k.transpose(-1, -2))[0, 0, 10] / math.sqrt(d)
    best_visible = s[:11].max().item()
    # scale * t * |q10|^2 = best_visible + gap
    t = (best_visible + gap) * math.sqrt(d) / (q[0, 0, 10] @ q[0, 0, 10]).item()
    k[0, 0, 40] = t * q[0, 0, 10]
    q, k, v = (x.to(dtype) for x in (q, k, v))
    hidden = (q[0, 0, 10].double() @ k[0, 0, 40].double()).item() / math.sqrt(d)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = attention64(q, k, v, True)
    err = (out.double() - ref)[0, 0, 10].abs().max().item()
    others = torch.cat([(out.double() - ref)[0, 0, :10], (out.double() - ref)[0, 0, 11:]]).abs().max().item()
    print(f"  gap {gap:>6g} (hidden logit {hidden:.1f}, best visible {best_visible:.1f}): query 10 error {err:.3g}; "
          f"other queries {others:.3g}", flush=True)


def grads(q, k, v, do, backend):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    if backend is None:
        out = attention64(q, k, v, False)
    else:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v)
    out.backward(do)
    return q.grad, k.grad, v.grad


def part2(nq, d, logit_size, dtype=torch.float16, heads=2):
    g = torch.Generator(device="cuda").manual_seed(1)
    std = math.sqrt(logit_size / math.sqrt(d))  # |q.k| / sqrt(d) about logit_size
    q = (torch.randn(1, heads, nq, d, device="cuda", generator=g) * std).to(dtype)
    k = (torch.randn(1, heads, 64, d, device="cuda", generator=g) * std).to(dtype)
    v = torch.randn(1, heads, 64, d, device="cuda", generator=g).to(dtype)
    do = torch.randn(1, heads, nq, d, device="cuda", generator=g).to(dtype)
    ref = grads(*(t.double() for t in (q, k, v, do)), None)
    line = f"  {nq} x 64, d{d}, {str(dtype)[6:]}, logits about {logit_size:g}:"
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
        got = grads(q, k, v, do, backend)
        parts = []
        for label, x, r in zip(("dq", "dk", "dv"), got, ref):
            bad = (~x.isfinite()).sum().item()
            fin = x.isfinite()
            err = (x.double() - r).abs()[fin].max().item() if fin.any() else float("nan")
            parts.append(f"{label} non-finite {bad}/{x.numel()} error {err:.3g}")
        line += f"\n    {name}: " + "; ".join(parts)
    print(line, flush=True)


if __name__ == "__main__":
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print("part 1: a key causality hides, G above the visible ones (float16, d64)")
    for gap in (0, 10, 50, 80, 90, 100, 110, 150, 300, 1000):
        part1(gap)
    print("part 2: large logits in the backward")
    for nq in (1, 32):
        for d in (16, 72, 128):
            for size in (1, 50, 200, 1000):
                part2(nq, d, size)
    part2(1, 64, 200, dtype=torch.bfloat16)
