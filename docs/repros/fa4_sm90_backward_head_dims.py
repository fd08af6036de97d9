"""FlashAttention-4's Hopper (sm90) backward at head dims that are not multiples of 32.

Standalone (torch and flash-attn-4 only). Run on an H100 or H200:

    python docs/repros/fa4_sm90_backward_head_dims.py

For each head dim, float16, 128 queries and 256 keys, with as many K/V heads as query heads
(2:2) and with GQA (4:1): flash_attn_func's forward and backward against float64 attention and
its autograd gradients, and beside it the error of plain attention computed in float32 from the
same float16 inputs and rounded to float16 (what a correct float16 kernel's error looks like).
A gradient whose error is many times the plain one is wrong; "raised" is the call failing.
"""

import torch
from flash_attn.cute import flash_attn_func


def attention(q, k, v, scale):
    """Plain attention in the dtype of its inputs, (B, N, H, D) layout, K/V heads repeated."""
    group = q.shape[2] // k.shape[2]
    k, v = (t.repeat_interleave(group, dim=2) for t in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(dim=-1), v)


def gradients(q, k, v, grad_out, dtype, scale):
    """(out, dq, dk, dv) of plain attention computed in ``dtype``."""
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    out = attention(*leaves, scale)
    out.backward(grad_out.to(dtype))
    return [out.detach()] + [t.grad for t in leaves]


def run(head_dim, heads, kv_heads, nq=128, nk=256, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(1, n, h, head_dim, device="cuda", dtype=torch.float16, generator=generator)
               for n, h in ((nq, heads), (nk, kv_heads), (nk, kv_heads)))
    grad_out = torch.randn(1, nq, heads, head_dim, device="cuda", dtype=torch.float16, generator=generator)
    scale = head_dim ** -0.5
    exact = gradients(q, k, v, grad_out, torch.float64, scale)
    plain = [t.to(torch.float16) for t in gradients(q, k, v, grad_out, torch.float32, scale)]
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    try:
        out, _ = flash_attn_func(*leaves, softmax_scale=scale, return_lse=True)
        out.backward(grad_out)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - the compile error is what this reports
        print(f"head dim {head_dim:3}, {heads}:{kv_heads} heads: raised {type(error).__name__}: "
              f"{' '.join(str(error).split())[:110]}")
        return
    got = [out.detach()] + [t.grad for t in leaves]
    parts = []
    for name, g, p, e in zip(("out", "dq", "dk", "dv"), got, plain, exact):
        error = (g.double() - e).abs().max().item()
        baseline = (p.double() - e).abs().max().item()
        parts.append(f"{name} {error:.1e} (plain {baseline:.1e}){' WRONG' if error > 20 * baseline else ''}")
    print(f"head dim {head_dim:3}, {heads}:{kv_heads} heads: " + ", ".join(parts))


if __name__ == "__main__":
    print("torch", torch.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_capability())
    for head_dim in (48, 64, 72, 80, 96, 104, 112, 128, 160):
        for heads, kv_heads in ((2, 2), (4, 1)):
            run(head_dim, heads, kv_heads)
