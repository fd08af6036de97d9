"""``corpus.run_case``: what one case of a baseline or report run says about the implementation.

A case is measured, skipped (a feature it needs is not declared, or the implementation declined
it on purpose), or a finding: the implementation raised, or returned what the protocol does not
allow. flashcheck's own errors are never taken for either.
"""
from __future__ import annotations

import pytest

from flashcheck.cases.case import Case
from flashcheck.regress import corpus
from tests.support import buggy, stubs

CASE = Case.from_spec("batch=1 seqlen_q=8 seqlen_k=8 heads=2 kv_heads=2 head_dim=16 dtype=float32 causal=False "
                      "window=-1,-1 softmax_scale=None layout=contiguous values=normal seed=5")


def test_a_correct_implementation_is_measured_within_its_allowance():
    result = corpus.run_case(buggy.correct, CASE, "cpu")
    assert result.skipped is None and result.raised is None
    assert set(result.outputs) >= {"out", "lse"} and not any(e.exceeded for e in result.outputs.values())


def test_a_case_needing_an_undeclared_feature_is_skipped_unmeasured():
    result = corpus.run_case(stubs.no_features, CASE.replace(causal=True), "cpu")
    assert result.skipped == "needs causal" and not result.outputs and result.raised is None


def test_the_implementations_own_not_implemented_error_is_a_decline():
    result = corpus.run_case(stubs.declines_everything, CASE, "cpu")
    assert result.skipped == "declined: not written yet" and result.raised is None


def test_torchs_not_implemented_error_is_a_finding_not_a_decline():
    result = corpus.run_case(stubs.needs_an_operator_torch_lacks_on_the_cpu, CASE, "cpu")
    assert result.skipped is None and not result.outputs
    assert result.raised.startswith("NotImplementedError: Could not run 'aten::_scaled_dot_product_flash_attention'")


def test_a_result_the_protocol_does_not_allow_is_a_finding():
    result = corpus.run_case(stubs.out_on_meta, CASE, "cpu")
    assert result.skipped is None
    assert result.raised == "Violation: protocol: out must be on q's device cpu, got a tensor on meta"


@pytest.mark.parametrize("error", [NotImplementedError("flashcheck's own"), ValueError("flashcheck's own")],
                         ids=["NotImplementedError", "ValueError"])
def test_flashchecks_own_error_propagates_and_is_neither_a_decline_nor_a_finding(monkeypatch, error):
    def broken_reference(*args, **kwargs):
        raise error

    monkeypatch.setattr(corpus.expectation, "expect", broken_reference)
    with pytest.raises(type(error), match="flashcheck's own"):
        corpus.run_case(buggy.correct, CASE, "cpu")
