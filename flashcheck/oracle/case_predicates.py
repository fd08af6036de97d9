"""Predicates of a case that say what its inputs demand of any implementation: computed from
the case alone (in float64 where they need numbers), never from what an implementation did.

The known divergences of the adapters (:mod:`flashcheck.divergences`) confine themselves to
the cases these cover (``KnownDivergence.covers``) and steer drawing off them
(``KnownDivergence.steer``); the causes here were found in torch's fused SDPA backends,
FlashAttention-4 and FlagGems (docs/findings.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch

from flashcheck.cases.case import Case, one_group_kept, one_sequence, other_layout
from flashcheck.oracle.backward_inputs import ds_range_inputs, upstream
from flashcheck.oracle.expectation import overflow_threshold

#: float16's smallest normal number: a probability below it, rounded to float16, keeps an
#: absolute precision of 2^-25 only, not a relative one.
FLOAT16_SMALLEST_NORMAL = 2.0**-14


@dataclass(frozen=True)
class BackwardExtremes:
    """Float64 magnitudes inside a case's exact backward pass (the seeded upstream gradient
    dO of :func:`flashcheck.oracle.backward_inputs.upstream`, no lse gradient), over allowed
    scores only: the largest ``|dS|`` and ``|scale·dS|`` (``dS = P∘(dP - delta)``), the
    largest gradient of one query head's own K and V (what an implementation that repeats
    KV heads computes before summing each group), the smallest nonzero probability, the
    smallest log-sum-exp of a row's allowed scores (rows with keys; ``inf`` where none has),
    and the largest ``ln|scale·delta_i| - lse_i`` over rows with keys (``delta_i = dO_i·O_i``;
    ``-inf`` where none has), the logarithm of ``|scale·delta_i|`` divided by the row's
    softmax denominator ``e^lse_i``: a kernel that holds that quotient in the input dtype
    overflows where it passes the dtype's range, however small the row's exact dS."""

    ds: float
    scaled_ds: float
    per_head_dk: float
    per_head_dv: float
    smallest_probability: float
    lowest_lse: float = float("inf")
    log_scaled_delta_over_row_sum: float = float("-inf")


#: The inputs a backward runs on, by the property that runs it: ``"plain"``, the case's own
#: inputs and the seeded dO of ``grads_match_reference`` (and of the other gradient
#: properties); ``"ds_range"``, the scaled inputs and dO of
#: ``grads_match_reference_where_ds_exceeds_float16``.
STRESSES = ("plain", "ds_range")


def _check_stress(stress: str) -> None:
    if stress not in STRESSES:
        raise ValueError(f"stress: expected one of {STRESSES}, got {stress!r}")


def _backward_inputs(case: Case, stress: str):
    if stress == "ds_range":
        (q, k, v), grad_out = ds_range_inputs(case, "cpu")
        return q, k, v, grad_out
    q, k, v = case.materialize("cpu")[:3]
    out_like = torch.empty(case.out_shape, dtype=case.torch_dtype)
    return q, k, v, upstream(case, out_like, None)[0]


def _batched(case: Case, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``tensors`` of ``case`` in float64 and the dense layout ``(B, N, H, D)``: packed ones
    ``(T, H, D)`` as one batch over the packed tokens, as :meth:`Case.allowed` reads them."""
    return tuple((t.unsqueeze(0) if case.varlen else t).to(torch.float64) for t in tensors)


