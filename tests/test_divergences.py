"""The causes that known divergences of torch's SDPA backends are confined to: each
predicate holds on the case the divergence was found on (recorded on an H100, see
flashcheck.adapters), and not on the same case in bfloat16 or on ordinary cases."""

from __future__ import annotations

import pytest

from flashcheck import adapters, protocol
from flashcheck.case import Case
from flashcheck.divergences import (
    KnownDivergence, backward_extremes, float16_backward_overflows, float16_subnormal_probabilities,
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
