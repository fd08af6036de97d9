"""torch SDPA's memory-efficient backend accepts a view whose storage is not 16-byte aligned,
then fails with "cutlassF: no kernel found to launch!".

Standalone (torch only). Run on a CUDA GPU:

    python docs/repros/sdpa_efficient_unaligned_view.py

q, k and v are views into larger buffers (offset by 3 elements on the head dim, row strides of
45 elements), as slicing a padded tensor gives. torch.backends.cuda.can_use_efficient_attention
says the backend can take them, F.scaled_dot_product_attention under
sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION) then raises instead of computing (or refusing
through its own checks, as it does for the flash backend). Contiguous copies of the same
tensors work.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def padded_view(shape, dtype, before=(1, 2, 1, 3), after=(0, 1, 1, 2)):
    """A (B, N, H, D) view into a NaN-filled buffer padded on every dimension."""
    full = [n + b + a for n, b, a in zip(shape, before, after)]
    buffer = torch.full(full, float("nan"), dtype=dtype, device="cuda")
    view = buffer[tuple(slice(b, b + n) for b, n in zip(before, shape))]
    view.copy_(torch.randn(shape, dtype=dtype, device="cuda"))
    return view


def run(head_dim, dtype=torch.bfloat16, contiguous=False):
    q = padded_view((1, 6, 7, head_dim), dtype).transpose(1, 2)   # (B, H, N, D)
    k = padded_view((1, 17, 7, head_dim), dtype).transpose(1, 2)
    v = padded_view((1, 17, 7, head_dim), dtype).transpose(1, 2)
    if contiguous:
        q, k, v = (t.contiguous() for t in (q, k, v))
    params = torch.backends.cuda.SDPAParams(q, k, v, None, 0.0, False, False)
    accepted = torch.backends.cuda.can_use_efficient_attention(params, True)
    try:
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, v)
        result = f"ran, NaN in output: {bool(out.isnan().any())}"
    except RuntimeError as error:
        result = f"raised RuntimeError: {str(error).splitlines()[0]}"
    print(f"D={head_dim} {dtype} {'contiguous' if contiguous else 'padded view'}: "
          f"data_ptr % 16 = {q.data_ptr() % 16}, strides {tuple(q.stride())}; "
          f"can_use_efficient_attention: {accepted}; {result}")


if __name__ == "__main__":
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for head_dim in (40, 64, 128):
        run(head_dim)
        run(head_dim, contiguous=True)
    run(40, torch.float16)
    run(40, torch.float32)
