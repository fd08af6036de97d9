"""The backward's ``delta_i = dO_i·O_i`` is consistent with the probabilities it recomputes:
taken from the output before it is rounded to 16 bits, and from an output whose weights sum
to one as rounded for ``P·V``.

Found on an H100 by `flashcheck fuzz --budget 60`: float16 dQ was ``inf`` where float64
gives -619.9 (the case below). Where one key dominates a row, the exact dS of that row
nearly cancels (``dP_ij - delta_i`` with ``delta_i = Σ_j P_ij dP_ij``), so any error in
``delta_i`` lands whole on dS: an output rounded to float16 carries an error of up to half an
ulp per element, which ``delta_i`` multiplies by ``‖dO_i‖``, and dQ = scale·dS·K carries it
on, past float16's range for large logits and upstream gradients. Whether a given row shows
it depends on which way each element of O happens to round, which depends on the last bits
of the forward's sums: the Triton interpreter (exact float32 dots, another summation order)
rounded the fuzzed case's outputs harmlessly, so CPU fuzzing never saw it. The constructed
case here makes the rounding certain on any device: every output element sits 0.37 ulp
away from its float16 value.
"""

from __future__ import annotations

import pytest
import torch

from flashcheck.cases.case import Case
from flashcheck.kernels import flash_attention, mutations
from flashcheck.oracle import expectation
from flashcheck.oracle.compare import Violation
from flashcheck.properties import PROPERTIES

#: The fuzzer's counterexample (GPU only: see the module docstring).
FUZZED_ON_H100 = Case.from_spec(
    "batch=1 seqlen_q=255 seqlen_k=97 heads=7 kv_heads=1 head_dim=128 dtype=float16 causal=False window=184,2 "
    "softmax_scale=3.0806356527479806 layout=padded values=outliers seed=5874935 mask=key-padding:14"
)


def one_dominant_key(device):
    """One query, two keys: key 0 takes all but ``eps ≈ 7.5e-4`` of the weight, and
    ``O = (1 - eps)·v0 + eps·v1 = 1500 - 0.37`` in every element, which float16 rounds to
    1500 (its spacing there is 1). With ``dO = 1000``, delta from the rounded output is off
    by ``16 · 0.37 · 1000 ≈ 5.9e3``, the whole of the exact dS of key 0; K's shared part
    (20 in every element) then carries that error into dQ as ``1.2e5``, beyond float16."""
    d = 16
    q = torch.zeros(1, 1, 1, d)
    q[..., 0] = 7.2  # q·k0 - q·k1 = 7.2: eps = 1 / (1 + e^7.2)
    k = torch.full((1, 2, 1, d), 20.0)
    k[0, 0, 0, 0] += 1.0
    v = torch.empty(1, 2, 1, d)
    v[0, 0], v[0, 1] = 1500.0, 1000.0
    grad_out = torch.full((1, 1, 1, d), 1000.0)
    return [t.to(torch.float16).to(device) for t in (q, k, v, grad_out)]


def test_gradients_stay_exact_where_the_rounded_output_would_shift_delta(device):
    q, k, v, grad_out = one_dominant_key(device)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = flash_attention(*leaves, softmax_scale=1.0)
    assert torch.all(out.float() == 1500.0)  # the premise: every element of O rounded
    dq, dk, dv = torch.autograd.grad(out, leaves, grad_out)
    expected = expectation.expect_gradients(q, k, v, grad_out, softmax_scale=1.0)
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        expected.check(name, got)

#: The fuzzer's counterexample of the rounded weights (GPU only, as above): dQ was -inf where
#: float64 gives 754.1. Outliers a hundred times the rest make some values large and one key
#: dominate; the output normalised by the unrounded sum was off by up to 0.14, delta by 327,
#: and dQ by 5.6e4 on an element whose own value is small. On the CPU the same case's output
#: was off by 0.018 only: how far the rounded weights sum from the unrounded ones depends on
#: the last bits of each probability, so on the device's exp2, summation order and tiles.
ROUNDED_WEIGHTS_ON_H100 = Case.from_spec(
    "batch=1 seqlen_q=2058 seqlen_k=266 heads=1 kv_heads=1 head_dim=256 dtype=float16 causal=False window=-1,-1 "
    "softmax_scale=-1.0 layout=heads-first values=outliers seed=245900321"
)


