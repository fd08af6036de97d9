"""Implementations for the verdict tests: correct ones that take unusual but legitimate
paths (flashcheck must pass them), and ones with a fault whose report must name the right
cause.

Each is built on flashcheck's plain same-precision attention behind the protocol
(:data:`tests.buggy.correct`, packed input as a batch of one under the document mask),
which autograd differentiates, and declares "backward" on top of buggy's features.
"""
from __future__ import annotations

import math

import torch

from tests import buggy

FEATURES = buggy.FEATURES | {"backward"}


def _declare(attention):
    attention.flashcheck_features = FEATURES
    return attention


def _lse_shape(q: torch.Tensor) -> tuple[int, ...]:
    """The protocol's lse shape for q: ``(H, Tq)`` packed, ``(B, H, Nq)`` dense."""
    return (q.shape[1], q.shape[0]) if q.dim() == 3 else (q.shape[0], q.shape[2], q.shape[1])


@_declare
def constant_zeros_without_keys(q, k, v, **kwargs):
    """Correct. Without any key (k has no token) the result is out 0 and lse -inf whatever the
    inputs, and this returns them as fresh constants, built from none of q, k, v: autograd
    sees no path from any input to the outputs, and every gradient is exactly zero."""
    if k.shape[-3] == 0:
        return q.new_zeros(q.shape), torch.full(_lse_shape(q), -math.inf, device=q.device)
    return buggy.correct(q, k, v, **kwargs)


@_declare
def zeros_from_q_only_without_keys(q, k, v, **kwargs):
    """Correct. Without any key the output is ``0·q``, a function of q alone (finite inputs:
    exactly 0); autograd reaches q but neither k nor v, whose gradients are exactly zero."""
    if k.shape[-3] == 0:
        return q * 0, torch.full(_lse_shape(q), -math.inf, device=q.device)
    return buggy.correct(q, k, v, **kwargs)
