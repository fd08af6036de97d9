"""The specification: standard attention in float64, written plainly.

``attention`` computes ``softmax(scale * q k^T + mask) v`` and the per-row log-sum-exp with
an explicit boolean mask (the causal/window band AND an optional ``attn_mask``, broadcastable
to ``(B, H, Nq, Nk)``; masked logits are set to ``-inf``, so masked keys contribute exactly
nothing) and an explicit softmax, one chunk of queries at a time so that
memory stays bounded (a 32K x 32K problem needs a few hundred MB per chunk, not 8 GB).
Rows with no allowed key give output 0 and lse ``-inf``. It runs on the inputs' device.

``evaluate`` returns the same output and lse together with the per-row and per-element
magnitudes that the tolerance model needs (``Σ_j p_ij |v_jd|``, the largest allowed
``|logit|`` and the largest ``scale * Σ_d |q_d k_d|``), computed in the same pass.

``gradients`` returns the analytic float64 gradients of q, k and v for upstream gradients
of out (and optionally of lse), chunked the same way, with the magnitudes the gradient
tolerance model needs (:class:`Gradients`).

Never change this module to make a kernel pass: when a kernel and this disagree, the
kernel is suspect.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from flashcheck.cases import masks

#: Upper bound on the elements of one chunk's score matrix (float64: 8 bytes each).
CHUNK_ELEMENTS = 1 << 25


class Reference(NamedTuple):
    out: torch.Tensor  # (B, Nq, H, D) float64
    lse: torch.Tensor  # (B, H, Nq) float64, natural log, -inf on empty rows
    abs_pv: torch.Tensor  # (B, Nq, H, D): sum_j p_ij |v_jd|
    max_abs_logit: torch.Tensor  # (B, H, Nq): max over allowed j of |scale q_i.k_j|
    max_abs_dot: torch.Tensor  # (B, H, Nq): max over allowed j of |scale| sum_d |q_id k_jd|
    keys: torch.Tensor  # (B, H, Nq) int64: allowed keys per row


def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None):
    """Float64 standard attention with the protocol's conventions; returns ``(out, lse)``.

    q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)`` with ``H % Hkv == 0``; ``attn_mask`` a
    boolean tensor broadcastable to ``(B, H, Nq, Nk)`` (True = attend) or None, ANDed with
    the band; out ``(B, Nq, H, D)`` and lse ``(B, H, Nq)``, both float64. Inputs are taken
    to be finite (a non-finite value of a masked key still reaches ``P·V`` as ``0·inf``).
    """
    result = evaluate(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask)
    return result.out, result.lse


def evaluate(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None) -> Reference:
    """Like :func:`attention`, also returning the magnitudes the tolerance model uses."""
    problem = masks.dense_problem(q, k, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask)
    batch, seqlen_q, heads, scale = problem.batch, problem.seqlen_q, problem.heads, problem.scale
    q, k, v = (_as_bhnd(t, problem.group if t is not q else 1) for t in (q, k, v))

    out = torch.zeros(batch, heads, seqlen_q, problem.head_dim, dtype=torch.float64, device=q.device)
    abs_pv = torch.zeros_like(out)
    lse = torch.full((batch, heads, seqlen_q), -math.inf, dtype=torch.float64, device=q.device)
    max_abs_logit = torch.zeros_like(lse)
    max_abs_dot = torch.zeros_like(lse)
    keys = torch.zeros(batch, heads, seqlen_q, dtype=torch.int64, device=q.device)
    for rows, allowed in problem.query_chunks(CHUNK_ELEMENTS):  # allowed: (B|1, H|1, rows, Nk)
        keys[:, :, rows] = allowed.sum(dim=-1)
        qc = q[:, :, rows]
        logits, probs, row_max, total = _softmax(qc, k, allowed, scale)
        out[:, :, rows] = probs @ v
        abs_pv[:, :, rows] = probs @ v.abs()
        lse[:, :, rows] = (row_max + torch.log(total)).squeeze(-1)
        abs_dot = abs(scale) * (qc.abs() @ k.abs().transpose(-1, -2))
        max_abs_dot[:, :, rows] = abs_dot.masked_fill(~allowed, 0.0).amax(dim=-1)
        max_abs_logit[:, :, rows] = logits.abs().masked_fill(~allowed, 0.0).amax(dim=-1)
    return Reference(out.transpose(1, 2), lse, abs_pv.transpose(1, 2), max_abs_logit, max_abs_dot, keys)


def _softmax(qc, k, allowed, scale):
    """Masked logits, probabilities, row maxima and softmax denominators of one chunk."""
    logits = scale * (qc @ k.transpose(-1, -2))
    logits = logits.masked_fill(~allowed, -math.inf)
    row_max = logits.amax(dim=-1, keepdim=True)
    empty = row_max == -math.inf
    weights = torch.exp(logits - row_max.masked_fill(empty, 0.0))
    total = weights.sum(dim=-1, keepdim=True)
    return logits, weights / total.masked_fill(empty, 1.0), row_max, total


class Gradients(NamedTuple):
    """Float64 gradients of q, k, v and the magnitudes the gradient tolerance model uses.

    Shapes: dq, abs_dq, abs_dq_terms and p_abs_k are ``(B, Nq, H, D)`` like q; dk, dv,
    abs_dk, abs_dk_terms, abs_dv and pt_abs_q are ``(B, Nk, Hkv, D)`` like k and v, each
    summed over the query heads of its GQA group; abs_dp_max and delta are ``(B, H, Nq)``.
    With ``P`` the attention probabilities (0 off the band and on rows without keys),
    ``dP = dO·Vᵀ``, ``delta_i = Σ_d dO_id O_id``, ``g`` the upstream gradient of lse (0 when
    not given) and ``dS = P ∘ (dP - delta + g)``:

    - ``dq = scale·dS·K``, ``dk = scale·dSᵀ·Q``, ``dv = Pᵀ·dO``;
    - ``abs_dq = |scale|·Σ_j |dS_ij| |K_jd|`` and ``abs_dk = |scale|·Σ_i |dS_ij| |Q_id|``:
      the magnitudes of the sums that make dq and dk (so ``|dq| <= abs_dq``);
    - ``abs_dv = Σ_i P_ij |dO_id|`` (``|dv| <= abs_dv``);
    - ``p_abs_k = Σ_j P_ij |K_jd|`` and ``pt_abs_q = Σ_i P_ij |Q_id|``: what an error of size
      e in a row's ``dP - delta`` moves dq and dk by (times ``|scale|·e``);
    - ``abs_dq_terms = |scale|·Σ_j P_ij (|dP_ij| + |delta_i| + |g_i|) |K_jd|`` and
      ``abs_dk_terms = |scale|·Σ_i P_ij (|dP_ij| + |delta_i| + |g_i|) |Q_id|``: bounds of
      abs_dq and abs_dk that do not depend on cancellation inside ``dP - delta + g`` (what a
      relative error of P costs); without grad_lse the ``|g_i|`` term is 0;
    - ``abs_dp_max``: per row, the largest ``Σ_d |dO_id| |V_jd|`` over allowed keys j (the
      magnitude of dP's dot products); ``delta``: per row, ``Σ_d dO_id O_id`` (without g).

    Rows with no allowed key are 0 in every field.
    """

    dq: torch.Tensor
    dk: torch.Tensor
    dv: torch.Tensor
    abs_dq: torch.Tensor  # |scale| Σ_j |dS_ij| |K_jd|, like dq
    abs_dk: torch.Tensor  # |scale| Σ_(h,i) |dS_ij| |Q_id|, like dk
    abs_dv: torch.Tensor  # Σ_(h,i) P_ij |dO_id|, like dv
    p_abs_k: torch.Tensor  # Σ_j P_ij |K_jd|, like dq
    pt_abs_q: torch.Tensor  # Σ_(h,i) P_ij |Q_id|, like dk
    abs_dp_max: torch.Tensor  # (B, H, Nq): max over allowed j of Σ_d |dO_id| |V_jd|
    abs_dq_terms: torch.Tensor  # |scale| Σ_j P_ij (|dP_ij| + |delta_i| + |g_i|) |K_jd|, like dq
    abs_dk_terms: torch.Tensor  # |scale| Σ_(h,i) P_ij (|dP_ij| + |delta_i| + |g_i|) |Q_id|, like dk
    delta: torch.Tensor  # (B, H, Nq): Σ_d dO_id O_id


def gradients(q, k, v, grad_out, *, causal=False, window=(-1, -1), softmax_scale=None, grad_lse=None,
              attn_mask=None) -> Gradients:
    """Analytic float64 gradients of ``Σ out·grad_out + Σ lse·grad_lse`` w.r.t. q, k, v.

    q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``, grad_out like q and grad_lse
    ``(B, H, Nq)`` or None (= 0), in any dtype (widened exactly to float64); mask arguments
    (``attn_mask`` included) as in :func:`attention`. Returns :class:`Gradients`, all float64 on q's device: dk and
    dv hold the sums over each GQA group's query heads.

    ``P = softmax(scale·Q·Kᵀ + mask)``, ``dV = Pᵀ·dO``, ``dP = dO·Vᵀ``, ``delta_i = Σ_d dO_id
    O_id`` (= ``Σ_j P_ij dP_ij``), ``dS = P ∘ (dP - delta + grad_lse)`` (``∂lse_i/∂s_ij =
    P_ij``), ``dQ = scale·dS·K``, ``dK = scale·dSᵀ·Q``; chunked over queries like
    :func:`evaluate`, dK and dV accumulated over the chunks in float64 (so they, unlike the
    per-row fields, may differ in the last bits between chunk sizes). Rows with no allowed
    key contribute nothing: their dQ is exactly 0 and their grad_out and grad_lse are
    ignored, even when not finite (on such a row out is the constant 0 and lse the constant
    ``-inf``).
    """
    problem = masks.dense_problem(q, k, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask)
    scale = problem.scale
    q, do = _as_bhnd(q, 1), _as_bhnd(grad_out, 1)
    k, v = _as_bhnd(k, problem.group), _as_bhnd(v, problem.group)
    dlse = None if grad_lse is None else grad_lse.to(torch.float64).to(q.device)

    per_query = {name: torch.zeros_like(q) for name in ("dq", "abs_dq", "p_abs_k", "abs_dq_terms")}
    per_key = {
        name: torch.zeros_like(k) for name in ("dk", "dv", "abs_dk", "abs_dv", "pt_abs_q", "abs_dk_terms")
    }
    abs_dp_max = torch.zeros(problem.batch, problem.heads, problem.seqlen_q, dtype=torch.float64, device=q.device)
    deltas = torch.zeros_like(abs_dp_max)
    for rows, allowed in problem.query_chunks(CHUNK_ELEMENTS):  # allowed: (B|1, H|1, rows, Nk)
        # A row without keys has P = 0, but 0 * inf is NaN: zero its upstream gradients
        # rather than multiply them by 0, so that nothing it carries can leak into dK, dV.
        empty = ~allowed.any(dim=-1, keepdim=True)  # (B|1, H|1, rows, 1)
        qc, doc = q[:, :, rows], do[:, :, rows].masked_fill(empty, 0.0)
        _, probs, _, _ = _softmax(qc, k, allowed, scale)
        dp = doc @ v.transpose(-1, -2)
        delta = (doc * (probs @ v)).sum(dim=-1, keepdim=True)
        upstream = dp - delta
        magnitude = dp.abs() + delta.abs()  # the terms of upstream, before any cancellation
        if dlse is not None:
            dlse_c = dlse[:, :, rows, None].masked_fill(empty, 0.0)
            upstream = upstream + dlse_c
            magnitude = magnitude + dlse_c.abs()
        ds = probs * upstream
        terms = probs * magnitude
        probs_t, ds_t = probs.transpose(-1, -2), ds.transpose(-1, -2)
        per_query["dq"][:, :, rows] = scale * (ds @ k)
        per_query["abs_dq"][:, :, rows] = abs(scale) * (ds.abs() @ k.abs())
        per_query["p_abs_k"][:, :, rows] = probs @ k.abs()
        per_query["abs_dq_terms"][:, :, rows] = abs(scale) * (terms @ k.abs())
        per_key["dk"] += scale * (ds_t @ qc)
        per_key["abs_dk"] += abs(scale) * (ds_t.abs() @ qc.abs())
        per_key["abs_dk_terms"] += abs(scale) * (terms.transpose(-1, -2) @ qc.abs())
        per_key["dv"] += probs_t @ doc
        per_key["abs_dv"] += probs_t @ doc.abs()
        per_key["pt_abs_q"] += probs_t @ qc.abs()
        abs_dp = (doc.abs() @ v.abs().transpose(-1, -2)).masked_fill(~allowed, 0.0)
        abs_dp_max[:, :, rows] = abs_dp.amax(dim=-1)
        deltas[:, :, rows] = delta.squeeze(-1)
    to_layout = {name: t.transpose(1, 2) for name, t in per_query.items()}
    for name, tensor in per_key.items():  # (B, H, Nk, D) -> summed per group -> (B, Nk, Hkv, D)
        to_layout[name] = tensor.unflatten(1, (problem.kv_heads, problem.group)).sum(dim=2).transpose(1, 2)
    return Gradients(abs_dp_max=abs_dp_max, delta=deltas, **to_layout)


def _as_bhnd(tensor: torch.Tensor, repeat: int) -> torch.Tensor:
    """(B, N, Hx, D) in any dtype -> float64 (B, Hx*repeat, N, D), KV heads repeated per group."""
    tensor = tensor.to(torch.float64).transpose(1, 2)
    return tensor.repeat_interleave(repeat, dim=1) if repeat > 1 else tensor
