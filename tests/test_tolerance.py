"""The tolerance model: sound against real rounding, ordered by precision, not vacuous."""

from __future__ import annotations

import numpy
import torch
from hypothesis import given

import pytest

from flashcheck.cases import packing, sizes as case_sizes, strategies
from flashcheck.cases.case import Case
from flashcheck.oracle import backward_inputs, compare, expectation, reference, same_precision, tolerance
from flashcheck.oracle.compare import Violation

SMALL = case_sizes.choose("interpreter")


def _dense(case, device="cpu"):
    """q, k, v and the dense keyword arguments (packed cases as a batch of one under the
    document mask; masked cases with their attn_mask)."""
    q, k, v, kwargs, _ = packing.as_dense(*case.materialize(device), case.attention_kwargs(device))
    return (q, k, v), kwargs


def _reference(case, device="cpu"):
    (q, k, v), kwargs = _dense(case, device)
    return (q, k, v), reference.evaluate(q, k, v, **kwargs)


@given(case=strategies.cases(sizes=SMALL))
def test_model_bounds_the_error_of_a_plain_same_precision_attention(case):
    """The cross-check: the model, on its own, covers what real rounding does (dense,
    masked and packed cases alike)."""
    (q, k, v), ref = _reference(case)
    out, lse = same_precision.attention(q, k, v, **_dense(case)[1])
    for name, got, expected in (("out", out, ref.out), ("lse", lse, ref.lse)):
        bound = tolerance.bound_for(name, ref, dtype=q.dtype, head_dim=case.head_dim)
        finite = torch.isfinite(expected)
        error = (got.double() - expected).abs().where(finite, torch.zeros((), dtype=torch.float64))
        assert (error <= bound.model).all(), (
            f"{name}: plain error {float(error.max()):.3e} exceeds the model "
            f"(ratio {float((error / bound.model).max()):.3g}) for {case.spec()}"
        )


def test_allowed_error_is_ordered_by_precision():
    case = Case(seqlen_q=24, seqlen_k=40, head_dim=32, dtype="float32")
    _, ref = _reference(case)
    allowed = {
        name: tolerance.bound_for("out", ref, dtype=dtype, head_dim=32).allowed
        for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32))
    }
    assert (allowed["bf16"] > allowed["fp16"]).all() and (allowed["fp16"] > allowed["fp32"]).all()
    tf32 = tolerance.bound_for("out", ref, dtype=torch.float32, head_dim=32, tf32=True).allowed
    assert (tf32 > allowed["fp32"]).all()


def test_model_is_not_vacuous_for_ordinary_data():
    """For N(0, 1) inputs in 16-bit dtypes the allowed error stays a few units of
    roundoff relative to the values."""
    for dtype, unit in (("float16", 2**-11), ("bfloat16", 2**-8)):
        case = Case(seqlen_q=64, seqlen_k=64, head_dim=64, dtype=dtype)
        (q, k, v), ref = _reference(case)
        allowed = tolerance.bound_for("out", ref, dtype=q.dtype, head_dim=64).allowed
        assert float(allowed.max()) < 8 * unit * float(v.double().abs().max()), dtype


def _round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    bits = x.float().contiguous().view(torch.int32)
    bits = (bits + 0x1000) & ~0x1FFF  # keep 10 mantissa bits, rounding half up
    return bits.view(torch.float32)


def test_a_float32_path_computing_in_tf32_is_flagged():
    case = Case(seqlen_q=64, seqlen_k=64, head_dim=64, dtype="float32")
    q, k, v = case.materialize()
    exp = expectation.expect(q, k, v)
    exp.check_out(same_precision.attention(q, k, v)[0])
    tf32_out, _ = same_precision.attention(_round_to_tf32(q), _round_to_tf32(k), _round_to_tf32(v))
    with pytest.raises(Violation):
        exp.check_out(tf32_out)
    assert expectation.expect(q, k, v, tf32=True).out.allowed.max() > exp.out.allowed.max()


def test_an_error_inside_the_worst_case_but_uniformly_large_is_flagged():
    """Worst-case bounds of float32 outputs are dominated by logit error; the aggregate
    rule against the plain float32 attention still notices an error at 90% of them."""
    case = Case(seqlen_q=64, seqlen_k=64, head_dim=64, dtype="float32")
    q, k, v = case.materialize()
    exp = expectation.expect(q, k, v)
    degraded = (exp.ref.out + 0.9 * exp.out.model).float()
    with pytest.raises(Violation, match="uniformly less accurate"):
        exp.check_out(degraded)


