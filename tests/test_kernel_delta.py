"""The backward's ``delta_i = dO_i·O_i`` is consistent with the probabilities it recomputes:
taken from the output before it is rounded to 16 bits, and from an output whose weights sum
to one as rounded for ``P·V``.

Found on an H100 by `flashcheck fuzz --budget 60`: float16 dQ was ``inf`` where float64
gives -619.9 (the case is kept, with the others fuzzing found, in ``kernels/counterexamples.toml``,
which ``tests/test_kernel_counterexamples.py`` checks). Where one key dominates a row, the exact dS of that row
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

from flashcheck.kernels import backward, flash_attention, mutations
from flashcheck.oracle import expectation, reference


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

#: The constructed cases below are far inside the tolerance model's allowance (it allows delta
#: the error of an output rounded to 16 bits, which these cases make large), and the kernel
#: keeps the keys' shared offset out of dQ (see ``_dq``), so no bug of delta overflows dQ here
#: any more: their teeth are the gradients' error relative to the largest exact gradient.
#: float16 rounds at 2^-11 relative; 1% is twenty times that. The kernel stays under 0.5% on
#: every constructed case; each bug below gives 5% or more.
NORMWISE_LIMIT = 1e-2


def normwise_errors(impl, inputs) -> dict[str, float]:
    """``max|got - exact| / max|exact|`` of dQ, dK and dV of ``impl`` on ``(q, k, v, dO)``."""
    q, k, v, grad_out = inputs
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = impl(*leaves, softmax_scale=1.0)
    got = torch.autograd.grad(out, leaves, grad_out)
    exact = reference.gradients(q, k, v, grad_out, softmax_scale=1.0)
    exact = (exact.dq, exact.dk, exact.dv)
    return {name: float((g.double() - e).abs().max() / e.abs().max()) for name, g, e in zip(("dq", "dk", "dv"), got, exact)}


def test_the_constructed_case_catches_delta_taken_from_the_rounded_output(device):
    inputs = one_dominant_key(device)
    assert max(normwise_errors(flash_attention, inputs).values()) < NORMWISE_LIMIT
    mutant = mutations.implementation(mutations.MUTATIONS["delta_from_rounded_output"])
    assert max(normwise_errors(mutant, inputs).values()) > NORMWISE_LIMIT


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
    inputs = rounded_weight_pair(device)
    assert max(normwise_errors(flash_attention, inputs).values()) < NORMWISE_LIMIT
    mutant = mutations.implementation(mutations.MUTATIONS["output_normalised_by_unrounded_sum"])
    assert max(normwise_errors(mutant, inputs).values()) > NORMWISE_LIMIT


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


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_stay_accurate_where_the_values_and_keys_share_a_large_offset(device, seed):
    inputs = shared_offset_pair(device, seed)
    assert max(normwise_errors(flash_attention, inputs).values()) < NORMWISE_LIMIT
    q, k, v, grad_out = inputs
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, _ = flash_attention(*leaves, softmax_scale=1.0)
    expected = expectation.expect_gradients(q, k, v, grad_out, softmax_scale=1.0)
    for name, got in zip(("dq", "dk", "dv"), torch.autograd.grad(out, leaves, grad_out)):
        expected.check(name, got)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("bug", ["delta_with_shared_offset", "dq_with_keys_shared_offset"])
def test_the_offset_pair_catches_each_shared_offset_left_in(device, seed, bug):
    mutant = mutations.implementation(mutations.MUTATIONS[bug])
    assert max(normwise_errors(mutant, shared_offset_pair(device, seed)).values()) > NORMWISE_LIMIT


def test_the_shared_offset_is_exact_to_subtract_and_zero_where_there_is_none():
    v = torch.randn(2, 9, 3, 8, generator=torch.Generator().manual_seed(0)).to(torch.float16)
    v[1, :, 2] = v[1, :, 2] * 4 + 1500  # batch 1, KV head 2: a shared offset in every column
    v[1, 3, 2, 5] = float("nan")  # a NaN value leaves its column unshifted
    offset = backward.shared_offset(v)
    assert offset.shape == (2, 3, 8) and offset.dtype == torch.float32
    assert offset[1, 2, 5] == 0 and torch.all((offset[1, 2, torch.arange(8) != 5] - 1500).abs() <= 16)
    assert torch.count_nonzero(offset) == 7  # normal values have no offset to take out
    shifted = backward.without_offset(v, offset)
    restored = shifted.double() + offset.double().unsqueeze(1)
    assert torch.equal(restored.isnan(), v.isnan())
    assert torch.equal(restored.nan_to_num(), v.double().nan_to_num())  # every subtraction exact


def test_packed_sequences_get_the_offsets_of_their_own_dense_calls():
    v = torch.randn(2, 9, 3, 8, generator=torch.Generator().manual_seed(1)).to(torch.float16)
    v[1] = v[1] * 4 + 1500
    cu_seqlens = torch.tensor([0, 9, 9, 18], dtype=torch.int32)  # the second sequence is empty
    packed = torch.cat([v[0], v[1]])
    sequence_of_token = backward.token_sequences(cu_seqlens, packed.shape[0])
    offset = backward.shared_offset(packed, sequence_of_token, sequences=3)
    assert torch.equal(offset[[0, 2]], backward.shared_offset(v)) and torch.all(offset[1] == 0)
    assert torch.equal(backward.without_offset(packed, offset, sequence_of_token),
                       torch.cat(list(backward.without_offset(v, backward.shared_offset(v)))))
