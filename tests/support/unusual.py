"""Implementations for the verdict tests: correct ones that take unusual but legitimate
paths (flashcheck must pass them), and ones with a fault whose report must name the right
cause.

Each is built on flashcheck's plain same-precision attention behind the protocol
(:data:`tests.support.buggy.correct`, packed input as a batch of one under the document mask),
which autograd differentiates, and declares "backward" on top of buggy's features.
"""
from __future__ import annotations

import math

import torch

from tests.support import buggy

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


def _one_ulp_away_from_zero(t: torch.Tensor) -> torch.Tensor:
    """``t`` with every finite nonzero element moved one unit in the last place away from
    zero (its bit pattern plus one); zeros and infinities as they are. Differentiable as the
    identity, so that a perturbed forward keeps the exact backward."""
    bits = t.detach().contiguous().view({2: torch.int16, 4: torch.int32}[t.element_size()])
    moved = (bits + 1).view(t.dtype).view(t.shape)
    moved = torch.where(torch.isfinite(t) & (t != 0), moved, t.detach())
    return t + (moved - t).detach()


def _rounding_per_layout(attention):
    """``attention`` whose nonzero outputs (out and finite lse) come out one ulp larger in
    magnitude whenever q, k or v is not contiguous: a correct implementation (one ulp is far
    inside every tolerance) whose rounding depends on the layout, as a matmul summing in a
    stride-dependent order does (torch's CPU matmul: see the sdpa-math adapter)."""

    def rounding(q, k, v, **kwargs):
        out, lse = attention(q, k, v, **kwargs)
        if all(t.is_contiguous() for t in (q, k, v)):
            return out, lse
        return _one_ulp_away_from_zero(out), None if lse is None else _one_ulp_away_from_zero(lse)

    rounding.__name__ = f"{getattr(attention, '__name__', 'attention')}_rounding_per_layout"
    return _declare(rounding)


#: Correct; rounds differently (by one ulp) when an input is a strided view.
rounding_per_layout = _rounding_per_layout(buggy.correct)

#: Reads one token past the end of packed k and v (:func:`tests.support.buggy.reads_past_the_end`: NaN
#: in the padded layout) and rounds differently per layout: a leak behind layout-dependent
#: rounding.
leaks_and_rounds_per_layout = _rounding_per_layout(buggy.reads_past_the_end)


def _token_past_the_end(t: torch.Tensor) -> torch.Tensor | None:
    """The token after the last one of packed ``t`` ``(T, H, D)``, read from its storage
    with its strides, or None where the storage ends there."""
    last = t[-1:]
    start = last.storage_offset() + t.stride(0)
    reach = start + (last.shape[1] - 1) * t.stride(1) + (last.shape[2] - 1) * t.stride(2) + 1
    if reach > t.untyped_storage().nbytes() // t.element_size():
        return None
    return t.as_strided(last.shape, t.stride(), start)


@_declare
def sanitised_read_past_the_end(q, k, v, **kwargs):
    """Faulty: where the storage of packed k and v holds a token after the last one, takes it
    as the last sequence's last key (a load bounded by the allocation, not by the sequence),
    with NaN replaced by a finite 1 (as a kernel that sanitises its loads does). Contiguous
    copies end their storage there and come out right; NaN-padded views give finite wrong
    values, no NaN."""
    if kwargs.get("cu_seqlens_k") is None or k.shape[0] == 0:
        return buggy.correct(q, k, v, **kwargs)
    beyond = [_token_past_the_end(t) for t in (k, v)]
    if any(b is None for b in beyond):
        return buggy.correct(q, k, v, **kwargs)
    k2, v2 = (torch.cat([t[:-1], torch.nan_to_num(b, nan=1.0)]) for t, b in zip((k, v), beyond))
    return buggy.correct(q, k2, v2, **kwargs)


class Refusing(torch.Tensor):
    """A tensor subclass whose every torch function raises: what :func:`returns_a_refusing_tensor`
    hands back."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"Refusing does not do {getattr(func, '__name__', func)}")


@_declare
def returns_a_refusing_tensor(q, k, v, **kwargs):
    """Faulty: returns its output as a tensor subclass whose methods raise once flashcheck's
    code uses them; the error is raised by the implementation's code, outside any call into it."""
    out, lse = buggy.correct(q, k, v, **kwargs)
    return out.detach().as_subclass(Refusing), lse


@_declare
def doubles_q_in_place(q, k, v, **kwargs):
    """Faulty: doubles q in place (outside autograd) before computing, so its result is
    attention of 2q: a mutation of the caller's input, whose first symptom a value
    comparison would see."""
    with torch.no_grad():
        q.mul_(2)
    return buggy.correct(q, k, v, **kwargs)
