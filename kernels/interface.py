"""The public attention function of the project kernel."""

from __future__ import annotations

import math

import torch

from flashcheck.kernels import backward, config, forward, validation

FEATURES = frozenset({
    "causal", "window", "gqa", "varlen", "mask", "lse", "lse_grad", "backward", "out", "float16", "bfloat16",
    "float32",
})


def flash_attention(
    q, k, v, *,
    causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None,
    cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
    out=None, lse_out=None,
):
    """Exact attention computed tile by tile; returns ``(out, lse)``.

    Dense layout: q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``, any strides, on a CUDA
    device (or the CPU under ``TRITON_INTERPRET=1``). ``H`` must be a multiple of ``Hkv``:
    query head ``h`` reads KV head ``h // (H // Hkv)`` (GQA; ``Hkv = 1`` is MQA). ``D`` is
    any size from 1 to 256. dtype float16, bfloat16 or float32, the same for all three.
    Returns out ``(B, Nq, H, D)`` in q's dtype and lse ``(B, H, Nq)`` float32, the natural
    log of each row's softmax denominator: ``lse_i = log Σ_j exp(scale q_i·k_j)`` over the
    allowed keys.

    Packed variable length (``cu_seqlens_q``, ``cu_seqlens_k``, ``max_seqlen_q`` and
    ``max_seqlen_k``, all four or none): q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)``, any
    strides; ``cu_seqlens_*`` int32 ``(S+1,)`` on q's device, cumulative offsets starting at
    0 and ending at ``Tq`` (``Tk``), so that sequence ``s`` is tokens
    ``cu_seqlens_q[s]:cu_seqlens_q[s+1]`` of q and ``cu_seqlens_k[s]:cu_seqlens_k[s+1]`` of k
    and v; ``max_seqlen_*`` ints at least every sequence's length. Returns out ``(Tq, H, D)``
    and lse ``(H, Tq)``. Each sequence is attended on its own, exactly as a dense call on
    its tokens would (GQA included): nothing is read or written across sequences. Sequences
    may be empty on either side; the queries of a sequence without keys get output 0 and
    lse ``-inf``. The offsets are read to the host once to validate them (one device ->
    host copy on a GPU).

    Masking is aligned bottom-right, per sequence when packed: with ``offset = Nk - Nq``
    (the sequence's own lengths), query ``i`` may attend key ``j`` iff
    ``i + offset - left <= j <= i + offset + right`` for ``window=(left, right)``, ``-1``
    meaning unbounded. ``causal=True`` sets ``right = 0``; it may be combined with a
    window whose right bound is -1 or 0. For ``Nq = 2, Nk = 4`` causal lets query 0 see keys
    0..2 and query 1 keys 0..3; for ``Nq = 4, Nk = 2`` queries 0 and 1 see nothing. Key
    blocks wholly outside the band are skipped, not computed and masked.

    ``attn_mask`` (dense calls only): a bool tensor on q's device broadcastable to
    ``(B, H, Nq, Nk)`` (dims of size 1 or absent on the left broadcast, without being
    materialised), True = may attend, ANDed with causal/window. Masked entries are excluded
    before the softmax's maximum, so huge (finite) logits there change nothing. Hidden keys
    and values still enter the products, with probability 0: like every input they must be
    finite (NaN there gives NaN, as in standard attention).

    A row with no allowed key (by the band, the mask or an empty sequence) returns output 0
    and lse ``-inf``, and gets zero gradient.

    ``softmax_scale`` defaults to ``1/sqrt(D)``. float32 inputs are multiplied in full
    float32 precision, never TF32. ``out`` and ``lse_out``, when given, are written in place
    (any strides, shaped as the returned out and lse) and returned.

    Differentiable in q, k and v through Triton backward kernels that recompute the
    probabilities from lse (with the same band and mask; bitwise deterministic: no atomic sums;
    GQA gradients of K and V are summed over each group's query heads inside one program).
    lse is differentiable too: ``∂lse_i/∂s_ij = P_ij``. Keys no query may attend get
    exactly zero dK and dV.

    Every argument is checked before launch and before out/lse_out are touched; bad input
    raises TypeError or ValueError naming the argument.
    """
    return attend(
        q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask,
        cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k, out=out, lse_out=lse_out, launches=LAUNCHES,
    )


flash_attention.flashcheck_features = FEATURES

#: The (forward, backward) launchers behind :func:`flash_attention`.
LAUNCHES = (forward.launch, backward.launch)


