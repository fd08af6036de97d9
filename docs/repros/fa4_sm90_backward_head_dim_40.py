"""FlashAttention-4's Hopper (sm90) backward at head dim 40, the first survey's unconfirmed row
(bfloat16, GQA 7:1), beside head dims 32, 48 and 64.

Standalone (torch and flash-attn-4 only; it borrows the float64 and plain-attention gradients of
fa4_sm90_backward_head_dims.py beside it). Run on an H100 or H200:

    python docs/repros/fa4_sm90_backward_head_dim_40.py

For float16 and bfloat16, 7 query heads with 7 and with 1 K/V head, 128 queries and 256 keys:
the error of flash_attn_func's output and gradients against float64, beside the error of plain
attention computed in float32 and rounded to the dtype. WRONG marks an error more than 20 times
the plain one.
"""
import os
import sys
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fa4_sm90_backward_head_dims as repro
from flash_attn.cute import flash_attn_func


def run(head_dim, heads, kv_heads, dtype, nq=128, nk=256, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(1, n, h, head_dim, device="cuda", dtype=dtype, generator=g)
               for n, h in ((nq, heads), (nk, kv_heads), (nk, kv_heads)))
    grad_out = torch.randn(1, nq, heads, head_dim, device="cuda", dtype=dtype, generator=g)
    scale = head_dim ** -0.5
    exact = repro.gradients(q, k, v, grad_out, torch.float64, scale)
    plain = [t.to(dtype) for t in repro.gradients(q, k, v, grad_out, torch.float32, scale)]
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    try:
        out, _ = flash_attn_func(*leaves, softmax_scale=scale, return_lse=True)
        out.backward(grad_out)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001
        print(f"{str(dtype)[6:]:8} head dim {head_dim:3}, {heads}:{kv_heads}: raised {type(error).__name__}: "
              f"{' '.join(str(error).split())[:100]}", flush=True)
        return
    got = [out.detach()] + [t.grad for t in leaves]
    parts = []
    for name, a, p, e in zip(("out", "dq", "dk", "dv"), got, plain, exact):
        err = (a.double() - e).abs().max().item()
        base = (p.double() - e).abs().max().item()
        parts.append(f"{name} {err:.1e} (plain {base:.1e}){' WRONG' if err > 20 * base else ''}")
    print(f"{str(dtype)[6:]:8} head dim {head_dim:3}, {heads}:{kv_heads}: " + ", ".join(parts), flush=True)


print(torch.cuda.get_device_name(), torch.__version__)
for dtype in (torch.bfloat16, torch.float16):
    for d in (32, 40, 48, 64):
        for heads, kv in ((7, 7), (7, 1)):
            run(d, heads, kv, dtype)
