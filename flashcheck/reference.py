"""The specification: standard attention in float64, written plainly.

``attention`` computes ``softmax(scale * q k^T + mask) v`` and the per-row log-sum-exp with
an explicit band mask and an explicit softmax, one chunk of queries at a time so that
memory stays bounded (a 32K x 32K problem needs a few hundred MB per chunk, not 8 GB).
Rows with no allowed key give output 0 and lse ``-inf``. It runs on the inputs' device.

``evaluate`` returns the same output and lse together with the per-row and per-element
magnitudes that the tolerance model needs (``Σ_j p_ij |v_jd|``, the largest allowed
``|logit|`` and the largest ``scale * Σ_d |q_d k_d|``), computed in the same pass.

Never change this module to make a kernel pass: when a kernel and this disagree, the
kernel is suspect.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from flashcheck import masks

#: Upper bound on the elements of one chunk's score matrix (float64: 8 bytes each).
CHUNK_ELEMENTS = 1 << 25


class Reference(NamedTuple):
    out: torch.Tensor  # (B, Nq, H, D) float64
    lse: torch.Tensor  # (B, H, Nq) float64, natural log, -inf on empty rows
    abs_pv: torch.Tensor  # (B, Nq, H, D): sum_j p_ij |v_jd|
    max_abs_logit: torch.Tensor  # (B, H, Nq): max over allowed j of |scale q_i.k_j|
    max_abs_dot: torch.Tensor  # (B, H, Nq): max over allowed j of |scale| sum_d |q_id k_jd|
    keys: torch.Tensor  # (Nq,) int64: allowed keys per row


def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None):
    """Float64 standard attention with the protocol's conventions; returns ``(out, lse)``.

    q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)`` with ``H % Hkv == 0``; out
    ``(B, Nq, H, D)`` and lse ``(B, H, Nq)``, both float64.
    """
    result = evaluate(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale)
    return result.out, result.lse


def evaluate(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None) -> Reference:
    """Like :func:`attention`, also returning the magnitudes the tolerance model uses."""
    batch, seqlen_q, heads, head_dim = q.shape
    seqlen_k, kv_heads = k.shape[1], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    left, right = masks.effective_window(causal, window)
    q, k, v = (_as_bhnd(t, heads // kv_heads if t is not q else 1) for t in (q, k, v))

    out = torch.zeros(batch, heads, seqlen_q, head_dim, dtype=torch.float64, device=q.device)
    abs_pv = torch.zeros_like(out)
    lse = torch.full((batch, heads, seqlen_q), -math.inf, dtype=torch.float64, device=q.device)
    max_abs_logit = torch.zeros_like(lse)
    max_abs_dot = torch.zeros_like(lse)
    chunks = masks.query_chunks(
        seqlen_q, seqlen_k, left, right,
        elements_per_row=batch * heads * seqlen_k, budget=CHUNK_ELEMENTS, device=q.device,
    )
    for rows, allowed in chunks:
        qc = q[:, :, rows]
        logits, probs, row_max, total = _softmax(qc, k, allowed, scale)
        out[:, :, rows] = probs @ v
        abs_pv[:, :, rows] = probs @ v.abs()
        lse[:, :, rows] = (row_max + torch.log(total)).squeeze(-1)
        abs_dot = abs(scale) * (qc.abs() @ k.abs().transpose(-1, -2))
        max_abs_dot[:, :, rows] = abs_dot.masked_fill(~allowed, 0.0).amax(dim=-1)
        max_abs_logit[:, :, rows] = logits.abs().masked_fill(~allowed, 0.0).amax(dim=-1)
    keys = masks.keys_per_row(seqlen_q, seqlen_k, left, right)
    return Reference(
        out.transpose(1, 2), lse, abs_pv.transpose(1, 2), max_abs_logit, max_abs_dot, keys.to(q.device)
    )


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
    """Float64 gradients and the magnitudes the gradient tolerance model uses.

    dq ``(B, Nq, H, D)``; dk, dv ``(B, Nk, Hkv, D)``, summed over each GQA group's query
    heads; ``dS = P ∘ (dO·Vᵀ - delta + dlse)``.
    """

    dq: torch.Tensor
    dk: torch.Tensor
    dv: torch.Tensor
    abs_dq: torch.Tensor  # scale Σ_j |dS_ij| |K_jd|, like dq
    abs_dk: torch.Tensor  # scale Σ_(h,i) |dS_ij| |Q_id|, like dk
    abs_dv: torch.Tensor  # Σ_(h,i) P_ij |dO_id|, like dv
    p_abs_k: torch.Tensor  # Σ_j P_ij |K_jd|, like dq
    pt_abs_q: torch.Tensor  # Σ_(h,i) P_ij |Q_id|, like dk
    abs_dp_max: torch.Tensor  # (B, H, Nq): max over allowed j of Σ_d |dO_id| |V_jd|


def gradients(q, k, v, grad_out, *, causal=False, window=(-1, -1), softmax_scale=None, grad_lse=None) -> Gradients:
    """Analytic float64 gradients of ``Σ out·grad_out + Σ lse·grad_lse`` w.r.t. q, k, v.

    ``dV = Pᵀ·dO``, ``dP = dO·Vᵀ``, ``delta_i = Σ_d dO_id O_id``, ``dS = P ∘ (dP - delta +
    grad_lse)`` (``∂lse_i/∂s_ij = P_ij``), ``dQ = scale·dS·K``, ``dK = scale·dSᵀ·Q``; chunked
    over queries like :func:`evaluate`. Rows with no allowed key contribute nothing (their P
    is 0): their dQ is exactly 0 and their ``grad_lse`` is ignored.
    """
    batch, seqlen_q, heads, head_dim = q.shape
    seqlen_k, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    left, right = masks.effective_window(causal, window)
    q, do = _as_bhnd(q, 1), _as_bhnd(grad_out, 1)
    k, v = _as_bhnd(k, group), _as_bhnd(v, group)
    dlse = None if grad_lse is None else grad_lse.to(torch.float64).to(q.device)

    per_query = {name: torch.zeros_like(q) for name in ("dq", "abs_dq", "p_abs_k")}
    per_key = {name: torch.zeros_like(k) for name in ("dk", "dv", "abs_dk", "abs_dv", "pt_abs_q")}
    abs_dp_max = torch.zeros(batch, heads, seqlen_q, dtype=torch.float64, device=q.device)
    chunks = masks.query_chunks(
        seqlen_q, seqlen_k, left, right,
        elements_per_row=batch * heads * seqlen_k, budget=CHUNK_ELEMENTS, device=q.device,
    )
    for rows, allowed in chunks:
        qc, doc = q[:, :, rows], do[:, :, rows]
        _, probs, _, _ = _softmax(qc, k, allowed, scale)
        dp = doc @ v.transpose(-1, -2)
        delta = (doc * (probs @ v)).sum(dim=-1, keepdim=True)
        upstream = dp - delta
        if dlse is not None:
            upstream = upstream + dlse[:, :, rows, None]
        ds = probs * upstream
        probs_t, ds_t = probs.transpose(-1, -2), ds.transpose(-1, -2)
        per_query["dq"][:, :, rows] = scale * (ds @ k)
        per_query["abs_dq"][:, :, rows] = abs(scale) * (ds.abs() @ k.abs())
        per_query["p_abs_k"][:, :, rows] = probs @ k.abs()
        per_key["dk"] += scale * (ds_t @ qc)
        per_key["abs_dk"] += abs(scale) * (ds_t.abs() @ qc.abs())
        per_key["dv"] += probs_t @ doc
        per_key["abs_dv"] += probs_t @ doc.abs()
        per_key["pt_abs_q"] += probs_t @ qc.abs()
        abs_dp = (doc.abs() @ v.abs().transpose(-1, -2)).masked_fill(~allowed, 0.0)
        abs_dp_max[:, :, rows] = abs_dp.amax(dim=-1)
    to_layout = {name: t.transpose(1, 2) for name, t in per_query.items()}
    for name, tensor in per_key.items():  # (B, H, Nk, D) -> summed per group -> (B, Nk, Hkv, D)
        to_layout[name] = tensor.unflatten(1, (kv_heads, group)).sum(dim=2).transpose(1, 2)
    return Gradients(abs_dp_max=abs_dp_max, **to_layout)


def _as_bhnd(tensor: torch.Tensor, repeat: int) -> torch.Tensor:
    """(B, N, Hx, D) in any dtype -> float64 (B, Hx*repeat, N, D), KV heads repeated per group."""
    tensor = tensor.to(torch.float64).transpose(1, 2)
    return tensor.repeat_interleave(repeat, dim=1) if repeat > 1 else tensor
