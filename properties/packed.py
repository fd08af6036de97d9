"""Properties of packed variable-length calls: each sequence is its own problem, and memory
beyond the packed tokens is never read into a result."""

from __future__ import annotations

import functools

import torch

from flashcheck import protocol
from flashcheck.cases.case import one_sequence
from flashcheck.oracle import compare
from flashcheck.oracle.backward_pass import gradients
from flashcheck.oracle.compare import Violation
from flashcheck.oracle.expectation import held_to
from flashcheck.properties.common import call_checked, check_none, expect, expect_gradients, materialize
from flashcheck.properties.registry import prop


def sequences(case):
    """``(s, rows, keys, nq, nk)`` per sequence: slices of the packed tokens."""
    cq, ck = (c.tolist() for c in case.cu_seqlens())
    for s, (nq, nk) in enumerate(case.seqlens):
        yield s, slice(cq[s], cq[s + 1]), slice(ck[s], ck[s + 1]), nq, nk


def sequence_call(case, inputs, rows, keys, nq, nk):
    """``(case, inputs)`` of :func:`varlen_matches_separate_calls`'s dense call on one sequence
    (its ``rows`` and ``keys`` of the packed tokens) alone."""
    q, k, v = inputs
    return one_sequence(case, nq, nk), (q[rows].unsqueeze(0), k[keys].unsqueeze(0), v[keys].unsqueeze(0))


def sequence_alone(s, nq, nk) -> str:
    return f"a dense call on sequence {s} alone ({nq} queries, {nk} keys)"


def without_keys(value, s) -> str:
    return f"{value} on sequence {s}, which has no keys"


def without_queries(s) -> str:
    return f"0 for the keys of sequence {s}, which has no queries"


def _exactly(name, got, value, what):
    compare.check_equal(name, got, torch.full_like(got, value), what=what)


@prop(requires={"varlen"}, applies=lambda case: case.varlen, draw={"varlen": True}, uses={"backward"})
def varlen_matches_separate_calls(impl, case, *, device=None):
    """A packed call equals dense calls on each sequence alone: out and lse (and dQ, dK, dV
    when "backward") within twice the packed call's derived tolerance; a sequence without
    keys gives exactly out 0 and lse -inf, keys without queries exactly zero dK, dV.

    Twice, because the packed tolerance bounds the dense call's too: a sequence's rows have
    the same allowed keys, logits and magnitudes in both problems, and dK, dV bounds of the
    packed problem take their maxima over more rows. (Not bitwise: a kernel may tile a
    sequence differently when it starts mid-block in the packed tensor.)"""
    inputs = materialize(case, device)
    q, k, v = inputs
    out, lse = call_checked(impl, case, inputs)
    exp = expect(impl, case, inputs)
    backward = "backward" in protocol.features_of(impl, q.device)
    if backward:
        (dq, dk, dv), grad_out, grad_lse = gradients(impl, case, inputs)
        exp_g = expect_gradients(impl, case, inputs, grad_out, grad_lse)
    for s, rows, keys, nq, nk in sequences(case):
        what = sequence_alone(s, nq, nk)
        if nq and not nk:  # rows without keys: the protocol fixes their values
            _exactly("out", out[rows], 0.0, without_keys(0, s))
            if lse is not None:
                _exactly("lse", lse[:, rows], float("-inf"), without_keys("-inf", s))
            if backward:
                _exactly("dq", dq[rows], 0.0, without_keys(0, s))
            continue
        if not nq:
            if backward:
                for name, grad in (("dk", dk), ("dv", dv)):
                    _exactly(name, grad[keys], 0.0, without_queries(s))
            continue
        single, parts = sequence_call(case, inputs, rows, keys, nq, nk)
        out_s, lse_s = call_checked(impl, single, parts)
        compare.check_close("out", out[rows], out_s[0], 2 * exp.allowed("out")[rows], what=what)
        if lse is not None:
            compare.check_close("lse", lse[:, rows], lse_s[0], 2 * exp.allowed("lse")[:, rows], what=what)
        if backward:
            upstream = (grad_out[rows].unsqueeze(0), None if grad_lse is None else grad_lse[:, rows].unsqueeze(0))
            (dq_s, dk_s, dv_s), _, _ = gradients(impl, single, parts, *upstream)
            for name, got, alone, where in (("dq", dq, dq_s, rows), ("dk", dk, dk_s, keys), ("dv", dv, dv_s, keys)):
                compare.check_close(name, got[where], alone[0], 2 * exp_g.allowed(name)[where], what=what)