def _lse_summed_in_chains(q, k, chains):
    """A correct flash-style lse of dense, unmasked, MQA ``q, k`` (one KV head): float32
    logits and probabilities, each row's denominator summed in ``chains`` float32 chains of
    interleaved keys (a thread's share of every key block), the chains then added."""
    logits = torch.einsum("bqhd,bkd->bhqk", q.float(), k[:, :, 0].float()) * q.shape[-1] ** -0.5
    row_max = logits.amax(-1, keepdim=True)
    weights = torch.exp(logits - row_max).numpy()
    total = 0
    for chain in range(chains):
        total = total + numpy.add.accumulate(weights[..., chain::chains], axis=-1, dtype=numpy.float32)[..., -1]
    return row_max.squeeze(-1) + torch.log(torch.from_numpy(total))


def test_an_lse_summed_in_per_thread_float32_chains_meets_the_aggregate_rule():
    """A flash kernel's denominator is a float32 sum in registers, one chain per thread across
    key blocks; on long rows of near-equal probabilities its roundings add up to several ulps
    of the lse where the plain attention's one reduction is off by about one. torch's flash
    backend was flagged by the aggregate rule on this case (H100), every element inside its
    bound; four chains (its quad of threads a row) are as far off here as it was."""
    case = Case.from_spec("batch=2 seqlen_q=3329 seqlen_k=3329 heads=2 kv_heads=1 head_dim=1 dtype=float16 "
                          "causal=False window=-1,-1 softmax_scale=None layout=contiguous values=small seed=0")
    q, k, v = case.materialize()
    exp = expectation.expect(q, k, v)
    chained = _lse_summed_in_chains(q, k, chains=4)
    assert float((chained.double() - exp.ref.lse).abs().max()) > 6e-6  # what the kernel showed
    exp.check_lse(chained)


def test_an_lse_error_inside_the_worst_case_but_uniformly_large_is_flagged():
    case = Case(seqlen_q=256, seqlen_k=256, head_dim=64, dtype="float32")
    q, k, v = case.materialize()
    exp = expectation.expect(q, k, v)
    with pytest.raises(Violation, match="uniformly less accurate"):
        exp.check_lse((exp.ref.lse + 0.9 * exp.lse.model).float())


def test_empty_rows_allow_nothing_but_the_exact_values():
    case = Case(seqlen_q=6, seqlen_k=3, causal=True)
    _, ref = _reference(case)
    lse = tolerance.bound_for("lse", ref, dtype=torch.float16, head_dim=case.head_dim)
    assert (lse.allowed[..., :3] == 0).all() and (lse.allowed[..., 3:] > 0).all()
    out = tolerance.bound_for("out", ref, dtype=torch.float16, head_dim=case.head_dim)
    assert (out.allowed[:, :3] <= torch.finfo(torch.float16).tiny).all()


def test_the_same_precision_error_widens_the_allowance_only_where_it_is_worse_than_the_model():
    case = Case(seqlen_q=16, seqlen_k=16)
    (q, k, v), ref = _reference(case)
    honest = same_precision.attention(q, k, v)
    bound = tolerance.bound_for("out", ref, dtype=q.dtype, head_dim=case.head_dim, same_precision=honest)
    assert torch.equal(bound.allowed, torch.maximum(bound.model, bound.same_precision))
    noisy_out = (ref.out + 0.25).to(q.dtype)
    widened = tolerance.bound_for("out", ref, dtype=q.dtype, head_dim=case.head_dim,
                                  same_precision=(noisy_out, honest[1]))
    assert (widened.allowed >= 2 * 0.24).all()


def test_logit_error_grows_with_logit_magnitude():
    small = _reference(Case(seqlen_q=8, seqlen_k=8, values="small"))[1]
    large = _reference(Case(seqlen_q=8, seqlen_k=8, values="large-logits"))[1]
    kw = dict(dtype=torch.float16, head_dim=16)
    assert tolerance.logit_error(large, **kw).min() > tolerance.logit_error(small, **kw).max()


