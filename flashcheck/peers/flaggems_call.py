"""FlagGems' calls as flashcheck makes them: the protocol's arguments translated into
``flag_gems.ops``' (``scaled_dot_product_attention``, ``flash_attention_forward``,
``flash_attn_varlen_func``), in plain torch.

The ``flaggems-*`` adapters (:mod:`flashcheck.peers.flaggems`) call
these functions, and a standalone reproduction script of their failures
(:mod:`flashcheck.repro.calls`) carries this module's source, so that the script calls FlagGems
exactly as flashcheck did, without flashcheck. It imports nothing but torch and the plain-call
modules :mod:`flashcheck.peers.plain_packing`, :mod:`flashcheck.peers.sdpa_public_call` and
:mod:`flashcheck.autotune_pin` (torch and triton, which FlagGems needs anyway), whose sources
a script carries too.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0), which FlagGems takes as
FlashAttention-2 does.

The autotuners of FlagGems' SDPA (forward and backward), which time every configuration afresh for
each new key length, run pinned (:mod:`flashcheck.autotune_pin`): each compiled variant runs
one of the configurations FlagGems ships, chosen from the call, one variant in a few left to
FlagGems' own timing. Its flash forward's autotuner, which tunes once per head dim and process,
runs as FlagGems tunes it: pinned, each new variant compiled a configuration of its own, and a
campaign ran about half the cases (docs/performance.md).
"""

import torch

from flashcheck.autotune_pin import pin_autotuners
from flashcheck.peers.plain_packing import pack_dense, unpack_dense
from flashcheck.peers.sdpa_public_call import arguments

#: The autotuners pinned, as (module, names): those of FlagGems' SDPA, keyed on the key length.
SDPA_AUTOTUNERS = ("flag_gems.ops.attention", ("_attn_fwd", "_attn_bwd"))


def row_major(t):
    """``t`` with exactly the strides of a fresh contiguous tensor of its shape (a
    differentiable copy where they differ). Not ``.contiguous()``: torch calls a tensor
    contiguous whatever the strides of its size-1 dimensions, which a library comparing
    strides (``query.stride() == do.stride()``) does not."""
    expected = torch.empty(t.shape, device="meta").stride()
    return t if t.stride() == expected else t.clone(memory_format=torch.contiguous_format)


class ContiguousGradient(torch.autograd.Function):
    """The identity, whose backward hands on its gradient row-major (:func:`row_major`):
    FlagGems' SDPA backward asserts a contiguous output gradient with its inputs' strides,
    where the protocol's layout, a transposed view of torch's, would make autograd hand it a
    strided one."""

    @staticmethod
    def forward(ctx, t):
        return t.view_as(t)

    @staticmethod
    def backward(ctx, grad):
        return row_major(grad)


def sdpa(scaled_dot_product_attention, q, k, v, *, scale, causal, left, right, attn_mask=None):
    """``scaled_dot_product_attention`` in torch's layout ``(B, H, N, D)``, its ``is_causal``
    top-left aligned: only plain causal with ``Nq == Nk`` goes as ``is_causal``, every other
    band with the mask as one boolean ``attn_mask`` (as torch's own SDPA gets it:
    :func:`flashcheck.peers.sdpa_public_call.arguments`) expanded to ``(B, H, Nq, Nk)``, since
    the kernel reads it through all four strides. With gradients the inputs go in row-major
    and the output's gradient comes back so (``scaled_dot_product_attention_backward`` asserts
    contiguous inputs and gradient with equal strides). Out ``(B, Nq, H, D)``; no lse."""
    pin_autotuners(*SDPA_AUTOTUNERS)
    batch, nq, heads, nk = q.shape[0], q.shape[1], q.shape[2], k.shape[1]
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    q, k, v, mask, is_causal, _ = arguments(q, k, v, causal=causal, left=left, right=right, attn_mask=attn_mask)
    if mask is not None:
        mask = mask.expand(batch, heads, nq, nk)
    if grad:
        q, k, v = (row_major(t) for t in (q, k, v))
    out = scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=is_causal, scale=scale,
                                       enable_gqa=q.shape[1] != k.shape[1])
    if grad:
        out = ContiguousGradient.apply(out)
    return out.transpose(1, 2), None


def flash(flash_attention_forward, q, k, v, *, scale, causal, left, right):
    """``flash_attention_forward`` (aten's ``_flash_attention_forward``): out ``(B, Nq, H, D)``,
    lse ``(B, H, Nq)``. Its inputs need a contiguous last dimension ("Input tensor must have
    contiguous last dimension"), so any other goes in as a contiguous copy."""
    q, k, v = (t if t.stride(-1) == 1 or t.shape[-1] <= 1 else t.contiguous() for t in (q, k, v))
    out, lse, *_ = flash_attention_forward(q, k, v, None, None, q.shape[1], k.shape[1], 0.0, causal, False,
                                           scale=scale, window_size_left=left, window_size_right=right)
    return out, lse


def paged_keys(k, v, cu_seqlens_k, max_seqlen_k: int):
    """Packed keys ``(Tk, Hkv, D)`` as FlagGems' paged cache of one-token pages:
    ``(k_cache, v_cache, block_table, seqused_k)``, the cache ``(Tk, 1, Hkv, D)`` contiguous
    (``mha_varlan_fwd`` asserts ``k.stride() == v.stride()``), ``block_table[s, j] =
    cu_seqlens_k[s] + j`` (int32 ``(S, max(max_seqlen_k, 1))``, entries past a sequence's end
    held at a valid page) and ``seqused_k`` the key lengths."""
    total = k.shape[0]
    offsets = cu_seqlens_k.to(torch.int64)
    positions = torch.arange(max(max_seqlen_k, 1), device=k.device)
    table = (offsets[:-1, None] + positions[None, :]).clamp(max=max(total - 1, 0)).to(torch.int32)
    seqused = (offsets[1:] - offsets[:-1]).to(torch.int32)
    return (k.contiguous().reshape(total, 1, *k.shape[1:]), v.contiguous().reshape(total, 1, *v.shape[1:]),
            table, seqused)


def varlen(flash_attn_varlen_func, q, k, v, *, scale, causal, left, right, cu_seqlens_q=None, cu_seqlens_k=None,
           max_seqlen_q=None, max_seqlen_k=None):
    """``flash_attn_varlen_func`` (vLLM's interface) on one-token pages, with lse: packed out
    ``(Tq, H, D)`` and lse ``(H, Tq)``; a dense batch (no ``cu_seqlens_q``) goes in packed as one
    sequence per batch entry (a reshape) and comes back dense, out ``(B, Nq, H, D)`` and lse
    ``(B, H, Nq)``."""
    dense_batch = cu_seqlens_q is None
    if dense_batch:
        batch, nq = q.shape[0], q.shape[1]
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k = pack_dense(q, k, v)
    k_cache, v_cache, table, seqused = paged_keys(k, v, cu_seqlens_k, max_seqlen_k)
    out, lse = flash_attn_varlen_func(q, k_cache, v_cache, max_seqlen_q=max_seqlen_q, cu_seqlens_q=cu_seqlens_q,
                                      max_seqlen_k=max_seqlen_k, seqused_k=seqused, dropout_p=0.0,
                                      softmax_scale=scale, causal=causal, window_size=(left, right),
                                      block_table=table, return_softmax_lse=True)
    return unpack_dense(out, lse, batch, nq) if dense_batch else (out, lse)
