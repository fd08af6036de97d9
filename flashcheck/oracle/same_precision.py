"""Flashcheck's own same-precision standard attention: the "plain implementation" of the
tolerance model's ``2 ×`` rule (:data:`flashcheck.oracle.tolerance.SAME_PRECISION_FACTOR`).

The tolerance model cross-checks itself against the error this makes (flash-attention's
tests accept a kernel whose error is at most a few times that of a plain implementation in
the same precision). It is what a careful mixed-precision implementation does without
tiling: scores from the input dtype accumulated in float32 (float32 inputs: float32 all
the way), softmax in float32, probabilities rounded to the input dtype before the product
with V (as flash kernels do before their second matrix product), that product accumulated
in float32, the output rounded to the input dtype. Chunked over queries like the reference.
Rows with no allowed key give output 0 and lse ``-inf``; lse is
log-sum-exp of the float32 scores.
"""

from __future__ import annotations

import math

import torch

from flashcheck.cases import masks

CHUNK_ELEMENTS = 1 << 25


def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None):
    """Return ``(out, lse)``: out ``(B, Nq, H, D)`` in q's dtype, lse ``(B, H, Nq)`` float32.
    ``attn_mask``: boolean, broadcastable to ``(B, H, Nq, Nk)``, ANDed with the band."""
    problem = masks.dense_problem(q, k, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask)
    batch, seqlen_q, heads = problem.batch, problem.seqlen_q, problem.heads
    qf = q.float().transpose(1, 2)
    kf = k.float().transpose(1, 2).repeat_interleave(problem.group, dim=1)
    vf = v.float().transpose(1, 2).repeat_interleave(problem.group, dim=1)
    out = torch.zeros(batch, heads, seqlen_q, problem.head_dim, dtype=q.dtype, device=q.device)
    lse = torch.full((batch, heads, seqlen_q), -math.inf, dtype=torch.float32, device=q.device)
    for rows, allowed in problem.query_chunks(CHUNK_ELEMENTS):
        probs, row_max, total = _probabilities(qf[:, :, rows], kf, allowed, problem.scale)
        lse[:, :, rows] = (row_max + torch.log(total)).squeeze(-1)
        probs = probs.to(q.dtype).float()
        out[:, :, rows] = _matmul_fp32(probs, vf).to(q.dtype)
    return out.transpose(1, 2), lse


def gradients(q, k, v, grad_out, *, causal=False, window=(-1, -1), softmax_scale=None, grad_lse=None,
              attn_mask=None):
    """The plain same-precision backward: ``(dq, dk, dv)`` in the input dtype.

    What a careful mixed-precision implementation computes without tiling: float32
    probabilities as in :func:`attention`, ``delta`` from the plain output rounded to the
    input dtype, P rounded to the input dtype for ``dV = Pᵀ·dO``, ``dS`` rounded to it for
    ``dQ = scale·dS·K`` and ``dK = scale·dSᵀ·Q``, float32 accumulation (GQA group sums
    included), results rounded to the input dtype. Rows with no allowed key give zero.

    q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``; grad_out like q, rounded to q's dtype
    first (a kernel receives dO in the output's dtype); grad_lse ``(B, H, Nq)`` or None, used
    in float32 (it shifts ``delta``: ``dS = P ∘ (dP - (delta - grad_lse))``). Rows with no
    allowed key contribute nothing: their dq is exactly 0 and their grad_out and grad_lse are
    ignored, even when not finite. Float32 products never run in TF32. ``attn_mask`` as in
    :func:`attention`.
    """
    problem = masks.dense_problem(q, k, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask)
    scale, kv_heads, group = problem.scale, problem.kv_heads, problem.group
    out, _ = attention(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=problem.attn_mask)
    # Rows without keys have P = 0, but 0 * inf is NaN: zero their upstream gradients
    # instead, so that nothing they carry reaches dK and dV.
    empty = masks.count_keys(problem.seqlen_q, problem.seqlen_k, problem.left, problem.right,
                             attn_mask=problem.attn_mask, device=q.device) == 0
    qf = q.float().transpose(1, 2)
    do = grad_out.to(q.dtype).float().transpose(1, 2).masked_fill(empty[..., None], 0.0)
    kf = k.float().transpose(1, 2).repeat_interleave(group, dim=1)
    vf = v.float().transpose(1, 2).repeat_interleave(group, dim=1)
    delta = (do * out.float().transpose(1, 2)).sum(dim=-1)
    if grad_lse is not None:
        delta = delta - grad_lse.float().to(q.device).masked_fill(empty, 0.0)
    dq = torch.zeros_like(qf)
    dk, dv = torch.zeros_like(kf), torch.zeros_like(vf)
    for rows, allowed in problem.query_chunks(CHUNK_ELEMENTS):
        probs, _, _ = _probabilities(qf[:, :, rows], kf, allowed, scale)
        dp = _matmul_fp32(do[:, :, rows], vf.transpose(-1, -2))
        ds = (probs * (dp - delta[:, :, rows, None])).to(q.dtype).float()
        dv += _matmul_fp32(probs.to(q.dtype).float().transpose(-1, -2), do[:, :, rows])
        dq[:, :, rows] = _matmul_fp32(ds, kf) * scale
        dk += _matmul_fp32(ds.transpose(-1, -2), qf[:, :, rows]) * scale
    dk = dk.unflatten(1, (kv_heads, group)).sum(dim=2)
    dv = dv.unflatten(1, (kv_heads, group)).sum(dim=2)
    return tuple(t.transpose(1, 2).to(q.dtype) for t in (dq, dk, dv))


def _probabilities(qc, kf, allowed, scale):
    """float32 softmax of one chunk: ``(probs, row_max, total)``; rows without keys give
    probabilities 0, ``row_max`` 0 and ``total`` 0."""
    # float32 matrix products must not silently drop to TF32 on a GPU.
    logits = _matmul_fp32(qc, kf.transpose(-1, -2)) * scale
    logits = logits.masked_fill(~allowed, -math.inf)
    row_max = logits.amax(dim=-1, keepdim=True)
    row_max = row_max.masked_fill(row_max == -math.inf, 0.0)
    weights = torch.exp(logits - row_max)
    total = weights.sum(dim=-1, keepdim=True)
    return weights / total.masked_fill(total == 0, 1.0), row_max, total


def _matmul_fp32(a, b):
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a @ b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
