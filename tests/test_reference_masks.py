"""The float64 reference, the same-precision attention and the tolerance model with a
boolean attn_mask and with packed sequences.

Oracles independent of the reference's chunked code: a per-row loop over the allowed keys
(``torch.logsumexp`` of the selected logits), autograd of a float64 forward that selects the
allowed keys with ``torch.where`` (rows without keys handled as the protocol says), and
dense calls of the reference per sequence for packed problems.
"""
from __future__ import annotations

import math

import pytest
import torch

from flashcheck.cases import masks, packing
from flashcheck.cases.case import Case
from flashcheck.oracle import expectation, reference, same_precision, tolerance
from tests.test_reference_gradients import ReferenceAttention, assert_close_float64, loss_gradients

#: Small masked cases: (case, what it covers).
MASKED = [
    Case(batch=2, seqlen_q=5, seqlen_k=7, heads=2, mask="random:0.5,shape:B1QK", seed=1),
    Case(batch=1, seqlen_q=6, seqlen_k=6, heads=3, kv_heads=1, mask="random:0.7,rows:2,cols:1", seed=2),
    Case(batch=2, seqlen_q=4, seqlen_k=9, heads=2, causal=True, mask="blocks:2:0.6", seed=3),
    Case(batch=2, seqlen_q=7, seqlen_k=5, heads=2, kv_heads=1, window=(2, 1), mask="random:0.8,shape:QK", seed=4),
    Case(batch=3, seqlen_q=3, seqlen_k=6, heads=1, mask="key-padding:6/0/2", seed=5),
    Case(batch=1, seqlen_q=5, seqlen_k=5, heads=2, mask="random:0.0", seed=6),
]
PACKED = [
    Case.packed(((3, 5), (0, 2), (1, 1), (4, 0), (2, 3)), heads=2, kv_heads=1, seed=7),
    Case.packed(((4, 4), (5, 2), (1, 6)), heads=2, causal=True, seed=8),
    Case.packed(((6, 6), (3, 5)), heads=1, window=(1, 1), seed=9),
]


def float64_inputs(case):
    return tuple(t.double() for t in case.materialize())


