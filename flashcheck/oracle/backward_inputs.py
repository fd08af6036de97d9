"""The inputs of a case's backward pass, as every part of flashcheck makes them: the seeded
upstream gradients and the scaled inputs of the float16 dS-range stress.

Gradients through an implementation (:mod:`flashcheck.oracle.backward_pass`) run on them; the case
predicates (:mod:`flashcheck.oracle.case_predicates`) recompute a case's exact backward from the same
upstream gradients to decide whether a cause covers it. Drawn from the case's seed, so each is
reproducible from the case alone.
"""

from __future__ import annotations

import torch

from flashcheck.cases import phases as case_phases
from flashcheck.cases.case import seeded_generator

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


#: The float16 backward's stress: q and k scaled by 1/8 (probabilities spread over many keys,
#: so that dP - delta is not cancelled by one dominant key, and dQ = scale·dS·K, dK =
#: scale·dS^T·Q stay small), v by 64 and an upstream gradient of scale 1e3 (as under float16
#: loss scaling). Powers of two: the scaled inputs are the drawn ones, exactly.
DS_RANGE_SCALES = dict(q=1 / 8, k=1 / 8, v=64.0, grad_out=1e3)


def ds_range_inputs(case, device):
    """``(q, k, v), grad_out`` of the dS-range property
    (:func:`flashcheck.properties.gradients.grads_match_reference_where_ds_exceeds_float16`):
    the case's inputs and a seeded dO, scaled by :data:`DS_RANGE_SCALES`."""
    q, k, v = case.materialize(device)
    inputs = (q * DS_RANGE_SCALES["q"], k * DS_RANGE_SCALES["k"], v * DS_RANGE_SCALES["v"])
    generator = seeded_generator(case, salt=65_504)
    grad_out = (torch.randn(q.shape, generator=generator) * DS_RANGE_SCALES["grad_out"]).to(q.dtype).to(q.device)
    return inputs, grad_out
