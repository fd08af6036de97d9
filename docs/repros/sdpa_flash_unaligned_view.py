"""torch SDPA's flash backend (public API) accepts views whose storage is not 16-byte aligned,
then faults with "CUDA error: misaligned address", which ends the process's CUDA context.

Standalone (torch only). Run on a CUDA GPU (sm80 or newer):

    python docs/repros/sdpa_flash_unaligned_view.py

Each configuration runs in a process of its own (after the fault no CUDA call works): q, k
and v as views into NaN-filled buffers, offset by 3 elements on the head dim (rows of D + 5
elements), as slicing a padded tensor gives, then their contiguous copies.
"""

import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def padded_view(shape, dtype, before=(1, 1, 2, 3), after=(0, 1, 1, 2)):
    """A (B, H, N, D) view into a NaN-filled buffer padded on every dimension."""
    full = [n + b + a for n, b, a in zip(shape, before, after)]
    buffer = torch.full(full, float("nan"), dtype=dtype, device="cuda")
    view = buffer[tuple(slice(b, b + n) for b, n in zip(before, shape))]
    view.copy_(torch.randn(shape, dtype=dtype, device="cuda"))
    return view


def run(head_dim, dtype_name, contiguous):
    dtype = getattr(torch, dtype_name)
    q, k, v = (padded_view((1, 2, n, head_dim), dtype) for n in (64, 96, 96))
    if contiguous == "1":
        q, k, v = (t.contiguous() for t in (q, k, v))
    params = torch.backends.cuda.SDPAParams(q, k, v, None, 0.0, False, False)
    accepted = torch.backends.cuda.can_use_flash_attention(params, False)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
        result = f"ran, NaN in output: {bool(out.isnan().any())}"
    except Exception as error:  # noqa: BLE001 - the fault is what this reports
        result = f"raised {type(error).__name__}: {str(error).splitlines()[0]}"
    print(f"D={head_dim} {dtype_name} {'contiguous copies' if contiguous == '1' else 'padded views'}: strides "
          f"{tuple(q.stride())}; can_use_flash_attention: {accepted}; {result}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4:
        run(int(sys.argv[1]), sys.argv[2], sys.argv[3])
        sys.exit(0)
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    for head_dim in (64, 128):
        for dtype_name in ("float16", "bfloat16"):
            for contiguous in ("0", "1"):
                subprocess.run([sys.executable, __file__, str(head_dim), dtype_name, contiguous], check=False)