@pytest.mark.gpu
@pytest.mark.parametrize("case", [FUZZED_ON_H100, ROUNDED_WEIGHTS_ON_H100], ids=["rounded-output", "rounded-weights"])
def test_the_fuzzed_float16_cases_hold_on_the_gpu(device, case):
    PROPERTIES["grads_match_reference"].check(flash_attention, case, device=device)


def test_the_constructed_case_catches_delta_taken_from_the_rounded_output(device):
    mutant = mutations.implementation(mutations.MUTATIONS["delta_from_rounded_output"])
    q, k, v, grad_out = one_dominant_key(device)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = mutant(*leaves, softmax_scale=1.0)
    dq, _, _ = torch.autograd.grad(out, leaves, grad_out)
    expected = expectation.expect_gradients(q, k, v, grad_out, softmax_scale=1.0)
    with pytest.raises(Violation, match="dq differs"):
        expected.check("dq", dq)


#: A logit gap whose probability exp(-gap) = 0.73898 float16 rounds 0.42 of its spacing
#: away (to 0.73877), far from a tie, so that every device rounds it the same way.
ROUNDED_GAP = 0.302490234375


def rounded_weight_pair(device):
    """One query, two keys that share a component of 200, values that share one of 1500, and
    dO = 1000. ``P = (1, e^-gap) / (1 + e^-gap)``; rounded for ``P·V``, key 1's weight is off
    by 2.1e-4. Normalised by the unrounded sum, every element of O is then off by
    1500·2.1e-4/1.74 ≈ 0.18, delta = dO·O by 16·1000·0.18 ≈ 2.8e3, and dQ = scale·Σ_j dS_j·k_j
    by that times the keys' shared 200: 5.7e5, past float16's range, where the exact dQ is
    (P_0·P_1·16·1000, 0, ..., 0) = (3.9e3, 0, ...). (An error below float16's range would
    pass: the tolerance allows delta the error of an output rounded to 16 bits, which is
    larger.)"""
    d = 16
    q = torch.zeros(1, 1, 1, d)
    q[..., 0] = ROUNDED_GAP
    k = torch.full((1, 2, 1, d), 200.0)
    k[0, 0, 0, 0] += 1.0
    v = torch.full((1, 2, 1, d), 1500.0)
    v[0, 0] += 1.0
    grad_out = torch.full((1, 1, 1, d), 1000.0)
    return [t.to(torch.float16).to(device) for t in (q, k, v, grad_out)]


def test_the_constructed_pair_rounds_its_weight_far_from_a_tie():
    weight = torch.exp2(torch.tensor(-ROUNDED_GAP * 1.4426950408889634, dtype=torch.float32))
    spacing = 2.0**-11  # float16's spacing in [0.5, 1)
    assert 0.4 < abs(float(weight) - float(weight.to(torch.float16))) / spacing < 0.45


def _pair_gradients(impl, device):
    q, k, v, grad_out = rounded_weight_pair(device)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = impl(*leaves, softmax_scale=1.0)
    grads = torch.autograd.grad(out, leaves, grad_out)
    return grads, expectation.expect_gradients(q, k, v, grad_out, softmax_scale=1.0)


def test_gradients_stay_exact_where_the_rounded_weights_would_shift_the_output(device):
    (dq, dk, dv), expected = _pair_gradients(flash_attention, device)
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        expected.check(name, got)


def test_the_constructed_pair_catches_an_output_normalised_by_the_unrounded_sum(device):
    mutant = mutations.implementation(mutations.MUTATIONS["output_normalised_by_unrounded_sum"])
    (dq, _, _), expected = _pair_gradients(mutant, device)
    with pytest.raises(Violation, match="dq differs"):
        expected.check("dq", dq)


#: A drawn case of the offset-values kind (q × 4, k + 256, v × 4 + 1500, dO of scale 1e3 by its
#: seed) on which the output normalised by the unrounded sum overflows dQ in the interpreter.
OFFSET_VALUES = Case.from_spec("batch=1 seqlen_q=2 seqlen_k=3 heads=7 kv_heads=1 head_dim=16 dtype=float16 "
                               "causal=False window=-1,-1 softmax_scale=None layout=contiguous values=offset-values "
                               "seed=11")


@pytest.mark.cpu  # which rounded weights fall which way follows the device's last bits (above)
def test_the_offset_values_kind_reaches_the_output_normalised_by_the_unrounded_sum():
    mutant = mutations.implementation(mutations.MUTATIONS["output_normalised_by_unrounded_sum"])
    with pytest.raises(Violation, match="dq differs"):
        PROPERTIES["grads_match_reference"].check(mutant, OFFSET_VALUES, device="cpu")
    PROPERTIES["grads_match_reference"].check(flash_attention, OFFSET_VALUES, device="cpu")