def attend(q, k, v, *, causal, window, softmax_scale, attn_mask, cu_seqlens_q, cu_seqlens_k,
           max_seqlen_q, max_seqlen_k, out, lse_out, launches):
    """:func:`flash_attention` with its launchers as an argument (planted-bug kernels reuse
    the validation and autograd plumbing through this)."""
    left, right = validation.check_inputs(
        q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask,
        cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k, out=out, lse_out=lse_out,
    )
    scale = float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    # What the launchers need beyond q, k, v: the mask, or the packed sequences.
    structure = dict(mask=attn_mask)
    if cu_seqlens_q is not None:
        structure.update(cu_seqlens_q=cu_seqlens_q.contiguous(), cu_seqlens_k=cu_seqlens_k.contiguous(),
                         max_seqlen_q=int(max_seqlen_q), max_seqlen_k=int(max_seqlen_k))
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _FlashAttention.apply(q, k, v, scale, left, right, structure, out, lse_out, launches)
    return _forward(q, k, v, scale, left, right, structure, out, lse_out, launch=launches[0])


def _lse_shape(q, structure):
    """``(H, Tq)`` for packed sequences, ``(B, H, Nq)`` otherwise."""
    if structure.get("cu_seqlens_q") is not None:
        return (q.shape[1], q.shape[0])
    return (q.shape[0], q.shape[2], q.shape[1])


def _forward(q, k, v, scale, left, right, structure, out, lse_out, launch=forward.launch):
    """Allocate what was not given and launch; ``launch`` is replaceable for mutants."""
    if out is None:
        out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if lse_out is None:
        lse_out = torch.empty(_lse_shape(q, structure), dtype=torch.float32, device=q.device)
    launch(
        q, k, v, out, lse_out,
        softmax_scale=scale, left=left, right=right,
        config=config.forward_config(q.dtype, q.shape[-1], banded=left != -1 or right != -1, device=q.device),
        emulate_bf16=config.INTERPRETER and q.dtype == torch.bfloat16,
        **structure,
    )
    return out, lse_out


class _FlashAttention(torch.autograd.Function):
    """Forward through the Triton kernel; backward through the Triton backward kernels,
    recomputing probabilities from the saved lse. Both outputs are differentiable: the
    gradient of ``lse_i`` with respect to logit ``s_ij`` is ``P_ij``."""

    @staticmethod
    def forward(ctx, q, k, v, scale, left, right, structure, out, lse_out, launches):
        # Buffers written in place are returned as themselves, not as views of them.
        ctx.mark_dirty(*(t for t in (out, lse_out) if t is not None))
        ctx.set_materialize_grads(False)
        if q.dtype == torch.float32:
            out, lse = _forward(q, k, v, scale, left, right, structure, out, lse_out, launch=launches[0])
            unrounded = out
        else:
            # The backward's delta_i = dO_i·O_i must come from the output before it is rounded
            # to 16 bits: each rounding error of O_i, times dO_i, lands on every dS_ij of the
            # row, which the exact dS cancels to near zero where one key dominates (dQ = scale·
            # dS·K is then off by scale·‖dO_i‖·ulp(O_i)·‖K‖, past float16's range for large
            # logits and upstream gradients). So the forward writes float32 and rounds here,
            # bitwise as the kernel's own store would.
            unrounded, lse = _forward(q, k, v, scale, left, right, structure,
                                      torch.empty(q.shape, dtype=torch.float32, device=q.device), lse_out,
                                      launch=launches[0])
            out = unrounded.to(q.dtype) if out is None else out.copy_(unrounded)
        ctx.save_for_backward(q, k, v, unrounded, lse)
        ctx.band = (scale, left, right)
        ctx.structure = structure  # the mask and offsets are inputs that need no gradient
        ctx.backward_launch = launches[1]
        return out, lse

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        q, k, v, out, lse = ctx.saved_tensors
        scale, left, right = ctx.band
        if grad_out is None:
            grad_out = torch.zeros(q.shape, dtype=q.dtype, device=q.device)
        if grad_lse is not None:
            grad_lse = grad_lse.to(torch.float32).contiguous()
        dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
        dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
        delta = torch.empty(lse.shape, dtype=torch.float32, device=q.device)
        ctx.backward_launch(
            q, k, v, out, lse.contiguous(), grad_out, grad_lse, dq, dk, dv, delta,
            softmax_scale=scale, left=left, right=right,
            config=config.backward_config(q.dtype, q.shape[-1], banded=left != -1 or right != -1,
                                          device=q.device),
            emulate_bf16=config.INTERPRETER and q.dtype == torch.bfloat16,
            **ctx.structure,
        )
        return dq, dk, dv, None, None, None, None, None, None, None
