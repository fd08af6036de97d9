"""Implementations that are correct, but less accurate than the peer they wrap: each moves
its output away from the float64 reference by a chosen fraction of the allowed error.

A fraction below 1 gives an implementation that every property still accepts, but whose
error/allowed ratios are worse than its peer's: what a regression baseline exists to catch.
A fraction above 1 gives one beyond its tolerance. Gradients are the peer's own (the
displacement is a constant for autograd).
"""
from __future__ import annotations

import torch

from flashcheck import peers
from flashcheck.oracle import expectation


def displaced(peer: str, fraction: float):
    """``peer``'s attention with out set to ``reference + fraction × allowed × (±1)``, the
    signs drawn from a fixed seed, rounded to the output dtype; lse is the peer's."""
    base = peers.resolve(peer)

    def attention(q, k, v, **kwargs):
        out, lse = base(q, k, v, **kwargs)
        expected = expectation.expect(q.detach(), k.detach(), v.detach(), **kwargs)
        exact = expected.expected_out
        signs = torch.randint(0, 2, exact.shape, generator=torch.Generator().manual_seed(0)).to(exact) * 2 - 1
        target = (exact + fraction * expected.allowed("out") * signs.to(exact.device)).to(out.dtype)
        return out + (target - out).detach(), lse

    for declaration in ("flashcheck_features", "flashcheck_features_by_device"):
        if hasattr(base, declaration):
            setattr(attention, declaration, getattr(base, declaration))
    return attention


half_allowed = displaced("sdpa-math", 0.5)
twice_allowed = displaced("sdpa-math", 2.0)