#: Found on four H200s by an unseeded campaign (GPU only, as above): float16 dQ was -inf where
#: float64 gives 452.9. With offset values and dO of scale 1e3, dP = dO·v and delta = dO·O are
#: both about 2e7 in the failing row, summed in float32 two different ways; their rounding
#: errors, about 100, times the scale 4 and the keys' offset 256, pass float16's range.
SHARED_OFFSET_ON_H200 = Case.from_spec(
    "batch=1 seqlen_q=16 seqlen_k=16 heads=11 kv_heads=11 head_dim=127 dtype=float16 causal=False window=0,-1 "
    "softmax_scale=-4.0 layout=heads-first values=offset-values seed=4697 seqlens=16:16"
)


@pytest.mark.gpu
def test_the_fuzzed_shared_offset_case_holds_on_the_gpu(device):
    PROPERTIES["grads_match_reference"].check(flash_attention, SHARED_OFFSET_ON_H200, device=device)


def shared_offset_pair(device, seed):
    """One query, two keys; 128 columns of values all 30000 (key 0's first one 30016) and dO
    about 30000 (± 1%). ``dO·v`` is then about 1.2e11, where float32's spacing is 8192, so the
    dot and delta's elementwise sum each round by thousands; the exact ``dP_j - delta`` is
    ``dO_0·16·(P_j - [j = 0])``, under 5e3. The keys share a component of 200, which carries
    ``Σ_j dS_j`` (exactly 0) into every element of dQ: any rounding error left in
    ``dP - delta`` above 330 overflows it, on any device, where the exact dQ is (4.7e3, 0, …)."""
    generator = torch.Generator().manual_seed(seed)
    d = 128
    q = torch.zeros(1, 1, 1, d)
    q[..., 0] = 4.6  # key 1 takes 1% of the weight
    k = torch.full((1, 2, 1, d), 200.0)
    k[0, 0, 0, 0] += 1.0
    v = torch.full((1, 2, 1, d), 30000.0)
    v[0, 0, 0, 0] += 16.0  # float16's spacing at 30000
    grad_out = 30000.0 * (1 + 0.01 * torch.randn(1, 1, 1, d, generator=generator))
    return [t.to(torch.float16).to(device) for t in (q, k, v, grad_out)]


def _offset_pair_dq(impl, device, seed):
    q, k, v, grad_out = shared_offset_pair(device, seed)
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = impl(*leaves, softmax_scale=1.0)
    dq, _, _ = torch.autograd.grad(out, leaves, grad_out)
    return dq, expectation.expect_gradients(q, k, v, grad_out, softmax_scale=1.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_stay_finite_where_the_values_share_a_large_offset(device, seed):
    dq, expected = _offset_pair_dq(flash_attention, device, seed)
    assert torch.isfinite(dq).all()
    expected.check("dq", dq)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_offset_pair_catches_delta_with_the_shared_offset(device, seed):
    mutant = mutations.implementation(mutations.MUTATIONS["delta_with_shared_offset"])
    dq, expected = _offset_pair_dq(mutant, device, seed)
    with pytest.raises(Violation, match="dq differs"):
        expected.check("dq", dq)


def test_the_shared_offset_is_exact_to_subtract_and_zero_where_there_is_none():
    from flashcheck.kernels.backward import shared_offset

    v = torch.randn(2, 9, 3, 8).to(torch.float16)
    v[1, :, 2] = v[1, :, 2] * 4 + 1500  # batch 1, KV head 2: a shared offset in every column
    v[0, 3, 1, 5] = float("nan")  # a NaN value leaves its column unshifted
    shifted, offset = shared_offset(v, varlen=False)
    assert offset.shape == (2, 3, 8) and offset.dtype == torch.float32
    assert torch.all((offset[1, 2] - 1500).abs() <= 16)
    assert torch.count_nonzero(offset) == 8
    restored = shifted.double() + offset.double().unsqueeze(1)
    assert torch.equal(restored.isnan(), v.isnan())
    assert torch.equal(restored.nan_to_num(), v.double().nan_to_num())  # every subtraction exact
    packed, packed_offset = shared_offset(v[1], varlen=True)
    assert torch.equal(packed, shifted[1]) and torch.equal(packed_offset, offset[1:])
