"""torch's public scaled_dot_product_attention returns NaN for a call without any key where the
query's float16 sum overflows.

Standalone (torch only), on the CPU (or a GPU: pass ``cuda``):

    python docs/repros/sdpa_math_no_keys.py [cpu|cuda]

With an empty key axis attention is an empty softmax: every output is 0 (float64 attention
written out by hand below gives 0). F.scaled_dot_product_attention returns NaN where the sum of
all the elements of q, in q's dtype, overflows, and 0 where it does not; the math backend's own
operator, aten._scaled_dot_product_attention_math, returns 0 on the same inputs. A constant q of
255 in (1, 2, 8, 16) sums to 65280 (finite in float16), one of 256 to 65536 (inf). The backward
of the same call gives a NaN dQ where dO's sum overflows.
"""

import sys

import torch
import torch.nn.functional as F


def exact(q, k, v):
    """float64 attention; with no key every row's softmax is empty and its output 0."""
    q, k, v = (t.double() for t in (q, k, v))
    if k.shape[-2] == 0:
        return torch.zeros_like(q[..., : v.shape[-1]])
    return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v


def call(device, fill, dtype=torch.float16):
    q = torch.full((1, 2, 8, 16), float(fill), dtype=dtype, device=device)
    k = torch.zeros(1, 2, 0, 16, dtype=dtype, device=device)
    v = torch.zeros(1, 2, 0, 16, dtype=dtype, device=device)
    out = F.scaled_dot_product_attention(q, k, v)
    math_op = torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]
    reference = exact(q, k, v)
    print(f"q filled with {fill} ({str(dtype)}), sum of q in its dtype: {q.sum().item()}, in float64: "
          f"{q.double().sum().item()}")
    print(f"  F.scaled_dot_product_attention: NaN {int(out.isnan().sum())} of {out.numel()}, largest error "
          f"against float64 {(out.double() - reference).abs().max().item()}")
    print(f"  aten._scaled_dot_product_attention_math: NaN {int(math_op.isnan().sum())} of {math_op.numel()}, "
          f"largest error {(math_op.double() - reference).abs().max().item()}")
    return bool(out.isnan().any())


def backward(device, scale):
    q = torch.randn(1, 2, 8, 16, generator=torch.Generator().manual_seed(0)).half().to(device).requires_grad_()
    k = torch.zeros(1, 2, 0, 16, dtype=torch.float16, device=device, requires_grad=True)
    v = torch.zeros(1, 2, 0, 16, dtype=torch.float16, device=device, requires_grad=True)
    grad_out = torch.full((1, 2, 8, 16), float(scale), dtype=torch.float16, device=device)
    F.scaled_dot_product_attention(q, k, v).backward(grad_out)
    print(f"backward, dO filled with {scale} (sum in float16 {grad_out.sum().item()}): dQ NaN "
          f"{int(q.grad.isnan().sum())} of {q.grad.numel()} (exact dQ: 0)")


if __name__ == "__main__":
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    print(f"torch {torch.__version__}, {device}")
    wrong = [call(device, fill) for fill in (1, 255, 256, 1000)]
    backward(device, 255)
    backward(device, 256)
    sys.exit(1 if any(wrong) else 0)
