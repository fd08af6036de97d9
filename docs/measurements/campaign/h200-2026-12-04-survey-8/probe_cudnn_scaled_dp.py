"""Does torch's cuDNN SDPA backward give dQ NaN on rows whose exact dS is 0 when scale * dP is
beyond float16's range? A probe for the survey's eighth-round lead (README.txt), written for the
next device session; not yet run on a GPU.

Standalone (torch only). Run on a CUDA GPU with cuDNN attention:

    python probe_cudnn_scaled_dp.py            # cuDNN, then the math backend for comparison
    python probe_cudnn_scaled_dp.py --cpu      # the math backend alone, on the CPU (the control)

One query head per row of 8 queries, 64 keys, float16, head dim 64, each query allowed exactly
one key by a boolean mask (query i sees key i), so that P = 1 on that key and dS = dP - delta = 0
exactly, and dQ = 0. The values are all V and dO all G, so that dP = delta = V * G * 64 on every
row and scale * dP = V * G * 8; G sweeps that product across float16's largest value, 65504.
Each line: scale * dP, then how many of the 8 rows of dQ hold NaN or infinity under each backend.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def bad_rows(backend, device, value, upstream):
    n, keys, dim = 8, 64, 64
    q = torch.randn(1, 1, n, dim, dtype=torch.float16, device=device).requires_grad_()
    k = torch.randn(1, 1, keys, dim, dtype=torch.float16, device=device)
    v = torch.full((1, 1, keys, dim), value, dtype=torch.float16, device=device)
    mask = torch.zeros(n, keys, dtype=torch.bool, device=device)
    mask[torch.arange(n), torch.arange(n)] = True
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.backward(torch.full_like(out, upstream))
    return int((~torch.isfinite(q.grad[0, 0])).any(-1).sum())


if __name__ == "__main__":
    torch.manual_seed(0)
    cpu = "--cpu" in sys.argv
    device = "cpu" if cpu else "cuda"
    backends = [("math", SDPBackend.MATH)]
    if not cpu:
        backends.insert(0, ("cudnn", SDPBackend.CUDNN_ATTENTION))
        print("cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
    print("torch", torch.__version__)
    value = 16.0
    for upstream in (200.0, 400.0, 480.0, 500.0, 520.0, 600.0, 1000.0, 4000.0):
        scaled_dp = value * upstream * 64 / 8  # scale 1/sqrt(64)
        counts = ", ".join(f"{name} {bad_rows(backend, device, value, upstream)} of 8" for name, backend in backends)
        where = "beyond" if scaled_dp > 65504 else "within"
        print(f"scale * dP = {scaled_dp:9.0f} ({where} float16): rows of dQ not finite: {counts}", flush=True)
