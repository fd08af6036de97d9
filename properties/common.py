"""Helpers shared by the properties.

Properties see a packed (varlen) case's tensors in the implementation's layout (q
``(Tq, H, D)``); :func:`batched` views any per-token tensor as a batch of one so that code
written for ``(B, N, H, D)`` indexes both layouts alike (the view shares storage, so writes
through it reach the packed tensor).
"""

from __future__ import annotations

import contextlib

import torch

from flashcheck import compare, expectation, protocol
from flashcheck.compare import Violation


def materialize(case, device):
    return case.materialize(device or protocol.default_device())


def laid_out_like(template: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``values`` in a new tensor with ``template``'s sizes and strides, so that a property
    which changes an input's values does not change its memory layout too (``-v`` of a
    strided view is contiguous): what layout does is ``layout_invariance``'s to check."""
    tensor = torch.empty_strided(template.size(), template.stride(), dtype=template.dtype, device=template.device)
    return tensor.copy_(values)


def expect(impl, case, inputs, **extra) -> expectation.Expectation:
    """The reference and tolerances for ``inputs``, with the precision ``impl`` declares;
    ``extra`` replaces protocol arguments of the case (e.g. another ``attn_mask``)."""
    tf32 = "tf32" in protocol.features_of(impl)
    return expectation.expect(*inputs, **{**case.attention_kwargs(inputs[0].device), **extra}, tf32=tf32)


def run(impl, case, inputs, **extra):
    """``(out, lse)`` of ``impl`` on ``inputs`` under ``case``'s arguments, after checking
    that the call left q, k and v unchanged (:func:`unchanged`)."""
    with unchanged(dict(zip("qkv", inputs)), "the call"):
        return protocol.call(impl, inputs, case, **extra)


def storage_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``tensor`` (padding of a view included), as bytes."""
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    return raw.set_(tensor.untyped_storage())


@contextlib.contextmanager
def unchanged(tensors: dict, during: str):
    """Around a call of the implementation: raise :class:`Violation` naming the first
    of ``tensors`` (name -> tensor) whose storage (padding of a view included) ``during``
    changed, before anything is compared with its results.

    Every property that compares values runs the implementation through this (:func:`run`,
    :func:`flashcheck.properties.gradients.gradients`): an implementation that writes into
    its inputs is reported for the write, not for what the write does to the comparisons
    (a result that differs from the reference, or a reference computed from the modified
    inputs that agrees with it)."""
    saved = {name: storage_bytes(t).clone() for name, t in tensors.items() if t is not None}
    yield
    for name, before in saved.items():
        after = storage_bytes(tensors[name])
        changed = after != before
        if changed.any():
            raise Violation(
                f"{name} was modified by {during}: {int(changed.sum())} of {changed.numel()} bytes of its "
                f"storage changed (first at byte {int(changed.nonzero()[0])}); an implementation must leave its "
                f"inputs as they were, and no result of this call is compared"
            )


def expect_gradients(impl, case, inputs, grad_out, grad_lse) -> expectation.GradientExpectation:
    """Reference gradients and their tolerances for ``inputs`` and the upstream gradients."""
    tf32 = "tf32" in protocol.features_of(impl)
    return expectation.expect_gradients(*inputs, grad_out, grad_lse, **case.attention_kwargs(inputs[0].device),
                                        tf32=tf32)


def batched(case, tensor: torch.Tensor | None) -> torch.Tensor | None:
    """A per-token tensor of ``case`` (q, k, v, out, dq, ... or lse) in the dense layout:
    packed tensors gain a batch dimension of one (a view), dense ones are returned as they are."""
    return tensor.unsqueeze(0) if tensor is not None and case.varlen else tensor


def empty_rows(case, device) -> torch.Tensor:
    """Boolean ``(B, H, Nq)`` (a batch of one when packed): rows with no allowed key."""
    return (case.keys_per_row().to(device) == 0).expand(case.batch, case.heads, case.seqlen_q)


def format_batched_index(case, name: str, index) -> str:
    """An index into the :func:`batched` view of output ``name``, formatted in the
    implementation's own layout (without the batch of one when packed)."""
    return compare.format_index(name, index[1:] if case.varlen else index)


def seeded_generator(case, salt: int) -> torch.Generator:
    """A CPU generator for a property's own random choices, from the case's seed and a
    ``salt`` that keeps different uses independent."""
    return torch.Generator().manual_seed((case.seed * 1_000_003 + salt) % (2**63))