@given(case=strategies.cases(sizes=SMALL))
def test_gradient_model_bounds_the_plain_same_precision_backward(case):
    """The cross-check for gradients: the model alone covers a plain backward's rounding."""
    (q, k, v), kwargs = _dense(case)
    generator = torch.Generator().manual_seed(case.seed)
    grad_out = torch.randn(q.shape, generator=generator).to(q.dtype)
    grad_lse = torch.randn(case.batch, case.heads, case.seqlen_q, generator=generator)
    forward = expectation.expect(q, k, v, **kwargs)
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    bounds = tolerance.gradient_bounds(
        grads, forward.ref, forward.out, forward.lse, grad_out,
        dtype=q.dtype, head_dim=case.head_dim, scale=case.scale,
    )
    observed = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name, got in zip(("dq", "dk", "dv"), observed):
        error = (got.double() - getattr(grads, name)).abs()
        model = bounds[name].model
        assert (error <= model).all(), (
            f"{name}: plain error {float(error.max()):.3e} exceeds the model "
            f"(ratio {float((error / model).max()):.3g}) for {case.spec()}"
        )


def test_an_overflowing_same_precision_result_never_widens_the_allowance():
    case = Case(seqlen_q=8, seqlen_k=8)
    (q, k, v), ref = _reference(case)
    overflowed = torch.full_like(ref.out, float("inf")).to(q.dtype)
    bound = tolerance.bound_for("out", ref, dtype=q.dtype, head_dim=case.head_dim,
                                same_precision=(overflowed, torch.full_like(ref.lse, float("inf")).float()))
    assert torch.isfinite(bound.allowed).all() and torch.equal(bound.allowed, bound.model)
    assert tolerance.aggregate_limit("out", ref, (overflowed, None), dtype=q.dtype, head_dim=case.head_dim) < 1


def test_a_value_far_beyond_the_dtype_range_is_expected_as_infinity():
    """A gradient of 163422 in float16 (found by hypothesis on sdpa-math) rounds to inf:
    returning inf is right, returning a large finite number is not."""
    exact = torch.tensor([163422.0, -70000.0, 65000.0], dtype=torch.float64)
    allowed = torch.full_like(exact, 100.0)
    right = torch.tensor([float("inf"), float("-inf"), 65024.0], dtype=torch.float16)
    compare.check_close("dk", right, expectation.held_to(exact, right, allowed), allowed)
    for wrong in ([65504.0, float("-inf"), 65024.0], [float("inf"), float("inf"), 65024.0],
                  [float("inf"), float("-inf"), float("inf")]):
        wrong = torch.tensor(wrong, dtype=torch.float16)
        with pytest.raises(Violation):
            compare.check_close("dk", wrong, expectation.held_to(exact, wrong, allowed), allowed)


def test_near_the_top_of_the_range_a_result_may_overflow_or_stay_finite_as_the_allowance_permits():
    """Found on an H100 with the project kernel (float16, outliers, dO of scale 1e3): an exact
    dQ of 66183.8 rounds to inf in float16, and the kernel returned 65056, an error of 1128
    against an allowance of 18640. Either result lies within the allowed error; what is
    held to the allowance is the distance to the exact value, not bitwise agreement with
    its rounding. Where the allowance does not reach the overflow threshold (65520), an
    infinity is still wrong."""
    assert expectation.overflow_threshold(torch.float16) == 65520.0
    assert torch.tensor(65519.0, dtype=torch.float64).to(torch.float16).isfinite()
    assert torch.tensor(65520.0, dtype=torch.float64).to(torch.float16).isinf()
    exact = torch.tensor([66183.77, 65000.0, -65400.0], dtype=torch.float64)
    allowed = torch.tensor([18640.0, 600.0, 100.0], dtype=torch.float64)
    for good in ([65056.0, float("inf"), -65408.0], [float("inf"), 65504.0, -65376.0]):
        good = torch.tensor(good, dtype=torch.float16)
        compare.check_close("dq", good, expectation.held_to(exact, good, allowed), allowed)
    # too far from the exact value; the wrong infinity; an infinity the allowance does not reach
    for wrong in ([45056.0, 65504.0, -65408.0], [65056.0, float("-inf"), -65408.0],
                  [65056.0, 65504.0, float("-inf")]):
        wrong = torch.tensor(wrong, dtype=torch.float16)
        with pytest.raises(Violation):
            compare.check_close("dq", wrong, expectation.held_to(exact, wrong, allowed), allowed)


