"""cuDNN's SDPA backward gives dQ NaN on rows whose softmax denominator underflows.

Each row's allowed scores are all equal to ``base`` (one, four or all 64 keys allowed through a
boolean mask), so the row's log-sum-exp is ``base + ln(keys allowed)`` and its softmax is exact
and uniform; the output, dK and dV stay right. Rows of dQ turn NaN once that log-sum-exp is
about ``ln`` of the dtype's smallest normal number or below it: -9.70 for float16, -87.34 for
bfloat16. The math backend on the same inputs is finite. Counted: rows with a non-finite
element, of 64. Standalone: needs torch with cuDNN attention and a GPU.

    python sdpa_cudnn_low_row_sums.py
"""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def nonfinite_rows(base, dtype, d=16, n=64, visible=1, scale=1.0, backend=SDPBackend.CUDNN_ATTENTION):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.zeros(1, 1, n, d, device="cuda", dtype=torch.float64)
    k = torch.zeros(1, 1, n, d, device="cuda", dtype=torch.float64)
    q[..., 0] = 1.0
    k[..., 0] = base / scale  # every score scale * q.k is base
    mask = None
    if visible is not None:  # row i may attend keys i, i+1, ..., i+visible-1 (mod n)
        mask = torch.zeros(n, n, dtype=torch.bool, device="cuda")
        for t in range(visible):
            mask[torch.arange(n), (torch.arange(n) + t) % n] = True
        mask = mask[None, None]
    v = torch.randn(1, 1, n, d, device="cuda", generator=g, dtype=torch.float64)
    do = torch.randn(1, 1, n, d, device="cuda", generator=g, dtype=torch.float64)
    q, k, v = (t.to(dtype).requires_grad_() for t in (q, k, v))
    with sdpa_kernel(backend):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do.to(dtype))
    return [int((~torch.isfinite(t)).any(dim=-1).sum()) for t in (out, dq, dk, dv)]


if __name__ == "__main__":
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    for dtype in (torch.float16, torch.bfloat16):
        for visible in (1, 4, None):
            for base in (-5, -8, -9, -9.5, -9.7, -10, -10.5, -11, -12, -15, -20, -40, -85, -87, -89, -100, -1000):
                rows = nonfinite_rows(base, dtype, visible=visible)
                print(f"{str(dtype)[6:]} head dim 16, 64 keys, {visible or 'all'} allowed a row, every score {base}: "
                      f"rows not finite in out/dQ/dK/dV {rows}", flush=True)
    for base in (-9, -11, -20):
        print(f"float16 head dim 64, 128 keys, 1 allowed, score {base}: {nonfinite_rows(base, torch.float16, 64, 128)}")
        print(f"float16 head dim 16, 1 allowed, scale 0.25, score {base}: "
              f"{nonfinite_rows(base, torch.float16, scale=0.25)}")
        print(f"float16 head dim 16, 1 allowed, score {base}, math backend: "
              f"{nonfinite_rows(base, torch.float16, backend=SDPBackend.MATH)}", flush=True)
