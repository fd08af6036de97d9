"""torch SDPA's cuDNN backend: gradients when every logit shares a large negative offset.

Coordinate 0 of every query is +a and of every key -a, which adds -scale * a * a to every logit
and leaves the softmax, the output and the gradients' exact values unchanged. Each call runs the
cuDNN backend and the math backend (same dtype, the plain baseline) on the same inputs and
compares dQ, dK and dV with float64 autograd through plain attention. Standalone: needs torch and
a GPU cuDNN's SDPA supports.

    python sdpa_cudnn_offset_logits_backward.py
"""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def grads(q, k, v, do, causal, backend=None):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    if backend is None:  # float64 reference: plain attention, top-left causal as SDPA's is_causal
        s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        out = torch.softmax(s, -1) @ v
    else:
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.backward(do)
    return out.detach(), q.grad, k.grad, v.grad


def report(label, got, want):
    finite = got.isfinite()
    bad = (~finite).sum().item()
    err = (got.double() - want).abs()[finite].max().item() if finite.any() else float("nan")
    return f"{label} non-finite {bad}/{got.numel()}, max error where finite {err:.3g}"


def case(nq, nk, heads, d, causal, offset, dtype=torch.float16, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn(1, heads, n, d, device="cuda", generator=g, dtype=torch.float32)
                   for n in (nq, nk, nk, nq))
    a = math.sqrt(offset * math.sqrt(d))  # scale * a * a == offset
    q[..., 0], k[..., 0] = a, -a
    q, k, v, do = (t.to(dtype) for t in (q, k, v, do))
    ref = grads(*(t.double() for t in (q, k, v, do)), causal)
    line = [f"{nq}x{nk} heads {heads} d{d} {str(dtype)[6:]} causal={causal} logit offset -{offset:g}:"]
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
        try:
            got = grads(q, k, v, do, causal, backend)
        except RuntimeError as e:
            line.append(f"  {name}: raised {str(e).splitlines()[0][:100]}")
            continue
        line.append(f"  {name}: " + "; ".join(report(n, x, r) for n, x, r in zip(("out", "dq", "dk", "dv"), got, ref)))
    print("\n".join(line), flush=True)


if __name__ == "__main__":
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    for offset in (0, 1e2, 1e3, 5e3, 1e4, 2e4):
        case(2, 64, 1, 16, True, offset)
    for offset in (0, 1e3, 1e4, 2e4):
        case(32, 64, 4, 64, False, offset)
        case(128, 128, 2, 128, False, offset)
        case(32, 64, 4, 64, False, offset, dtype=torch.bfloat16)
