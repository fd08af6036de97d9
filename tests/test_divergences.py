"""The causes that known divergences of torch's SDPA backends are confined to: each
predicate holds on the case the divergence was found on (recorded on an H100, see
flashcheck.adapters), and not on the same case in bfloat16 or on ordinary cases."""

from __future__ import annotations

import pytest
import torch

from flashcheck import adapters, protocol
from flashcheck.case import Case
from flashcheck.divergences import (
    KnownDivergence, backward_extremes, float16_backward_overflows, float16_subnormal_probabilities, under,
)

#: sdpa-cudnn's dQ was NaN where -9147.75 is exact: |dS| reaches 1.0e5.
CUDNN_DS = Case.from_spec("batch=1 seqlen_q=127 seqlen_k=127 heads=1 kv_heads=1 head_dim=160 dtype=float16 "
                          "softmax_scale=1.0 values=outliers seed=122876")
#: sdpa-flash's dK was NaN where -12235.5 is exact: |dS| stays below 2e3, but one query
#: head's own dK reaches 3.0e5 (two query heads share the KV head).
FLASH_GQA = Case.from_spec("batch=1 seqlen_q=31 seqlen_k=31 heads=2 kv_heads=1 head_dim=16 dtype=float16 "
                           "values=offset-logits seed=68")
#: sdpa-efficient's dK was off by 1.9x its allowance: 96% of the probabilities are below 2^-14.
EFFICIENT_P = Case.from_spec("batch=1 seqlen_q=31 seqlen_k=31 heads=1 kv_heads=1 head_dim=16 dtype=float16 "
                             "values=large-logits seed=230")
#: sdpa-flash's dK was -inf where -628.6 is exact, on the dS-range property's scaled inputs
#: (q, k by 1/8, v by 64, dO of scale 1e3): there the exact |dS| reaches 6.9e4.
FLASH_DS_RANGE = Case.from_spec("batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=16 dtype=float16 seed=0")
ORDINARY = Case(batch=1, seqlen_q=8, seqlen_k=8, heads=2, kv_heads=1, head_dim=16, dtype="float16", seed=1)


def test_the_overflow_cause_holds_on_the_cases_where_the_peers_returned_nan():
    assert backward_extremes(CUDNN_DS).ds > 65504
    assert backward_extremes(FLASH_GQA).ds < 65504 < backward_extremes(FLASH_GQA).per_head_dk
    assert float16_backward_overflows(CUDNN_DS) and float16_backward_overflows(FLASH_GQA)


def test_a_per_head_overflow_counts_only_where_kv_heads_are_shared():
    assert not float16_backward_overflows(FLASH_GQA.replace(heads=1))


@pytest.mark.parametrize("case", [CUDNN_DS, FLASH_GQA, EFFICIENT_P])
def test_the_float16_causes_do_not_cover_bfloat16(case):
    bf16 = case.replace(dtype="bfloat16")
    assert not float16_backward_overflows(bf16) and not float16_subnormal_probabilities(bf16)


def test_the_subnormal_cause_holds_where_probabilities_fall_below_float16s_normal_range():
    assert float16_subnormal_probabilities(EFFICIENT_P)
    assert backward_extremes(ORDINARY).smallest_probability > 2.0**-14
    assert not float16_subnormal_probabilities(ORDINARY) and not float16_backward_overflows(ORDINARY)


def test_declared_reasons_become_divergences_of_every_case():
    impl = lambda q, k, v, **kwargs: None  # noqa: E731
    scoped = KnownDivergence("scoped", lambda case: case.causal)
    impl.flashcheck_known_divergences = {"deterministic": "a race", "out_matches_reference": scoped}
    known = protocol.known_divergences(impl)
    assert str(known["deterministic"]) == "a race" and not known["deterministic"].scoped
    assert known["deterministic"].explains(ORDINARY)
    assert known["out_matches_reference"].explains(ORDINARY.replace(causal=True))
    assert not known["out_matches_reference"].explains(ORDINARY)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
