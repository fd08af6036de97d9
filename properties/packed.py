"""Properties of packed variable-length calls: each sequence is its own problem, and memory
beyond the packed tokens is never read into a result."""

from __future__ import annotations

import torch

from flashcheck import compare, protocol
from flashcheck.compare import Violation
from flashcheck.properties.common import expect, expect_gradients, materialize, run
from flashcheck.properties.gradients import gradients
from flashcheck.properties.registry import prop


def _sequence_case(case, nq: int, nk: int):
    """The dense batch of one that sequence ``(nq, nk)`` of a packed case is."""
    return case.replace(seqlens=None, batch=1, seqlen_q=nq, seqlen_k=nk)


def _sequences(case):
    """``(s, rows, keys, nq, nk)`` per sequence: slices of the packed tokens."""
    cq, ck = (c.tolist() for c in case.cu_seqlens())
    for s, (nq, nk) in enumerate(case.seqlens):
        yield s, slice(cq[s], cq[s + 1]), slice(ck[s], ck[s + 1]), nq, nk


def _exactly(name, got, value, what):
    compare.check_equal(name, got, torch.full_like(got, value), what=what)


@prop(requires={"varlen"}, applies=lambda case: case.varlen, draw={"varlen": True})
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
    out, lse = run(impl, case, inputs)
    exp = expect(impl, case, inputs)
    backward = "backward" in protocol.features_of(impl, q.device)
    if backward:
        (dq, dk, dv), grad_out, grad_lse = gradients(impl, case, inputs)
        exp_g = expect_gradients(impl, case, inputs, grad_out, grad_lse)
    for s, rows, keys, nq, nk in _sequences(case):
        what = f"a dense call on sequence {s} alone ({nq} queries, {nk} keys)"
        if nq and not nk:  # rows without keys: the protocol fixes their values
            _exactly("out", out[rows], 0.0, f"0 on sequence {s}, which has no keys")
            if lse is not None:
                _exactly("lse", lse[:, rows], float("-inf"), f"-inf on sequence {s}, which has no keys")
            if backward:
                _exactly("dq", dq[rows], 0.0, f"0 on sequence {s}, which has no keys")
            continue
        if not nq:
            if backward:
                for name, grad in (("dk", dk), ("dv", dv)):
                    _exactly(name, grad[keys], 0.0, f"0 for the keys of sequence {s}, which has no queries")
            continue
        single = _sequence_case(case, nq, nk)
        parts = (q[rows].unsqueeze(0), k[keys].unsqueeze(0), v[keys].unsqueeze(0))
        out_s, lse_s = run(impl, single, parts)
        compare.check_close("out", out[rows], out_s[0], 2 * exp.allowed("out")[rows], what=what)
        if lse is not None:
            compare.check_close("lse", lse[:, rows], lse_s[0], 2 * exp.allowed("lse")[:, rows], what=what)
        if backward:
            upstream = (grad_out[rows].unsqueeze(0), None if grad_lse is None else grad_lse[:, rows].unsqueeze(0))
            (dq_s, dk_s, dv_s), _, _ = gradients(impl, single, parts, *upstream)
            for name, got, alone, where in (("dq", dq, dq_s, rows), ("dk", dk, dk_s, keys), ("dv", dv, dv_s, keys)):
                compare.check_close(name, got[where], alone[0], 2 * exp_g.allowed(name)[where], what=what)


@prop(requires={"varlen"}, applies=lambda case: case.varlen, draw={"varlen": True})
def nan_padding_never_leaks(impl, case, *, device=None):
    """Packed q, k, v that are views into NaN (around every view and for a block of tokens
    past the last sequence's end) give bitwise the results of contiguous copies, gradients
    included when "backward": no NaN from outside the valid tokens is ever read into them."""
    padded_case = case.replace(layout="padded")
    padded = materialize(padded_case, device)
    clean = tuple(t.contiguous() for t in padded)
    out_p, lse_p = run(impl, padded_case, padded)
    out_c, lse_c = run(impl, padded_case, clean)
    what = "the result for contiguous copies of the same packed tokens"
    compare.check_equal("out", out_p, out_c, what=what)
    if lse_p is not None:
        compare.check_equal("lse", lse_p, lse_c, what=what)
    if "backward" in protocol.features_of(impl, padded[0].device):
        grads_p, grad_out, grad_lse = gradients(impl, padded_case, padded)
        grads_c, _, _ = gradients(impl, padded_case, clean, grad_out, grad_lse)
        for name, a, b in zip(("dq", "dk", "dv"), grads_p, grads_c):
            compare.check_equal(name, a, b, what=f"{name} for contiguous copies of the same packed tokens")
    if torch.isnan(out_p).any():
        raise Violation("out: NaN in the output of finite packed tokens (read from the NaN padding)")
