"""torch SDPA's cuDNN backend: the forward takes one query and one key, the backward refuses them.

Standalone (torch only). Run on an H100 or H200:

    python sdpa_cudnn_one_query_one_key.py

aten._scaled_dot_product_cudnn_attention (the op F.scaled_dot_product_attention dispatches to for
the cuDNN backend) is called with q, k, v of shape (1, 1, 1, 16) in float16, then its backward.
The forward is compared with float64 attention (one key: the output is v); the backward's
result or error is printed. The exact gradients are dQ = dK = 0 and dV = dO.
"""
import torch

torch.manual_seed(0)
print(torch.__version__, torch.cuda.get_device_name(), "cuDNN", torch.backends.cudnn.version())
op = torch.ops.aten._scaled_dot_product_cudnn_attention
for dtype in (torch.float16, torch.bfloat16):
    q, k, v = (torch.randn(1, 1, 1, 16, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    out = op(q, k, v, attn_bias=None, compute_log_sumexp=True, dropout_p=0.0, is_causal=False,
             return_debug_mask=False)[0]
    print(f"{dtype}: forward ran, largest error against float64 (= v): "
          f"{float((out.double() - v.double()).abs().max()):.3g}")
    grad = torch.randn_like(out)
    try:
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad)
        torch.cuda.synchronize()
        print(f"{dtype}: backward ran: |dQ| max {float(dq.abs().max()):.3g}, |dK| max {float(dk.abs().max()):.3g}, "
              f"dV - dO max {float((dv - grad).abs().max()):.3g}")
    except Exception as error:  # the refusal is what this script shows
        print(f"{dtype}: backward raised {type(error).__name__}: {str(error).splitlines()[0]}")
