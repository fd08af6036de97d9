"""The backward pass of a case, as every part of flashcheck runs it: the seeded upstream
gradients, the scaled inputs of the float16 dS-range stress, and gradients by autograd through
an implementation.

The gradient properties (:mod:`flashcheck.properties.gradients`) compare these gradients with
the reference; the regression corpora (:mod:`flashcheck.regress.corpus`) measure the same
ones; the known divergences (:mod:`flashcheck.divergences`) recompute a case's exact
backward from the same upstream gradients to decide whether a cause covers it. Drawn from the
case's seed, so each is reproducible from the case alone.
"""

from __future__ import annotations

import torch

from flashcheck import case_phases, protocol, unchecked
from flashcheck.compare import Violation
from flashcheck.case import seeded_generator

#: Scales of the upstream gradient dO, chosen by the case's seed.
GRAD_SCALES = (1.0, 1e-3, 1e3)


def upstream(case, out: torch.Tensor, lse: torch.Tensor | None):
    """Seeded upstream gradients: dO of a scale picked by the seed, and dlse when lse is
    differentiable.

    Whether lse is differentiable is the implementation's choice, read off what it returns:
    an lse that autograd tracks (``requires_grad``) must carry the correct gradient
    (``∂lse_i/∂s_ij = P_ij``); an lse returned as a constant gets no upstream gradient. The
    project kernel's lse is differentiable; the logsumexp outputs of torch's fused SDPA
    operators are not.
    """
    with case_phases.phase("inputs"):
        generator = torch.Generator().manual_seed((case.seed * 7_919 + 5) % 2**63)
        scale = GRAD_SCALES[case.seed % len(GRAD_SCALES)]
        grad_out = (torch.randn(out.shape, generator=generator) * scale).to(out.dtype).to(out.device)
        grad_lse = None
        if lse is not None and lse.requires_grad:
            grad_lse = torch.randn(lse.shape, generator=generator).to(lse.device)
    return grad_out, grad_lse


#: What a gradient property says it did not check where the lse is not differentiable.
LSE_GRADIENT_UNCHECKED = ("the lse's gradient: the implementation returned an lse autograd does not track, and does "
                          "not declare lse_grad")


def check_lse_claim(impl, lse, device) -> None:
    """Raise :class:`~flashcheck.compare.Violation` where ``impl`` declares ``lse_grad`` (a
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


#: The float16 backward's stress: q and k scaled by 1/8 (probabilities spread over many keys,
#: so that dP - delta is not cancelled by one dominant key, and dQ = scale·dS·K, dK =
#: scale·dS^T·Q stay small), v by 64 and an upstream gradient of scale 1e3 (as under float16
#: loss scaling). Powers of two: the scaled inputs are the drawn ones, exactly.
DS_RANGE_SCALES = dict(q=1 / 8, k=1 / 8, v=64.0, grad_out=1e3)


def ds_range_inputs(case, device=None):
    """``(q, k, v), grad_out`` of the dS-range property
    (:func:`flashcheck.properties.gradients.grads_match_reference_where_ds_exceeds_float16`):
    the case's inputs and a seeded dO, scaled by :data:`DS_RANGE_SCALES`."""
    q, k, v = case.materialize(device or protocol.default_device())
    inputs = (q * DS_RANGE_SCALES["q"], k * DS_RANGE_SCALES["k"], v * DS_RANGE_SCALES["v"])
    generator = seeded_generator(case, salt=65_504)
    grad_out = (torch.randn(q.shape, generator=generator) * DS_RANGE_SCALES["grad_out"]).to(q.dtype).to(q.device)
    return inputs, grad_out
