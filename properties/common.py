"""Helpers shared by the properties."""

from __future__ import annotations

from flashcheck import expectation, protocol


def materialize(case, device):
    return case.materialize(device or protocol.default_device())


def expect(impl, case, inputs) -> expectation.Expectation:
    """The reference and tolerances for ``inputs``, with the precision ``impl`` declares."""
    tf32 = "tf32" in protocol.features_of(impl)
    return expectation.expect(*inputs, **case.attention_kwargs(), tf32=tf32)


def run(impl, case, inputs, **extra):
    """``(out, lse)`` of ``impl`` on ``inputs`` under ``case``'s arguments."""
    return protocol.call(impl, inputs, case, **extra)


def expect_gradients(impl, case, inputs, grad_out, grad_lse) -> expectation.GradientExpectation:
    """Reference gradients and their tolerances for ``inputs`` and the upstream gradients."""
    tf32 = "tf32" in protocol.features_of(impl)
    return expectation.expect_gradients(*inputs, grad_out, grad_lse, **case.attention_kwargs(), tf32=tf32)
