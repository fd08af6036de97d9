"""FlagGems 5.0.2: flash_attention_forward on (B, N, H, D) inputs stored contiguously against the
same values stored heads-first, and scaled_dot_product_attention with a boolean mask.

Standalone (torch and flag-gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_layouts_and_masks.py

flash_attention_forward replaces aten's _flash_attention_forward, which takes (B, N, H, D)
tensors of any strides; SDPA hands it transposed views of (B, H, N, D) storage. Each line
compares the kernel with float64 attention and says whether the call changed its inputs.
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


def heads_first(t):
    """The same values as a (B, N, H, D) view of (B, H, N, D) storage: the layout SDPA hands
    aten's _flash_attention_forward, sequence stride D."""
    return t.transpose(1, 2).contiguous().transpose(1, 2)


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name())
    # 1. flash_attention_forward on (B, N, H, D) inputs stored contiguously and stored heads-first.
    for d in (32, 64, 128):
        for heads, kv_heads in ((1, 1), (7, 7), (7, 1)):
            for nq, nk in ((1, 128), (1, 129), (64, 129), (256, 256)):
                q, k, v = (torch.randn(1, n, h, d, dtype=torch.float16, device="cuda")
                           for n, h in ((nq, heads), (nk, kv_heads), (nk, kv_heads)))
                compare(f"float16 d={d} heads {heads}:{kv_heads} {nq}x{nk} contiguous (B, N, H, D)", q, k, v, d ** -0.5)
                compare(f"float16 d={d} heads {heads}:{kv_heads} {nq}x{nk} heads-first storage", *map(heads_first, (q, k, v)),
                        d ** -0.5)
    # 2. scaled_dot_product_attention with a boolean mask (torch: True = may attend).
    q, k, v = (torch.randn(1, 1, n, 16, dtype=torch.float32, device="cuda") for n in (1, 692, 692))
    mask = torch.rand(1, 1, 1, 692, device="cuda") < 0.5
    out = ops.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=False, scale=0.25)
    as_torch, _ = reference(*(t.transpose(1, 2) for t in (q, k, v)), 0.25, mask=mask[0, 0])
    inverted, _ = reference(*(t.transpose(1, 2) for t in (q, k, v)), 0.25, mask=~mask[0, 0])
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        torch_out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.25)
    print(f"sdpa, 1 query, 692 keys, boolean mask: error against torch's meaning (True attends) "
          f"{(out.transpose(1, 2).double() - as_torch).abs().max().item():.3g}, against the inverse "
          f"{(out.transpose(1, 2).double() - inverted).abs().max().item():.3g}; torch's math backend against "
          f"torch's meaning {(torch_out.transpose(1, 2).double() - as_torch).abs().max().item():.3g}")