def _per_head_scores(case: Case, q: torch.Tensor, k: torch.Tensor):
    """``(head, scores, allowed)`` for each query head of ``case``: its float64 scaled scores
    ``(B, Nq, Nk)`` against its KV head and which keys each row may attend (``q``, ``k`` as
    :func:`_batched` gives them). One head at a time: at GPU sizes the float64 scores of all
    heads at once would take gigabytes, and every quantity read off them is a maximum or
    minimum over heads."""
    group = case.heads // case.kv_heads
    allowed = case.allowed("cpu")  # (B|1, H|1, Nq, Nk)
    for head in range(case.heads):
        scores = case.scale * q[:, :, head] @ k[:, :, head // group].transpose(-1, -2)
        yield head, scores, allowed[:, head if allowed.shape[1] > 1 else 0].expand_as(scores)


@functools.lru_cache(maxsize=64)
def _extremes(spec: str, stress: str) -> BackwardExtremes:
    case = Case.from_spec(spec)
    q, k, v, grad_out = _backward_inputs(case, stress)
    q, k, v = _batched(case, q, k, v)
    grad_out = grad_out.to(torch.float64).reshape(q.shape)
    group = case.heads // case.kv_heads
    ds_max = dk_max = dv_max = 0.0
    smallest, lowest_lse, delta_quotient = 1.0, float("inf"), float("-inf")
    for head, scores, mask in _per_head_scores(case, q, k):
        qh, dout, vh = q[:, :, head], grad_out[:, :, head], v[:, :, head // group]  # (B, N, D)
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # rows without keys: 0
        dp = dout @ vh.transpose(-1, -2)
        delta = (dout * (probs @ vh)).sum(-1, keepdim=True)
        ds = probs * (dp - delta)
        if ds.numel():
            ds_max = max(ds_max, float(ds.abs().max()))
            dk_max = max(dk_max, float((case.scale * ds.transpose(-1, -2) @ qh).abs().max()))
            dv_max = max(dv_max, float((probs.transpose(-1, -2) @ dout).abs().max()))
        nonzero = probs[probs > 0]
        if nonzero.numel():
            smallest = min(smallest, float(nonzero.min()))
        lse = torch.logsumexp(scores, dim=-1)
        rows = lse > float("-inf")  # rows with keys
        if rows.any():
            lowest_lse = min(lowest_lse, float(lse[rows].min()))
            # In logarithms: e^-lse overflows float64 on the rows of offset logits (lse -1627).
            quotient = torch.log((case.scale * delta.squeeze(-1)[rows]).abs()) - lse[rows]
            delta_quotient = max(delta_quotient, float(quotient.max()))
    # Rounding is monotonic, so the largest |scale·dS| is the largest |dS| scaled, exactly.
    return BackwardExtremes(ds=ds_max, scaled_ds=abs(case.scale) * ds_max, per_head_dk=dk_max, per_head_dv=dv_max,
                            smallest_probability=smallest, lowest_lse=lowest_lse,
                            log_scaled_delta_over_row_sum=delta_quotient)


def hidden_logit_lead(case: Case, q: torch.Tensor, k: torch.Tensor) -> float:
    """The most a key hidden from a row (by the band or the mask) outscores that row's best
    allowed key, over rows with both: ``max(s_hidden) - max(s_allowed)`` of the float64 scaled
    scores (``-inf`` where no row has both), for ``case`` called with ``q`` and ``k`` (in the
    implementation's layout: dense, or packed)."""
    lead = float("-inf")
    for _, scores, mask in _per_head_scores(case, *_batched(case, q, k)):
        best = scores.masked_fill(~mask, float("-inf")).amax(dim=-1)
        hidden = scores.masked_fill(mask, float("-inf")).amax(dim=-1)
        both = torch.isfinite(best) & torch.isfinite(hidden)
        if both.any():
            lead = max(lead, float((hidden - best)[both].max()))
    return lead


@functools.lru_cache(maxsize=64)
def _case_hidden_logit_lead(spec: str) -> float:
    case = Case.from_spec(spec)
    return hidden_logit_lead(case, *case.materialize("cpu")[:2])


def case_hidden_logit_lead(case: Case) -> float:
    """:func:`hidden_logit_lead` on ``case``'s own inputs (computed once per case)."""
    return _case_hidden_logit_lead(case.spec())


def backward_extremes(case: Case, stress: str = "plain") -> BackwardExtremes:
    """The :class:`BackwardExtremes` of ``case``'s backward on the inputs of ``stress`` (one
    of :data:`STRESSES`; computed once per case and stress)."""
    _check_stress(stress)
    return _extremes(case.spec(), stress)


def float16_backward_overflows(case: Case, stress: str = "plain") -> bool:
    """A float16 case whose exact backward (on the inputs of ``stress``) holds a value
    beyond float16's range that a correct result does not need: some ``|dS|`` (scaled by
    the softmax scale or not, as a kernel may store either), or, with GQA, some gradient of
    a single query head's K or V (a sum over the group can be finite where its per-head
    parts are not). A kernel that rounds such an intermediate to float16 gets infinities,
    and NaN where they cancel."""
    if case.dtype != "float16":
        return False
    limit = overflow_threshold(torch.float16)
    extremes = backward_extremes(case, stress)
    if max(extremes.ds, extremes.scaled_ds) >= limit:
        return True
    return case.kv_heads < case.heads and max(extremes.per_head_dk, extremes.per_head_dv) >= limit


def float16_subnormal_probabilities(case: Case, stress: str = "plain") -> bool:
    """A float16 case with an allowed probability (on the inputs of ``stress``) below
    float16's smallest normal number (2^-14): rounded to float16 it keeps an absolute
    precision of 2^-25 only, so a kernel that forms ``dS = P∘(dP - delta)`` from float16
    probabilities errs by up to ``2^-25·|dP - delta|`` however small dS is."""
    return (case.dtype == "float16"
            and backward_extremes(case, stress).smallest_probability < FLOAT16_SMALLEST_NORMAL)


def under(stress: str, predicate: Callable[..., bool]) -> Callable[[Case], bool]:
    """``predicate`` (a cause above) evaluated on the inputs of ``stress``, for the known
    divergence of a property that runs the backward on those inputs."""
    _check_stress(stress)
    return lambda case: predicate(case, stress)


def negative_softmax_scale(case: Case) -> bool:
    """A case with an explicit negative ``softmax_scale``.

    [2.11 H100] FlashAttention-4 (4.0.0b36), torch SDPA's flash and cuDNN backends and
    FlagGems' flash kernels (5.0.2) return NaN outputs (and an infinite lse) for every negative
    scale tried, where float64 attention is finite; none documents the scale as positive
    (docs/findings.md, docs/repros/). The project kernel and SDPA's math and efficient backends
    compute them right."""
    return case.softmax_scale is not None and case.softmax_scale < 0


def is_float16(case: Case) -> bool:
    """A float16 case: what steers drawing off a float16 divergence of a property that puts
    every case into the regime it needs (the dS-range property)."""
    return case.dtype == "float16"


def float16_with_offset_values(case: Case) -> bool:
    """A float16 case whose keys and values share large offsets (``values=offset-values``):
    where a delta formed from the rounded output (``dO·O``) carries the output's rounding
    error times the values' offset into every dS of its row."""
    return case.dtype == "float16" and case.values == "offset-values"


def without_keys(case: Case) -> bool:
    """A case with an empty key axis (dense ``seqlen_k = 0``, or packed with no key at all)."""
    return case.seqlen_k == 0


def with_empty_rows(case: Case) -> bool:
    """A case with a query that has no allowed key."""
    return case.has_empty_rows


def with_unaligned_views(case: Case) -> bool:
    """A case some of whose q, k and v are views that do not start on a 16-byte boundary: the
    ``padded`` layout, and the ``mixed`` one (whose k and v are padded). Their buffers pad the
    head dim by 3 or 4 elements before the view and 5 or 7 in all, so that no dtype's rows are
    16-byte aligned (:data:`flashcheck.cases.case.LAYOUTS`)."""
    return case.layout in ("padded", "mixed")


def either(*predicates: Callable[[Case], bool]) -> Callable[[Case], bool]:
    """A predicate true where any of ``predicates`` is."""
    return lambda case: any(predicate(case) for predicate in predicates)


def or_relaid(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
    """A predicate true where ``predicate`` is, on the case or on the layout layout_invariance
    compares it with (:func:`flashcheck.cases.case.other_layout`, for an implementation that
    declares no layouts): a divergence of some layouts fails that property on the others too."""
    return lambda case: predicate(case) or predicate(case.replace(layout=other_layout(case)))


def or_alone(predicate: Callable[[Case], bool]) -> Callable[[Case], bool]:
    """A predicate true where ``predicate`` is, on the case or, for a packed case, on any of its
    sequences with queries and keys called alone (:func:`flashcheck.cases.case.one_sequence`), as
    ``varlen_matches_separate_calls`` calls them: a divergence of the dense calls fails that property
    where the packed call is right."""
    def covers(case: Case) -> bool:
        return predicate(case) or (case.varlen and any(
            predicate(one_sequence(case, nq, nk)) for nq, nk in case.seqlens if nq and nk))
    return covers


def _sum_may_overflow(tensor: torch.Tensor) -> bool:
    """Whether the sum of all elements of ``tensor``, formed in its dtype (accumulated in
    float32, as torch does for float16 and bfloat16, then rounded), may round to an infinity:
    the float64 sum is within float32 summation's error bound (``n·2^-24·Σ|x|``) of the
    dtype's :func:`~flashcheck.oracle.expectation.overflow_threshold` or beyond it."""
    if tensor.numel() == 0:
        return False
    values = tensor.to(torch.float64)
    slack = tensor.numel() * 2.0**-24 * float(values.abs().sum())
    return abs(float(values.sum())) + slack >= overflow_threshold(tensor.dtype)


def sdpa_no_keys_forward_overflows(case: Case) -> bool:
    """A case without any key (an empty key axis: dense ``seqlen_k = 0``, or packed with no
    key in any sequence) whose q sums beyond its dtype's range.

    On an empty key axis, ``torch.nn.functional.scaled_dot_product_attention`` returns, before
    any backend runs, ``zeros + (q.sum() + k.sum() + v.sum())·0`` with the sums in the input
    dtype (see the sdpa-math adapter): where the sum of q overflows, ``inf·0`` makes every
    output element NaN, though the exact output is 0. Rows without keys in a call that has
    keys are not affected."""
    if case.seqlen_k != 0:
        return False
    return _sum_may_overflow(case.materialize("cpu").q)


def sdpa_no_keys_forward_overflows_in_either_call(case: Case) -> bool:
    """:func:`sdpa_no_keys_forward_overflows` for ``batch_head_independence``, whose second call
    keeps one batch entry's KV-head group and replaces the rest with fresh values
    (:func:`flashcheck.cases.case.one_group_kept`): the frontend's ``q.sum()`` mixes every
    entry and head, so where either call's q sums beyond the range, the kept group is NaN in
    that call and 0 in the other."""
    if case.seqlen_k != 0:
        return False
    inputs, other, *_ = one_group_kept(case, "cpu")
    return _sum_may_overflow(inputs.q) or _sum_may_overflow(other.q)


def sdpa_no_keys_backward_overflows(case: Case, stress: str = "plain") -> bool:
    """A case without any key whose upstream gradient dO (that of the gradient properties'
    backward on the inputs of ``stress``, see :data:`STRESSES`) sums beyond its dtype's
    range: the backward of SDPA's empty-key result (:func:`sdpa_no_keys_forward_overflows`)
    multiplies ``dO.sum()`` by 0, which makes every element of dQ NaN where that sum
    overflows, though the exact dQ is 0."""
    _check_stress(stress)
    if case.seqlen_k != 0:
        return False
    return _sum_may_overflow(_backward_inputs(case, stress)[3])