def test_the_fused_backends_gradient_divergences_are_confined_to_float16(name):
    known = protocol.known_divergences(adapters.resolve(name))["grads_match_reference"]
    assert known.scoped and not known.explains(CUDNN_DS.replace(dtype="bfloat16"))
    assert known.explains(CUDNN_DS)


def _extremes_by_autograd(case: Case) -> tuple:
    """The extremes through autograd on all heads at once, KV heads repeated: dS is the
    gradient of the (scaled) scores, a query head's own dK and dV the gradients of its repeated copy."""
    from flashcheck.properties.gradients import upstream

    q, k, v = (t.to(torch.float64).transpose(1, 2) for t in case.materialize("cpu")[:3])
    group = case.heads // case.kv_heads
    k, v = (t.repeat_interleave(group, dim=1).detach().requires_grad_() for t in (k, v))
    q = q.detach().requires_grad_()
    allowed = case.allowed("cpu")
    has_keys = allowed.any(-1, keepdim=True)  # rows without keys get probability 0, gradient 0
    scores = (case.scale * q @ k.transpose(-1, -2)).masked_fill(~allowed, float("-inf")).masked_fill(~has_keys, 0.0)
    scores.retain_grad()
    probs = torch.softmax(scores, dim=-1) * has_keys
    grad_out = upstream(case, torch.empty(case.out_shape, dtype=case.torch_dtype), None)[0]
    (probs @ v).backward(grad_out.to(torch.float64).transpose(1, 2))
    probs = probs.detach()
    return float(scores.grad.abs().max()), float(k.grad.abs().max()), float(v.grad.abs().max()), float(probs[probs > 0].min())


@pytest.mark.parametrize("case", [
    FLASH_GQA,
    Case(batch=2, seqlen_q=20, seqlen_k=24, heads=4, kv_heads=2, mask="random:0.5,shape:BHQK", dtype="float16"),
    Case(seqlen_q=20, seqlen_k=24, heads=4, kv_heads=1, mask="random:0.3,shape:1HQK", window=(3, 2)),
], ids=["gqa", "per-head-mask", "window-and-mask"])
def test_the_extremes_computed_head_by_head_match_autograd_on_all_heads(case):
    extremes = backward_extremes(case)
    ds, dk, dv, smallest = _extremes_by_autograd(case)
    assert extremes.ds == pytest.approx(ds, rel=1e-9) and extremes.scaled_ds == pytest.approx(case.scale * ds, rel=1e-9)
    assert extremes.per_head_dk == pytest.approx(dk, rel=1e-9)
    assert extremes.per_head_dv == pytest.approx(dv, rel=1e-9)
    assert extremes.smallest_probability == pytest.approx(smallest, rel=1e-9)


def test_the_overflow_cause_is_computed_on_the_inputs_the_property_ran():
    assert backward_extremes(FLASH_DS_RANGE).ds < 65504 < backward_extremes(FLASH_DS_RANGE, "ds_range").ds
    assert not float16_backward_overflows(FLASH_DS_RANGE)
    assert under("ds_range", float16_backward_overflows)(FLASH_DS_RANGE)
    assert not under("ds_range", float16_backward_overflows)(FLASH_DS_RANGE.replace(dtype="bfloat16"))


def test_an_unknown_stress_is_refused():
    with pytest.raises(ValueError, match="stress"):
        backward_extremes(ORDINARY, "scaled")
    with pytest.raises(ValueError, match="stress"):
        under("scaled", float16_backward_overflows)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
def test_the_fused_backends_ds_range_divergences_are_confined_to_float16_overflow(name):
    known = protocol.known_divergences(adapters.resolve(name))["grads_match_reference_where_ds_exceeds_float16"]
    assert known.scoped and known.explains(FLASH_DS_RANGE)
    assert not known.explains(FLASH_DS_RANGE.replace(dtype="bfloat16"))
