"""torch SDPA's flash backend returns NaN for a negative softmax scale.

Standalone (torch only). Run on a CUDA GPU with the flash backend (sm80 or newer):

    python docs/repros/sdpa_flash_negative_scale.py

For each configuration it prints the largest error of F.scaled_dot_product_attention under
sdpa_kernel(SDPBackend.FLASH_ATTENTION) against a float64 softmax(scale * q k^T) v written out
by hand, and whether the output holds NaN. A negative `scale` is accepted without complaint
(the docstring only calls it the "scaling factor applied prior to softmax"), and the math
backend computes it correctly.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def exact(q, k, v, scale):
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return torch.softmax(scale * q @ k.transpose(-1, -2), dim=-1) @ v


def run(dtype, heads, kv_heads, head_dim, scale, n=16, backend=SDPBackend.FLASH_ATTENTION):
    gen = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, heads, n, head_dim, device="cuda", generator=gen).to(dtype)
    k = torch.randn(1, kv_heads, n, head_dim, device="cuda", generator=gen).to(dtype)
    v = torch.randn(1, kv_heads, n, head_dim, device="cuda", generator=gen).to(dtype)
    try:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=heads != kv_heads)
    except RuntimeError as error:
        print(f"{backend.name:15} {str(dtype):15} D={head_dim:3}: not run: {str(error).splitlines()[0][:100]}")
        return
    error = (out.double() - exact(q, k, v, scale)).abs().max().item()
    print(f"{backend.name:15} {str(dtype):15} H={heads:2} Hkv={kv_heads:2} D={head_dim:3} scale={scale:+.3f}: "
          f"max error {error:.3g}, NaN in output: {bool(out.isnan().any())}")


if __name__ == "__main__":
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for dtype in (torch.bfloat16, torch.float16):
        for heads, kv_heads, head_dim in ((14, 2, 21), (8, 8, 64), (8, 8, 128)):
            for scale in (1.0, -1.0, -0.125):
                run(dtype, heads, kv_heads, head_dim, scale)
    run(torch.bfloat16, 8, 8, 64, -1.0, backend=SDPBackend.MATH)
    run(torch.bfloat16, 8, 8, 64, -1.0, backend=SDPBackend.EFFICIENT_ATTENTION)
    run(torch.bfloat16, 8, 8, 64, -1.0, backend=SDPBackend.CUDNN_ATTENTION)
