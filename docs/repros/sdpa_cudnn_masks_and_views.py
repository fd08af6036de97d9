"""torch SDPA's cuDNN backend (public API) against its math backend and float64, on three kinds
of input: rows whose boolean mask allows no key, views whose storage is not 16-byte aligned,
and keys a mask hides whose logits are huge.

Standalone (torch only). Run on a CUDA GPU with cuDNN attention (sm80 or newer):

    python docs/repros/sdpa_cudnn_masks_and_views.py

torch's math backend gives 0 on a row whose mask allows no key, and a key the mask hides
cannot change any output, whatever its logits. Every line prints what cuDNN and math give.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def sdpa(backend, q, k, v, mask):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def reference(q, k, v, mask):
    """float64 attention with 0 on rows without an allowed key."""
    scores = (q.double() @ k.double().transpose(-1, -2)) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.nan_to_num(scores.softmax(dim=-1), nan=0.0)
    return weights @ v.double()


def report(title, q, k, v, mask, rows=None):
    exact = reference(q, k, v, mask)
    parts = []
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
        try:
            out = sdpa(backend, q, k, v, mask).double()
            torch.cuda.synchronize()
        except RuntimeError as error:
            parts.append(f"{name} raised {' '.join(str(error).split())[:80]}")
            continue
        picked = out if rows is None else out[..., rows, :]
        parts.append(f"{name}: NaN {int(out.isnan().sum())}, max error {(out - exact).abs().nan_to_num(float('inf')).max().item():.3g}"
                     + ("" if rows is None else f", max |out| on rows without keys {picked.abs().max().item():.3g}"))
    print(f"{title}: " + "; ".join(parts))


def padded_view(shape, dtype, before=(1, 1, 2, 3), after=(0, 1, 1, 2)):
    """A (B, H, N, D) view into a NaN-filled buffer padded on every dimension."""
    full = [n + b + a for n, b, a in zip(shape, before, after)]
    buffer = torch.full(full, float("nan"), dtype=dtype, device="cuda")
    view = buffer[tuple(slice(b, b + n) for b, n in zip(before, shape))]
    view.copy_(torch.randn(shape, dtype=dtype, device="cuda"))
    return view


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
    dtype = torch.float16
    # 1. Rows without an allowed key: causal aligned bottom-right with more queries than keys.
    for nq, nk, d in ((3, 2, 16), (256, 2, 112), (681, 2, 40)):
        q, k, v = (torch.randn(1, 2, n, d, dtype=dtype, device="cuda") for n in (nq, nk, nk))
        mask = torch.ones(nq, nk, dtype=torch.bool, device="cuda").tril(diagonal=nk - nq)
        empty = (~mask.any(dim=-1)).nonzero().flatten()
        report(f"rows without keys, {nq} queries {nk} keys d={d}, {len(empty)} empty rows", q, k, v, mask, empty)
    # 2. Views whose storage is not 16-byte aligned, and their contiguous copies.
    for d in (16, 64, 128):
        q, k, v = (padded_view((1, 2, n, d), dtype) for n in (64, 96, 96))
        mask = torch.ones(64, 96, dtype=torch.bool, device="cuda").tril(diagonal=32)
        report(f"padded views d={d}, data_ptr % 16 = {q.data_ptr() % 16}", q, k, v, mask)
        report(f"  their contiguous copies d={d}", *(t.contiguous() for t in (q, k, v)), mask)
    # 3. Keys hidden by the mask, made huge: nothing may change.
    q, k, v = (torch.randn(1, 2, 256, 40, dtype=dtype, device="cuda") for _ in range(3))
    q = q.abs()
    mask = torch.ones(256, 256, dtype=torch.bool, device="cuda").tril()
    hidden = ~mask
    for size in (1e1, 1e2, 1e3, 1e4):
        huge = k.clone()
        huge[0, :, 128:] = size  # keys 128.. are hidden from queries 0..127
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            before = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            after = F.scaled_dot_product_attention(q, huge, v, attn_mask=mask)
        changed = (before[..., :128, :] != after[..., :128, :]).sum().item()
        print(f"hidden keys set to {size:g}: cudnn changes {changed} of {before[..., :128, :].numel()} elements of "
              f"the rows they are hidden from (max change {(before - after)[..., :128, :].abs().max().item():.3g})")
