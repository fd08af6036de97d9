"""What an implementation claims is what it is held to: a declared differentiable lse (``lse_grad``)."""

from __future__ import annotations

import pytest

from flashcheck import protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.engine.fuzz import fuzz_in_process
from flashcheck.peers import fa4
from kernels import interface
from tests.support import domain_kernels, standalone_kernels


def fuzz_gradients(impl, name: str, cases: int):
    done = []
    return fuzz_in_process(impl, impl_name=name, budget=600, device="cpu", sizes=case_sizes.choose("interpreter"),
                           seed=7, properties=["grads_match_reference"], after_case=done.append,
                           should_stop=lambda: len(done) >= cases)


def test_an_implementation_claiming_a_differentiable_lse_that_detaches_it_fails_naming_the_claim():
    result = fuzz_gradients(domain_kernels.detached_lse, "detached_lse", 10)
    assert result.failures, "a detached lse passed the gradient comparison of an implementation claiming lse_grad"
    assert "declares the feature lse_grad" in result.failures[0].evidence


def test_without_the_claim_a_detached_lse_is_the_implementations_choice():
    result = fuzz_gradients(domain_kernels.detached_lse_unclaimed, "plain", 10)
    assert result.cases >= 10 and not result.failures


@pytest.mark.parametrize("features, missing", [({"lse_grad", "backward"}, "'lse'"), ({"lse_grad", "lse"}, "'backward'")])
def test_the_claim_needs_an_lse_and_a_backward(features, missing):
    def attention(q, k, v, **kwargs):
        return standalone_kernels.correct(q, k, v, **kwargs)

    attention.flashcheck_features = features
    with pytest.raises(ValueError, match=f"names 'lse_grad', which needs 'backward' and 'lse' declared too; "
                                         f"missing: {missing}"):
        protocol.check_declaration(attention)


def test_the_project_kernel_and_the_flashattention_4_adapters_claim_it():
    assert "lse_grad" in interface.FEATURES
    for peer in (fa4.dense(), fa4.deterministic(), fa4.varlen()):
        assert "lse_grad" in protocol.features_of(peer, "cuda")


def test_without_the_claim_every_summary_says_the_lse_gradient_was_not_checked(capsys):
    from flashcheck.oracle.backward_pass import LSE_GRADIENT_UNCHECKED
    from flashcheck.cli import fuzz_console

    result = fuzz_gradients(domain_kernels.detached_lse_unclaimed, "plain", 6)
    assert result.not_checked[LSE_GRADIENT_UNCHECKED]["grads_match_reference"] == result.cases >= 6
    fuzz_console.print_fuzz_result(result, "plain", "cpu")
    assert f"not checked on {result.cases} passed cases (grads_match_reference)" in capsys.readouterr().out
    assert result.to_json(impl_name="plain", device="cpu", budget=1.0)["not_checked"] == {
        LSE_GRADIENT_UNCHECKED: {"grads_match_reference": result.cases}}


def test_check_says_what_a_passing_case_did_not_check(capsys):
    from tests.support.cli_process import flashcheck

    status = flashcheck(["check", "--impl", "tests.support.domain_kernels:detached_lse_unclaimed", "--device", "cpu",
                         "--property", "grads_match_reference", "--case",
                         "batch=1 seqlen_q=4 seqlen_k=4 heads=1 kv_heads=1 head_dim=16 dtype=float32 seed=1"])
    printed = capsys.readouterr().out
    assert status == 0 and "not checked: the lse's gradient" in printed
