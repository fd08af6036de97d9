"""Held-out implementations that declare a case domain or a known divergence, built on the
plain-torch ``correct`` kernel of :mod:`tests.support.standalone_kernels`.

- ``small_square``: runs head dims 16 and 32 with equal query and key lengths only (declines the
  rest with NotImplementedError, as a library's documented contract would), and declares exactly
  that as its case domain;
- ``wrong_domain``: declines head dim 32 while its declared domain says it runs it;
- ``nan_on_negative_scale``: returns NaN for every negative softmax_scale and declares that as a
  known divergence of every property it shows in, steering drawing off negative scales;
- ``lse_off_by_one``: its lse one too large on every case, declared as a known divergence confined to
  cases (a ``covers`` predicate) that happens to cover every case, with nothing to steer by;
- ``lse_off_by_one_steered``: the same, its steering predicate holding on every case too (no draw
  can steer around it);
- ``lse_off_by_one_in_float32``: the same on float32 cases only (about one in three), declared so;
- ``nan_past_one_query``: NaN on every case with more than one query (nearly all), declared on every
  property it shows in with that steering: a class of cases almost wholly a known divergence's;
- ``wrong_backward``: gradients one too large on every case, declared on the whole of both gradient
  comparisons, as one cause;
- ``keyed``: correct, declaring a compile key of dtype and head dim;
- ``detached_lse``: correct, but returns its lse detached while declaring ``lse_grad``;
- ``one_key_refused``: correct, declining calls with fewer than two keys and declaring that
  (``min_seqlen_k`` 2), as cuDNN's SDPA does.
"""

from __future__ import annotations

import math

import torch

from flashcheck.divergences import KnownDivergence
from flashcheck.oracle.case_predicates import negative_softmax_scale
from tests.support import standalone_kernels

FEATURES = standalone_kernels.FEATURES | {"float16", "bfloat16", "float32"}


def _lengths(q, k, cu_seqlens_q, cu_seqlens_k):
    if cu_seqlens_q is None:
        return [(q.shape[1], k.shape[1])]
    return list(zip(cu_seqlens_q.diff().tolist(), cu_seqlens_k.diff().tolist()))


def _declining(head_dims, *, domain_head_dims):
    def attention(q, k, v, **kwargs):
        if q.shape[-1] not in head_dims:
            raise NotImplementedError(f"head dim {q.shape[-1]} is not one of {sorted(head_dims)}")
        if any(nq != nk for nq, nk in _lengths(q, k, kwargs.get("cu_seqlens_q"), kwargs.get("cu_seqlens_k"))):
            raise NotImplementedError("query and key lengths must be equal")
        return standalone_kernels.correct(q, k, v, **kwargs)

    attention.flashcheck_features = FEATURES
    attention.flashcheck_case_domain = {"head_dims": domain_head_dims, "equal_lengths": True}
    return attention


small_square = _declining({16, 32}, domain_head_dims=(16, 32))
wrong_domain = _declining({16}, domain_head_dims=(16, 32))


def nan_on_negative_scale(q, k, v, *, softmax_scale=None, **kwargs):
    out, lse = standalone_kernels.correct(q, k, v, softmax_scale=softmax_scale, **kwargs)
    if softmax_scale is not None and softmax_scale < 0:
        return out * math.nan, lse * math.nan if lse is not None else None
    return out, lse


NEGATIVE = KnownDivergence("NaN for every negative softmax_scale", negative_softmax_scale, steer=negative_softmax_scale)
nan_on_negative_scale.flashcheck_features = FEATURES
nan_on_negative_scale.flashcheck_known_divergences = {
    name: NEGATIVE for name in ("out_matches_reference", "lse_matches_reference", "grads_match_reference")}


def lse_off_by_one(q, k, v, **kwargs):
    out, lse = standalone_kernels.correct(q, k, v, **kwargs)
    return out, lse + 1.0


