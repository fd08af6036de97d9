"""Small pure-torch implementations with one planted masking or packing bug each, for the
properties the project kernel cannot run yet (attn_mask, packed sequences).

``correct`` is flashcheck's plain same-precision attention behind the protocol (packed input
as a batch of one under the document mask); each bug changes one thing of it.
"""
from __future__ import annotations

import math

import torch

from flashcheck.cases import masks, packing
from flashcheck.oracle import same_precision

FEATURES = frozenset({"causal", "window", "gqa", "mask", "varlen", "lse", "float16", "bfloat16", "float32"})


def _protocol(dense):
    """Wrap ``dense(q, k, v, **dense_kwargs) -> (out, lse)`` into a protocol implementation."""

    def attention(q, k, v, **kwargs):
        q4, k4, v4, dense_kwargs, packed = packing.as_dense(q, k, v, kwargs)
        out, lse = dense(q4, k4, v4, **dense_kwargs)
        return (out[0], lse[0]) if packed is not None else (out, lse)

    attention.flashcheck_features = FEATURES
    return attention


correct = _protocol(same_precision.attention)


def _float32_logits(q, k, v, causal, window, softmax_scale, attn_mask):
    """Unmasked float32 logits ``(B, H, Nq, Nk)``, the allowed entries, and V with its heads
    repeated per query head, ``(B, H, Nk, D)``: what the buggy masked variants start from."""
    allowed = masks.allowed(q.shape[1], k.shape[1], causal=causal, window=window, attn_mask=attn_mask,
                            device=q.device)
    group = q.shape[2] // k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(q.shape[-1])
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))
    kf, vf = kf.repeat_interleave(group, dim=1), vf.repeat_interleave(group, dim=1)
    return scale * (qf @ kf.transpose(-1, -2)), allowed, vf


def _additive(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None):
    """The mask as an additive bias of -1e4 instead of -inf: huge hidden logits win."""
    if attn_mask is None:
        return same_precision.attention(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale)
    logits, allowed, vf = _float32_logits(q, k, v, causal, window, softmax_scale, attn_mask)
    logits = logits + (~allowed).float() * -1e4
    lse = torch.logsumexp(logits, dim=-1)
    out = (torch.softmax(logits, dim=-1) @ vf).to(q.dtype).transpose(1, 2)
    return out, lse


additive_mask = _protocol(_additive)


def _ignoring_mask(q, k, v, *, attn_mask=None, **kwargs):
    return same_precision.attention(q, k, v, **kwargs)


ignores_mask = _protocol(_ignoring_mask)


def _leaky(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None):
    """Hidden keys keep a weight of 1e-7 of their exponential: far below any tolerance."""
    logits, allowed, vf = _float32_logits(q, k, v, causal, window, softmax_scale, attn_mask)
    weights = torch.exp(logits - logits.amax(dim=-1, keepdim=True)) * (allowed + 1e-7 * ~allowed)
    total = weights.sum(dim=-1, keepdim=True)
    out = (weights / total.clamp(min=1e-30)) @ vf
    return out.to(q.dtype).transpose(1, 2), (logits.amax(dim=-1, keepdim=True) + total.log()).squeeze(-1)


leaky_mask = _protocol(_leaky)


def across_documents(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                     **kwargs):
    """Packed input attended as one long sequence: queries see other sequences' keys."""
    if cu_seqlens_q is None:
        return correct(q, k, v, **kwargs)
    out, lse = same_precision.attention(q[None], k[None], v[None], **kwargs)
    return out[0], lse[0]


across_documents.flashcheck_features = FEATURES


def reads_past_the_end(q, k, v, **kwargs):
    """Packed input whose last key is taken one token too far, past the end of the view
    (zeros where the storage ends there, as memory beyond an allocation would be garbage)."""
    if kwargs.get("cu_seqlens_k") is None or k.shape[0] == 0:
        return correct(q, k, v, **kwargs)
    beyond = []
    for t in (k, v):
        last = t[-1:]
        if last.storage_offset() + t.stride(0) + (last.shape[1] - 1) * t.stride(1) + last.shape[2] <= \
                t.untyped_storage().nbytes() // t.element_size():
            beyond.append(t.as_strided(last.shape, t.stride(), last.storage_offset() + t.stride(0)))
        else:
            beyond.append(torch.zeros_like(last))
    k2, v2 = (torch.cat([t[:-1], b]) for t, b in zip((k, v), beyond))
    return correct(q, k2, v2, **kwargs)


reads_past_the_end.flashcheck_features = FEATURES


def _stride_dependent(q, k, v, **kwargs):
    """Correct, but larger by a relative 2^-8 wherever V is not contiguous: a result that
    depends on the layout (as torch's CPU matmul's rounding does at head dim 1), still odd
    and homogeneous in V (rounding to nearest is symmetric, and doubling exact)."""
    out, lse = same_precision.attention(q, k, v, **kwargs)
    if not v.is_contiguous():
        out = out + out * 2**-8
    return out, lse


stride_dependent_rounding = _protocol(_stride_dependent)


def _values_strided_like_keys(q, k, v, **kwargs):
    """Correct where V's strides equal K's, larger by a relative 2^-4 where they differ: a
    kernel that steps through V with K's strides (FlagGems' flash forward) reads other elements
    there."""
    out, lse = same_precision.attention(q, k, v, **kwargs)
    if v.stride() != k.stride():
        out = out + out * 2**-4
    return out, lse


values_strided_like_keys = _protocol(_values_strided_like_keys)


def leaks_memory(q, k, v, **kwargs):
    """Correct values, but each call allocates 8 MB on q's device and keeps it alive in a
    module-level list (as a cache keyed on nothing that changes would): a training loop runs
    out of memory. ``leaks_memory.held`` is that list, for the tests to empty."""
    leaks_memory.held.append(torch.empty(8 << 20, dtype=torch.uint8, device=q.device))
    return correct(q, k, v, **kwargs)


leaks_memory.held = []
leaks_memory.flashcheck_features = FEATURES
