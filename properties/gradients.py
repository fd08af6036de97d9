"""Gradient properties: dQ, dK, dV by autograd against float64 analytic gradients, exact
zeros where nothing flows, GQA sums, determinism and untouched inputs."""

from __future__ import annotations

import torch

from flashcheck import protocol
from flashcheck.oracle import compare
from flashcheck.oracle.backward_inputs import ds_range_inputs, upstream
from flashcheck.oracle.backward_pass import gradients
from flashcheck.oracle.expectation import held_to
from flashcheck.properties.common import (
    batched, check_none, empty_rows, expect_gradients, format_batched_index, materialize,
)
from flashcheck.properties.metamorphic import repeated_kv
from flashcheck.properties.registry import prop


@prop(requires={"backward"})
def grads_match_reference(impl, case, *, device=None):
    """dQ, dK and dV agree with float64 analytic gradients within the derived tolerance,
    for upstream gradients of several scales (and a random upstream gradient of lse)."""
    inputs = materialize(case, device)
    (dq, dk, dv), grad_out, grad_lse = gradients(impl, case, inputs)
    expected = expect_gradients(impl, case, inputs, grad_out, grad_lse)
    for name, got in (("dv", dv), ("dk", dk), ("dq", dq)):
        expected.check(name, got)


@prop(requires={"backward"}, draw={"dtypes": ("float16",), "values": ("normal", "small")})
def grads_match_reference_where_ds_exceeds_float16(impl, case, *, device=None):
    """float16 gradients stay exact where the backward's intermediate dS exceeds float16's range.

    The backward of attention forms ``dS = P ∘ (dP - delta)`` with ``dP = dO·Vᵀ``; a kernel
    that rounds dS to float16 before its products with Q and K (as FlashAttention-2 does)
    turns every |dS| > 65504 into inf, and dQ, dK into inf or NaN, although the exact
    gradients can be far inside the range. The case's q, k, v and a seeded dO are scaled by
    :data:`flashcheck.oracle.backward_inputs.DS_RANGE_SCALES`, which on most cases puts the exact max |dS| beyond 65504 while
    the exact dQ, dK and dV mostly stay within it; they must agree with the float64 gradients
    of those scaled inputs within the derived tolerance (where an exact gradient itself lies
    beyond the range, the overflow rule of every comparison applies). Drawn for float16
    only: bfloat16 and float32 share float32's exponent range, where dS cannot overflow
    before the gradients do."""
    inputs, grad_out = ds_range_inputs(case, device or protocol.default_device())
    (dq, dk, dv), _, _ = gradients(impl, case, inputs, grad_out)  # no upstream gradient of lse
    expected = expect_gradients(impl, case, inputs, grad_out, None)
    for name, got in (("dv", dv), ("dk", dk), ("dq", dq)):
        expected.check(name, got)


def unseen_keys(case, device="cpu") -> torch.Tensor:
    """Boolean ``(B, Nk, Hkv)`` (a batch of one when packed): keys that no query of any
    head of their KV group may attend."""
    allowed = case.allowed(device).expand(case.batch, case.heads, case.seqlen_q, case.seqlen_k)
    seen = allowed.any(dim=2).unflatten(1, (case.kv_heads, -1)).any(dim=2)  # (B, Hkv, Nk)
    return ~seen.transpose(1, 2)


@prop(requires={"backward"}, applies=lambda case: bool(unseen_keys(case).any()), draw={"hides_keys": True})
def unseen_keys_get_zero_gradient(impl, case, *, device=None):
    """Keys that no query may attend receive exactly zero dK and dV."""
    inputs = materialize(case, device)
    (_, dk, dv), _, _ = gradients(impl, case, inputs)
    unseen = unseen_keys(case, dk.device)[..., None]
    for name, grad in (("dk", dk), ("dv", dv)):
        leaked = (batched(case, grad) != 0) & unseen
        check_none(leaked, lambda count, index: (
            f"{name} is not zero for a key that no query may attend: {count} nonzero elements; "
            f"first at {format_batched_index(case, name, index)}: "
            f"{float(batched(case, grad)[index]):.6g}"
        ))