def per_row_oracle(q, k, v, allowed, scale):
    """(out, lse) by a loop over (b, h, i): softmax of the allowed logits only."""
    batch, nq, heads, dim = q.shape
    group = heads // k.shape[2]
    allowed = allowed.expand(batch, heads, nq, k.shape[1])
    out = torch.zeros_like(q)
    lse = torch.full((batch, heads, nq), -math.inf, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            for i in range(nq):
                keys = allowed[b, h, i].nonzero().flatten()
                if len(keys) == 0:
                    continue
                logits = scale * (k[b, keys, h // group] @ q[b, i, h])
                lse[b, h, i] = torch.logsumexp(logits, dim=0)
                out[b, i, h] = torch.softmax(logits, dim=0) @ v[b, keys, h // group]
    return out, lse


@pytest.mark.parametrize("case", MASKED, ids=lambda c: c.mask.text())
def test_masked_reference_equals_the_per_row_oracle(case):
    q, k, v = float64_inputs(case)
    out, lse = reference.attention(q, k, v, **case.attention_kwargs())
    want_out, want_lse = per_row_oracle(q, k, v, case.allowed(), case.scale)
    assert_close_float64(out, want_out, "out", rtol=1e-12)
    assert torch.equal(torch.isinf(lse), torch.isinf(want_lse))
    assert_close_float64(lse.nan_to_num(neginf=0.0), want_lse.nan_to_num(neginf=0.0), "lse", rtol=1e-12)
    empty = case.keys_per_row().expand(case.batch, case.heads, case.seqlen_q) == 0
    assert (out.transpose(1, 2)[empty] == 0).all() and (lse[empty] == -math.inf).all()


@pytest.mark.parametrize("causal, window", [(True, (-1, -1)), (False, (2, 1)), (True, (3, -1)), (False, (-1, 0))])
def test_a_mask_equal_to_the_band_gives_the_flag_s_results_bitwise(causal, window):
    case = Case(batch=2, seqlen_q=7, seqlen_k=5, heads=2, kv_heads=1, causal=causal, window=window, seed=3)
    q, k, v = float64_inputs(case)
    band = masks.allowed(7, 5, causal=causal, window=window)
    flagged = reference.evaluate(q, k, v, causal=causal, window=window)
    masked = reference.evaluate(q, k, v, attn_mask=band)
    for name in reference.Reference._fields:
        assert torch.equal(getattr(masked, name), getattr(flagged, name)), name
    grad_out = torch.randn(q.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    flagged_g = reference.gradients(q, k, v, grad_out, causal=causal, window=window)
    masked_g = reference.gradients(q, k, v, grad_out, attn_mask=band)
    for name in reference.Gradients._fields:
        assert torch.equal(getattr(masked_g, name), getattr(flagged_g, name)), name


def selecting_attention(q, k, v, *, allowed, softmax_scale):
    """Float64 attention over the allowed keys by ``torch.where``; rows without keys give out
    0 and a constant lse (0 here, ignored), so that autograd differentiates them cleanly."""
    heads, kv_heads = q.shape[2], k.shape[2]
    kx, vx = (t.repeat_interleave(heads // kv_heads, dim=2) for t in (k, v))
    logits = softmax_scale * torch.einsum("bihd,bjhd->bhij", q, kx)
    has_keys = allowed.any(dim=-1, keepdim=True)
    logits = torch.where(allowed & has_keys, logits, -math.inf)
    logits = torch.where(has_keys, logits, 0.0)
    probs = torch.softmax(logits, dim=-1) * has_keys
    out = torch.einsum("bhij,bjhd->bihd", probs, vx)
    lse = torch.where(has_keys[..., 0], torch.logsumexp(logits, dim=-1), -math.inf)
    return out, lse


@pytest.mark.parametrize("case", MASKED, ids=lambda c: c.mask.text())
def test_masked_gradients_equal_autograd_and_ignore_rows_without_keys(case):
    q, k, v = float64_inputs(case)
    generator = torch.Generator().manual_seed(case.seed)
    grad_out = torch.randn(q.shape, dtype=torch.float64, generator=generator)
    grad_lse = torch.randn(case.batch, case.heads, case.seqlen_q, dtype=torch.float64, generator=generator)
    empty = case.keys_per_row().expand_as(grad_lse) == 0
    # Non-finite upstream gradients on rows without keys must change nothing.
    poisoned_out = grad_out.masked_fill(empty.transpose(1, 2)[..., None], math.nan)
    poisoned_lse = grad_lse.masked_fill(empty, math.inf)
    grads = reference.gradients(q, k, v, poisoned_out, grad_lse=poisoned_lse, **case.attention_kwargs())
    allowed = case.allowed()
    want = loss_gradients(selecting_attention, q, k, v, grad_out, grad_lse,
                          dict(allowed=allowed, softmax_scale=case.scale))
    for name, got, expected in zip(("dq", "dk", "dv"), (grads.dq, grads.dk, grads.dv), want):
        assert_close_float64(got, expected, name)
    assert (grads.dq.transpose(1, 2)[empty] == 0).all()


@pytest.mark.parametrize("case", [MASKED[0], MASKED[1], MASKED[4]], ids=lambda c: c.mask.text())
def test_gradcheck_through_a_masked_reference(case):
    """gradcheck differentiates lse numerically, so no row here is without keys."""
    shape = dict(batch=case.batch, seqlen_q=3, seqlen_k=4, heads=case.heads, kv_heads=case.kv_heads, head_dim=2)
    small = case.replace(**shape, mask="random:0.6" if case.mask.kind != "key-padding" else
                         "key-padding:" + "/".join(["4", "1", "2"][: case.batch]))
    leaves = tuple(t.requires_grad_() for t in float64_inputs(small))
    kwargs = small.attention_kwargs()
    assert torch.autograd.gradcheck(lambda *x: ReferenceAttention.apply(*x, kwargs), leaves)


@pytest.mark.parametrize("case", PACKED, ids=lambda c: str(c.seqlens))
def test_packed_expectation_equals_dense_references_per_sequence(case):
    q, k, v = case.replace(dtype="float32").materialize()  # the reference widens them exactly
    generator = torch.Generator().manual_seed(case.seed)
    grad_out = torch.randn(q.shape, dtype=torch.float64, generator=generator)
    grad_lse = torch.randn(case.heads, case.seqlen_q, dtype=torch.float64, generator=generator)
    kwargs = case.attention_kwargs()
    packed = expectation.expect(q, k, v, **kwargs)
    packed_g = expectation.expect_gradients(q, k, v, grad_out, grad_lse, **kwargs)
    assert packed.expected_out.shape == q.shape and packed.expected_lse.shape == (case.heads, case.seqlen_q)
    cq, ck = (c.tolist() for c in case.cu_seqlens())
    band = dict(causal=case.causal, window=case.window)
    for s in range(len(case.seqlens)):
        rows, keys = slice(cq[s], cq[s + 1]), slice(ck[s], ck[s + 1])
        qs, ks, vs = q[rows][None], k[keys][None], v[keys][None]
        out, lse = reference.attention(qs, ks, vs, **band)
        assert_close_float64(packed.expected_out[rows], out[0], f"out of sequence {s}", rtol=1e-12)
        finite = torch.isfinite(lse[0])
        assert torch.equal(torch.isfinite(packed.expected_lse[:, rows]), finite)
        assert_close_float64(packed.expected_lse[:, rows][finite], lse[0][finite], f"lse {s}", rtol=1e-12)
        grads = reference.gradients(qs, ks, vs, grad_out[rows][None], grad_lse=grad_lse[:, rows][None], **band)
        for name in ("dq", "dk", "dv"):
            got = packed_g.expected(name)[rows if name == "dq" else keys]
            assert_close_float64(got, getattr(grads, name)[0], f"{name} of sequence {s}")


@pytest.mark.parametrize("case", MASKED + PACKED, ids=lambda c: c.spec().split(" seed=")[1])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_the_model_bounds_the_same_precision_attention_with_masks_and_packing(case, dtype):
    """The tolerance cross-check (tests/test_tolerance.py) on masked and packed cases."""
    case = case.replace(dtype=dtype)
    q, k, v = case.materialize()
    exp = expectation.expect(q, k, v, **case.attention_kwargs())
    qd, kd, vd, dense_kwargs, _ = packing.as_dense(q, k, v, case.attention_kwargs())
    out, lse = same_precision.attention(qd, kd, vd, **dense_kwargs)
    for name, got, expected, bound in (("out", out, exp.ref.out, exp.out), ("lse", lse, exp.ref.lse, exp.lse)):
        finite = torch.isfinite(expected)
        assert torch.equal(torch.isfinite(got), finite), name
        error = (got.double() - expected).abs().where(finite, torch.zeros((), dtype=torch.float64))
        assert (error <= bound.model).all(), f"{name}: ratio {float((error / bound.model).max()):.3g}"
    grad_out = torch.randn(qd.shape, generator=torch.Generator().manual_seed(2)).to(q.dtype)
    grads = reference.gradients(qd, kd, vd, grad_out, **dense_kwargs)
    bounds = tolerance.gradient_bounds(grads, exp.ref, exp.out, exp.lse, grad_out, dtype=q.dtype,
                                       head_dim=case.head_dim, scale=case.scale)
    for name, got in zip(("dq", "dk", "dv"), same_precision.gradients(qd, kd, vd, grad_out, **dense_kwargs)):
        error = (got.double() - getattr(grads, name)).abs()
        assert (error <= bounds[name].model).all(), f"{name}: ratio {float((error / bounds[name].model).max()):.3g}"
