"""FlagGems' flash_attention_forward (5.0.2) on sliding windows narrower than a block, on views
whose rows are padded, and what the call leaves in its inputs; and FlagGems'
scaled_dot_product_attention with a boolean mask.

Standalone (torch and flag-gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_flash_windows_and_views.py

Each line compares the kernel with float64 attention (FlashAttention-2's window convention:
query i attends keys i - left .. i + right, aligned bottom-right).
"""

import torch
from flag_gems import ops


def reference(q, k, v, scale, left=-1, right=-1, causal=False, mask=None):
    """float64 attention of (B, N, H, D) inputs; (out (B, N, H, D), lse (B, H, N))."""
    group = q.shape[2] // k.shape[2]
    k, v = (t.double().repeat_interleave(group, dim=2) for t in (k, v))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.double(), k) * scale
    nq, nk = q.shape[1], k.shape[1]
    i = torch.arange(nq, device=q.device)[:, None] + (nk - nq)
    j = torch.arange(nk, device=q.device)[None, :]
    allowed = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
    if causal:
        right = 0
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    if mask is not None:
        allowed = allowed & mask
    scores = scores.masked_fill(~allowed, float("-inf"))
    lse = scores.logsumexp(dim=-1)
    out = torch.einsum("bhqk,bkhd->bqhd", torch.nan_to_num(scores.softmax(dim=-1), nan=0.0), v)
    return out, lse


def flash(q, k, v, scale, causal, left, right):
    out, lse, *_ = ops.flash_attention_forward(q, k, v, None, None, q.shape[1], k.shape[1], 0.0, causal, False,
                                               scale=scale, window_size_left=left, window_size_right=right)
    return out, lse


def compare(title, q, k, v, scale, causal=False, left=-1, right=-1):
    saved = [t.clone() for t in (q, k, v)]
    out, lse = flash(q, k, v, scale, causal, left, right)
    torch.cuda.synchronize()
    exact, exact_lse = reference(q, k, v, scale, left, right, causal)
    error = (out.double() - exact).abs().nan_to_num(float("inf")).max().item()
    inf_lse = int((lse.isinf() & exact_lse.isfinite()).sum())
    changed = [name for name, t, s in zip("qkv", (q, k, v), saved)
               if not bool(((t == s) | (t.isnan() & s.isnan())).all())]
    print(f"{title}: out max error {error:.3g}, NaN {int(out.isnan().sum())}, lse +-inf where float64 is finite "
          f"{inf_lse}, inputs changed by the call: {changed or 'none'}")


def padded(t, pad=5):
    """The same values as a view whose rows are ``pad`` elements longer (NaN in the padding)."""
    buffer = torch.full((*t.shape[:-1], t.shape[-1] + pad), float("nan"), dtype=t.dtype, device=t.device)
    view = buffer[..., 3:3 + t.shape[-1]]
    view.copy_(t)
    return view


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for dtype in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(1, 129, h, 32, dtype=dtype, device="cuda") for h in (7, 1, 1))
        for left in (-1, 0, 1, 4, 64):
            compare(f"{dtype} 129x129 d=32 GQA 7:1 causal, window left {left}", q, k, v, 32 ** -0.5, causal=True,
                    left=left, right=0)
        compare(f"{dtype} no window, contiguous", q, k, v, 32 ** -0.5)
        compare(f"{dtype} no window, k and v as padded views", q, padded(k), padded(v), 32 ** -0.5)
    q, k, v = (torch.randn(1, n, h, 32, dtype=torch.bfloat16, device="cuda") for n, h in ((2, 7), (255, 1), (255, 1)))
    compare("bfloat16 2 queries 255 keys d=32 scale 3.07", q, k, v, 3.074249)
    # scaled_dot_product_attention with a boolean mask, expanded (stride 0) and contiguous.
    q, k, v = (torch.randn(1, 1, n, 16, dtype=torch.float32, device="cuda") for n in (1, 692, 692))
    mask = torch.rand(1, 1, 1, 692, device="cuda") < 0.5
    for name, m in (("expanded", mask.expand(1, 1, 1, 692)), ("contiguous", mask.contiguous())):
        out = ops.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.0, is_causal=False, scale=0.25)
        exact, _ = reference(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.25, mask=mask[0, 0])
        print(f"sdpa float32 1 query 692 keys, random boolean mask ({name}): out max error "
              f"{(out.transpose(1, 2).double() - exact).abs().max().item():.3g}")
