"""Deliberately broken kernels for the tests: the project kernel with one bug planted.

The planted bugs are the kernel's mutation catalogue (:mod:`flashcheck.kernels.mutations`):
each replaces a fragment of ``kernels/forward.py`` or ``kernels/backward.py`` and is loaded
as a module of its own, so the bug runs through the same launch path, validation and
interpreter as the real kernel. This module adds the views the tests use and the
nondeterministic wrappers (races are not source mutations).
"""

from __future__ import annotations

import torch

from flashcheck.kernels import mutations

SOURCES = {file: mutations.source(file) for file in mutations.FILES}

#: name -> (fragment, replacement, the bug it plants), per kernel file.
MUTATIONS = {m.name: (m.fragment, m.replacement, m.bug) for m in mutations.CATALOGUE if m.file == "forward"}
BACKWARD_MUTATIONS = {
    m.name: (m.fragment, m.replacement, m.bug) for m in mutations.CATALOGUE if m.file == "backward"
}


def mutated_launch(name: str):
    """The ``launch`` of the kernel module that mutation ``name`` plants its bug in."""
    return mutations.mutated_launch(mutations.MUTATIONS[name])


def mutant(name: str):
    """A protocol implementation running the kernels with mutation ``name``."""
    return mutations.implementation(mutations.MUTATIONS[name])


def nondeterministic(impl):
    """``impl`` with one random output element moved by one unit in the last place, as a
    race in the accumulation order would."""

    def attention(q, k, v, **kwargs):
        out, lse = impl(q, k, v, **kwargs)
        if out.numel():
            out = out.contiguous()
            bits = out.view({2: torch.int16, 4: torch.int32}[out.element_size()]).view(-1)
            bits[int(torch.randint(bits.numel(), ()))] += 1
        return out, lse

    attention.flashcheck_features = getattr(impl, "flashcheck_features", None)
    return attention


def nondeterministic_backward(impl):
    """``impl`` whose dQ has one random element moved by one unit in the last place."""

    def attention(q, k, v, **kwargs):
        if q.requires_grad:
            q.register_hook(_nudge_one_element)
        return impl(q, k, v, **kwargs)

    attention.flashcheck_features = getattr(impl, "flashcheck_features", None)
    return attention


def _nudge_one_element(grad: torch.Tensor) -> torch.Tensor:
    grad = grad.clone().contiguous()
    if grad.numel():
        bits = grad.view({2: torch.int16, 4: torch.int32}[grad.element_size()]).view(-1)
        bits[int(torch.randint(bits.numel(), ()))] += 1
    return grad
