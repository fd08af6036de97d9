"""What an implementation claims is what it is held to: a declared differentiable lse (``lse_grad``)."""

from __future__ import annotations

import pytest

from flashcheck import case_sizes, protocol
from flashcheck.engine.fuzz import fuzz_in_process
from flashcheck.peers import fa4
from kernels import interface
from tests import domain_kernels, standalone_kernels


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
    def plain(q, k, v, **kwargs):
        return domain_kernels.detached_lse(q, k, v, **kwargs)

    plain.flashcheck_features = domain_kernels.FEATURES
    result = fuzz_gradients(plain, "plain", 10)
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
