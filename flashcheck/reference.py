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
        logits = scale * (qc @ k.transpose(-1, -2))
        logits = logits.masked_fill(~allowed, -math.inf)
        row_max = logits.amax(dim=-1, keepdim=True)
        empty = row_max == -math.inf
        weights = torch.exp(logits - row_max.masked_fill(empty, 0.0))
        total = weights.sum(dim=-1, keepdim=True)
        probs = weights / total.masked_fill(empty, 1.0)
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


def _as_bhnd(tensor: torch.Tensor, repeat: int) -> torch.Tensor:
    """(B, N, Hx, D) in any dtype -> float64 (B, Hx*repeat, N, D), KV heads repeated per group."""
    tensor = tensor.to(torch.float64).transpose(1, 2)
    return tensor.repeat_interleave(repeat, dim=1) if repeat > 1 else tensor