@prop(requires={"backward"}, applies=lambda case: case.has_empty_rows, draw={"empty_rows": True})
def empty_rows_get_zero_dq(impl, case, *, device=None):
    """A query row with no allowed key receives exactly zero dQ."""
    inputs = materialize(case, device)
    (dq, _, _), _, _ = gradients(impl, case, inputs)
    empty = empty_rows(case, dq.device).transpose(1, 2)[..., None]  # (B, Nq, H, 1)
    leaked = (batched(case, dq) != 0) & empty
    check_none(leaked, lambda count, index: (
        f"dq is not zero on a row with no allowed key: {count} nonzero elements; first at "
        f"{format_batched_index(case, 'dq', index)}"
    ))


GROUP_SUM = "the group sum of the gradients with K/V repeated per head"
REPEATED_DQ = "dq with K/V repeated per head"


@prop(requires={"backward", "gqa"}, applies=lambda case: case.kv_heads < case.heads, draw={"gqa": True})
def gqa_grads_match_repeated_kv(impl, case, *, device=None):
    """With GQA, dK and dV equal the group sums of the gradients with K and V repeated per
    query head, and dQ equals the repeated case's dQ (within tolerance).

    Where a per-head gradient of the repeated case is infinite (its exact value lies beyond
    the dtype's range, as with float16 and logits offset by thousands), the group sum is
    undefined (+inf and -inf give NaN) and says nothing about the GQA gradient there; those
    elements are left to ``grads_match_reference``, which holds them to the float64 value.
    A finite group sum near or beyond the dtype's range follows the overflow rule of
    :func:`flashcheck.oracle.expectation.held_to`.
    """
    inputs = materialize(case, device)
    group = case.heads // case.kv_heads
    (dq, dk, dv), grad_out, grad_lse = gradients(impl, case, inputs)
    (dq_r, dk_r, dv_r), _, _ = gradients(impl, *repeated_kv(case, inputs), grad_out, grad_lse)
    expected = expect_gradients(impl, case, inputs, grad_out, grad_lse)
    what = GROUP_SUM
    for name, got, per_head in (("dk", dk, dk_r), ("dv", dv, dv_r)):
        per_head = per_head.double().unflatten(-2, (case.kv_heads, group))
        defined = per_head.isfinite().all(dim=-2)
        # Near or beyond the dtype's range, the overflow rule of every comparison (held_to).
        allowed = 2 * expected.allowed(name)
        group_sum = torch.where(defined, held_to(per_head.sum(dim=-2), got, allowed), got.double())
        compare.check_close(name, got, group_sum, allowed, what=what)
    compare.check_close("dq", dq, dq_r, 2 * expected.allowed("dq"), what=REPEATED_DQ)


@prop(requires={"backward"})
def backward_deterministic(impl, case, *, device=None):
    """Two backward passes on the same inputs and upstream gradients agree bitwise."""
    inputs = materialize(case, device)
    first, grad_out, grad_lse = gradients(impl, case, inputs)
    second, _, _ = gradients(impl, case, inputs, grad_out, grad_lse)
    for name, a, b in zip(("dq", "dk", "dv"), second, first):
        compare.check_equal(name, a, b, what=f"{name} of an identical first backward pass")


@prop(requires={"backward"})
def backward_leaves_inputs_unchanged(impl, case, *, device=None):
    """Forward and backward modify neither q, k, v nor the upstream gradients."""
    inputs = materialize(case, device)
    leaves = [t.detach().requires_grad_() for t in inputs]
    out, lse = protocol.call(impl, leaves, case)
    grad_out, grad_lse = upstream(case, out.detach(), lse)
    saved = [t.clone() for t in (*inputs, grad_out)] + ([grad_lse.clone()] if grad_lse is not None else [])
    gradients(impl, case, inputs, grad_out, grad_lse)
    current = [*inputs, grad_out] + ([grad_lse] if grad_lse is not None else [])
    for name, before, after in zip(("q", "k", "v", "grad_out", "grad_lse"), saved, current):
        compare.check_equal(name, after, before, what=f"{name} before the backward pass")
