"""A case's backward pass through an implementation: gradients by autograd, as every part of
flashcheck runs them, and the check of a claimed differentiable lse.

The gradient properties (:mod:`flashcheck.properties.gradients`) compare these gradients with
the reference; the regression corpora (:mod:`flashcheck.regress.corpus`) measure the same ones.
The upstream gradients are :func:`flashcheck.oracle.backward_inputs.upstream`'s.
"""

from __future__ import annotations

import torch

from flashcheck import protocol
from flashcheck.cases import phases as case_phases
from flashcheck.oracle import unchecked
from flashcheck.oracle.backward_inputs import upstream
from flashcheck.oracle.compare import Violation


#: What a gradient property says it did not check where the lse is not differentiable.
LSE_GRADIENT_UNCHECKED = ("the lse's gradient: the implementation returned an lse autograd does not track, and does "
                          "not declare lse_grad")


def check_lse_claim(impl, lse, device) -> None:
    """Raise :class:`~flashcheck.oracle.compare.Violation` where ``impl`` declares ``lse_grad`` (a
    differentiable lse) and returned, from inputs that require grad, no lse or one that autograd
    does not track: a loss through that lse would silently get no gradient from it."""
    if "lse_grad" not in protocol.features_of(impl, device):
        return
    if lse is None:
        raise Violation("the implementation declares the feature lse_grad (a differentiable lse) but returned "
                        "no lse")
    if not lse.requires_grad:
        raise Violation("the implementation declares the feature lse_grad (a differentiable lse) but returned an "
                        "lse that autograd does not track (detached, or made outside autograd): a loss through "
                        "lse would get no gradient from it")


def gradients(impl, case, inputs, grad_out=None, grad_lse=None):
    """``(dq, dk, dv), grad_out, grad_lse`` from autograd through ``impl``; the upstream
    gradients are drawn from the case when not given. lse enters the loss only on rows
    that have keys (elsewhere it is the constant -inf).

    An input the outputs do not depend on has gradient exactly zero, whether autograd has
    no path to it (without keys, an implementation may build out 0 and lse -inf without
    touching k and v) or to any input (constant outputs): it gets zeros, never an error of
    flashcheck's own ``torch.autograd.grad``. The zeros are then held to the reference like
    any gradient, so an implementation that detaches its outputs where they do depend on
    the inputs fails the gradient comparisons with that evidence."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    with protocol.unchanged(dict(zip("qkv", inputs)), "the forward or backward pass"):
        out, lse = protocol.call(impl, leaves, case)
        check_lse_claim(impl, lse, leaves[0].device)
        if lse is not None and not lse.requires_grad:
            unchecked.note(LSE_GRADIENT_UNCHECKED)
        if grad_out is None:
            grad_out, grad_lse = upstream(case, out, lse)
        loss = (out.float() * grad_out.float()).sum()
        if lse is not None and grad_lse is not None:
            finite = torch.isfinite(lse)
            loss = loss + torch.where(finite, lse * grad_lse, torch.zeros_like(lse)).sum()
        if not loss.requires_grad:  # no input reaches the outputs
            return tuple(torch.zeros_like(leaf) for leaf in leaves), grad_out, grad_lse
        with protocol.unchanged({"grad_out": grad_out, "grad_lse": grad_lse}, "the backward pass"), \
                case_phases.phase("call"):
            grads = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    return grads, grad_out, grad_lse