@prop(requires={"varlen"}, applies=lambda case: case.varlen, draw={"varlen": True}, uses={"backward"})
def nan_padding_never_leaks(impl, case, *, device=None):
    """Packed q, k, v that are views into NaN (around every view and for a block of tokens
    past the last sequence's end) give results with no trace of the NaN, gradients included
    when "backward": no NaN or infinity where the same views into finite padding give a
    finite value, and agreement with the float64 reference within the derived tolerance
    wherever contiguous copies of the same tokens agree with it.

    A leak is told by what it produces, so that rounding which merely depends on the layout
    (a matmul summing in a stride-dependent order) passes here; bitwise layout invariance is
    :func:`layout_invariance`'s to demand. Memory read from around a view or past the last
    token is NaN, which turns what it reaches into NaN: the same views into a buffer whose
    padding is zero instead (the same strides, offsets and valid tokens: only the padding
    differs, and a read past the end stays inside it) show whether the padding caused it. A
    leak whose NaN is sanitised away (a load that replaces NaN) brings in finite garbage: the
    padded result is then beyond the tolerance where contiguous copies, which have no padding
    to read, are within it. An element that is non-finite whatever the padding, or that the
    contiguous copies get wrong too, is left to the comparisons with the reference
    (``out_matches_reference``, ``outputs_finite``, ``grads_match_reference``), which report
    it without blaming the padding.

    The results of the zero-padded views decide something only where the NaN-padded views'
    result is not finite, and those of the contiguous copies only where it is beyond the
    tolerance: each is computed when, and only when, some element needs it (in the
    interpreter these calls were two thirds of the property's time, and for a correct kernel
    they decide nothing)."""
    padded_case, padded, twin, clean = nan_padded_views(case, device)
    out_p, lse_p = call_checked(impl, padded_case, padded)
    twin_run = functools.cache(lambda: call_checked(impl, padded_case, twin))
    clean_run = functools.cache(lambda: call_checked(impl, padded_case, clean))
    exp = expect(impl, padded_case, clean)
    _no_trace_of_nan("out", out_p, lambda: twin_run()[0], lambda: clean_run()[0],
                     held_to(exp.expected_out, out_p, exp.allowed("out")), exp.allowed("out"), exp.locate("out"))
    if lse_p is not None:
        _no_trace_of_nan("lse", lse_p, lambda: _lse_of(twin_run()), lambda: _lse_of(clean_run()), exp.expected_lse,
                         exp.allowed("lse"), exp.locate("lse"))
    if "backward" in protocol.features_of(impl, padded[0].device):
        grads_p, grad_out, grad_lse = gradients(impl, padded_case, padded)
        twin_grads = functools.cache(lambda: gradients(impl, padded_case, twin, grad_out, grad_lse)[0])
        clean_grads = functools.cache(lambda: gradients(impl, padded_case, clean, grad_out, grad_lse)[0])
        exp_g = expect_gradients(impl, padded_case, clean, grad_out, grad_lse)
        for i, (name, got) in enumerate(zip(("dq", "dk", "dv"), grads_p)):
            allowed = exp_g.allowed(name)
            _no_trace_of_nan(name, got, lambda i=i: twin_grads()[i], lambda i=i: clean_grads()[i],
                             held_to(exp_g.expected(name), got, allowed), allowed, exp_g.locate(name))


def nan_padded_views(case, device):
    """``(padded_case, padded, twin, clean)``: the case laid out as views into NaN (its
    ``padded`` inputs), the same views into zero padding (``twin``), and contiguous copies of
    the same tokens (``clean``), as :func:`nan_padding_never_leaks` calls them."""
    padded_case = case.replace(layout="padded")
    padded = materialize(padded_case, device)
    return (padded_case, padded, tuple(_in_finite_padding(t) for t in padded),
            tuple(t.contiguous() for t in padded))


def _lse_of(result):
    """The lse of ``(out, lse)`` of the views laid out otherwise, which must return one
    as the NaN-padded views did."""
    if result[1] is None:
        raise Violation("lse: returned for the NaN-padded views but not for the same tokens laid out otherwise")
    return result[1]


def _in_finite_padding(view: torch.Tensor) -> torch.Tensor:
    """``view`` (a view into a NaN-filled buffer) as the same view into a copy of that buffer
    whose NaN are zeros: the same sizes, strides, offset and values, finite padding."""
    storage = torch.empty(0, dtype=view.dtype, device=view.device).set_(view.untyped_storage())
    return torch.nan_to_num(storage, nan=0.0).as_strided(view.size(), view.stride(), view.storage_offset())


def _no_trace_of_nan(name, padded, zero_padded, contiguous, expected, allowed, locate):
    """Raise :class:`Violation` where output ``name`` of the NaN-padded views shows a
    leak: non-finite where the same views into zero padding give a finite value, or beyond
    ``allowed`` of the float64 ``expected`` where the contiguous copies' output is within it.
    ``zero_padded()`` and ``contiguous()`` give those outputs; each is called only where
    the NaN-padded output has an element for it to decide (non-finite, or beyond ``allowed``
    of ``expected``): elsewhere the result is the same whatever they give."""
    non_finite = ~torch.isfinite(padded)
    if non_finite.any():
        zero_padded = zero_padded()
        leaked = non_finite & torch.isfinite(zero_padded.to(padded.device))
        check_none(leaked, lambda count, index: (
            f"{name}: {count} of {leaked.numel()} elements are non-finite for packed tokens that "
            f"are views into NaN, where the same views into zero padding give finite values (read from the NaN "
            f"padding); first at {compare.format_index(name, index, locate)}: {float(padded[index])} where the "
            f"zero-padded views give {float(zero_padded[index]):.6g} and the float64 reference "
            f"{float(expected[index]):.6g}"
        ))
    if compare.measure(padded, expected.to(padded.device), allowed).exceeding == 0:
        return  # within the tolerance everywhere: the check below passes whatever the contiguous copies give
    contiguous = contiguous()
    contiguous_agrees = compare.errors(contiguous, expected) <= allowed.to(torch.float64).to(contiguous.device)
    # Where the contiguous copies are wrong too, the padding is not to blame: compared with itself (error 0).
    held = torch.where(contiguous_agrees.to(padded.device), expected.to(padded.device), padded.to(torch.float64))
    compare.check_close(name, padded, held, allowed, locate=locate,
                        what="the float64 reference, for the NaN-padded views (contiguous copies of the same packed "
                             "tokens agree with it there)")