lse_off_by_one.flashcheck_features = FEATURES
lse_off_by_one.flashcheck_known_divergences = {
    "lse_matches_reference": KnownDivergence("lse one too large", lambda case: True)}


def lse_off_by_one_steered(q, k, v, **kwargs):
    return lse_off_by_one(q, k, v, **kwargs)


lse_off_by_one_steered.flashcheck_features = FEATURES
lse_off_by_one_steered.flashcheck_known_divergences = {
    "lse_matches_reference": KnownDivergence("lse one too large", lambda case: True, steer=lambda case: True)}


def lse_off_by_one_in_float32(q, k, v, **kwargs):
    out, lse = standalone_kernels.correct(q, k, v, **kwargs)
    return out, lse + 1.0 if q.dtype == torch.float32 else lse


lse_off_by_one_in_float32.flashcheck_features = FEATURES
lse_off_by_one_in_float32.flashcheck_known_divergences = {
    "lse_matches_reference": KnownDivergence("lse one too large in float32", lambda case: case.dtype == "float32")}


def _more_than_one_query(case) -> bool:
    return case.seqlen_q > 1


def nan_past_one_query(q, k, v, **kwargs):
    out, lse = standalone_kernels.correct(q, k, v, **kwargs)
    if q.shape[1] > 1:
        return out * math.nan, lse * math.nan if lse is not None else None
    return out, lse


nan_past_one_query.flashcheck_features = FEATURES - {"varlen"}
nan_past_one_query.flashcheck_known_divergences = {
    name: KnownDivergence("NaN with more than one query", _more_than_one_query, steer=_more_than_one_query)
    for name in ("out_matches_reference", "lse_matches_reference", "grads_match_reference")}


class _GradientsOneTooLarge(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad):
        return grad + 1.0


def wrong_backward(q, k, v, **kwargs):
    q, k, v = (_GradientsOneTooLarge.apply(t) for t in (q, k, v))
    return standalone_kernels.correct(q, k, v, **kwargs)


_WRONG_BACKWARD = KnownDivergence("gradients one too large on every call")
wrong_backward.flashcheck_features = FEATURES
wrong_backward.flashcheck_known_divergences = {
    "grads_match_reference": _WRONG_BACKWARD, "gqa_grads_match_repeated_kv": _WRONG_BACKWARD}


def keyed(q, k, v, **kwargs):
    return standalone_kernels.correct(q, k, v, **kwargs)


keyed.flashcheck_features = FEATURES
keyed.flashcheck_compile_key = ("dtype", "head_dim")


def _declaring(attribute: str, value):
    def attention(q, k, v, **kwargs):
        return standalone_kernels.correct(q, k, v, **kwargs)

    attention.flashcheck_features = FEATURES
    setattr(attention, attribute, value)
    return attention


#: Malformed declarations, refused before any work.
negative_longest_length = _declaring("flashcheck_case_domain", {"max_seqlen": -1})
key_as_a_string = _declaring("flashcheck_compile_key", "dtype")


def detached_lse(q, k, v, **kwargs):
    """Correct, but its lse leaves autograd, while it claims a differentiable one."""
    out, lse = standalone_kernels.correct(q, k, v, **kwargs)
    return out, lse.detach()


detached_lse.flashcheck_features = FEATURES | {"lse_grad"}


def detached_lse_unclaimed(q, k, v, **kwargs):
    """``detached_lse`` without the claim: its lse's gradient is left unchecked, and said so."""
    return detached_lse(q, k, v, **kwargs)


detached_lse_unclaimed.flashcheck_features = FEATURES


def one_key_refused(q, k, v, **kwargs):
    if k.shape[1] < 2:
        raise NotImplementedError("key/value sequence length 1 is not supported")
    return standalone_kernels.correct(q, k, v, **kwargs)


one_key_refused.flashcheck_features = FEATURES
one_key_refused.flashcheck_case_domain = {"min_seqlen_k": 2}