def _gradients_with_probabilities_flushed(q, k, v, grad_out, scale):
    """Float64 gradients of a dense unmasked case whose probabilities below the smallest
    normal float32 are flushed to zero, as exp2 with flush-to-zero does on GPUs."""
    q, k, v, do = (t.double().transpose(1, 2) for t in (q, k, v, grad_out))
    exact = torch.softmax(scale * q @ k.transpose(-1, -2), dim=-1)
    p = torch.where(exact < tolerance.FLOAT32_TINY, torch.zeros_like(exact), exact)
    delta = (do * (exact @ v)).sum(-1, keepdim=True)  # from the forward's output
    ds = p * (do @ v.transpose(-1, -2) - delta)
    grads = scale * ds @ k, scale * ds.transpose(-1, -2) @ q, p.transpose(-1, -2) @ do
    return tuple(g.transpose(1, 2) for g in grads)


def test_gradient_model_covers_probabilities_flushed_to_zero():
    """Found on an H100: with logits of several hundred, probabilities below 2^-126 are
    flushed to zero, so dK entries of about 1e-37 come out 0. The underflow terms of the
    gradient model cover exactly that, and without them (and the products' flush terms,
    which cover it here too) the model would not."""
    case = Case.from_spec("batch=1 seqlen_q=127 seqlen_k=127 heads=1 kv_heads=1 head_dim=16 dtype=bfloat16 "
                          "causal=False window=-1,-1 softmax_scale=None layout=contiguous values=large-logits seed=0")
    q, k, v = case.materialize()
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(q.dtype)
    expected = expectation.expect_gradients(q, k, v, grad_out)
    flushed = _gradients_with_probabilities_flushed(q, k, v, grad_out, case.scale)
    exact = reference.gradients(q, k, v, grad_out)
    forward = expectation.expect(q, k, v)
    without_underflow = tolerance.gradient_bounds(
        exact, forward.ref, forward.out, forward.lse, grad_out, dtype=q.dtype, head_dim=case.head_dim, scale=case.scale,
    )
    # Without the probabilities' underflow terms and the products' flush terms alike.
    flush = tolerance.product_flush_terms(case.seqlen_q, forward.ref.keys, case.scale)
    uncovered = 0
    for name, got in zip(("dq", "dk", "dv"), flushed):
        error = (got - getattr(exact, name)).abs()
        assert (error <= expected.bounds[name].model).all(), name
        uncovered += int((error > without_underflow[name].model - tolerance.SAFETY * flush[name]).sum())
    assert uncovered > 0, "the case no longer exercises underflow; pick one that does"


def test_gradient_model_covers_products_flushed_to_zero_where_their_sum_is_normal():
    """Found on an H200 (cuDNN, public SDPA): dV of a key came out 0 where float64 gives
    1.47e-38, the sum of two products P·dO of 1.09e-38 and 3.80e-39, each below 2^-126 though
    both probabilities are normal: a kernel that flushes subnormal products loses them."""
    case = Case.from_spec("batch=1 seqlen_q=1 seqlen_k=64 heads=16 kv_heads=4 head_dim=128 dtype=bfloat16 "
                          "causal=False window=-1,-1 softmax_scale=3.5284684963950532 layout=contiguous "
                          "values=normal seed=160")
    q, k, v = case.materialize()
    grad_out, _ = backward_inputs.upstream(case, torch.empty(case.out_shape, dtype=case.torch_dtype), None)
    expected = expectation.expect_gradients(q, k, v, grad_out, softmax_scale=case.softmax_scale)
    exact = expected.grads.dv[0, 11, 0, 52].item()
    assert 2.0**-126 < exact < 2.0**-124  # normal, with every product of its sum subnormal
    bound = expected.bounds["dv"]
    assert bound.model[0, 11, 0, 52] >= exact, "a result of 0 (every product flushed) is within the model"
    terms = tolerance.product_flush_terms(case.seqlen_q * 4, torch.ones(1, 16, 1), case.scale)
    assert bound.model[0, 11, 0, 52] - tolerance.SAFETY * terms["dv"] < exact, "and only through the flush terms"
    assert float(bound.model.max()) < 1e-2, "ordinary gradients keep their bounds"
