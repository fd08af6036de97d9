"""Helpers shared by the properties.

Properties see a packed (varlen) case's tensors in the implementation's layout (q
``(Tq, H, D)``); :func:`batched` views any per-token tensor as a batch of one so that code
written for ``(B, N, H, D)`` indexes both layouts alike (the view shares storage, so writes
through it reach the packed tensor).
"""

from __future__ import annotations

import torch

from flashcheck import protocol
from flashcheck.oracle import compare, expectation
from flashcheck.oracle.compare import Violation
from flashcheck.protocol import unchanged


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


def call_checked(impl, case, inputs, **extra):
    """``(out, lse)`` of ``impl`` on ``inputs`` under ``case``'s arguments, after checking
    that the call left q, k and v unchanged (:func:`unchanged`)."""
    with unchanged(dict(zip("qkv", inputs)), "the call"):
        return protocol.call(impl, inputs, case, **extra)


def expect_gradients(impl, case, inputs, grad_out, grad_lse) -> expectation.GradientExpectation:
    """Reference gradients and their tolerances for ``inputs`` and the upstream gradients."""
    tf32 = "tf32" in protocol.features_of(impl)
    return expectation.expect_gradients(*inputs, grad_out, grad_lse, **case.attention_kwargs(inputs[0].device),
                                        tf32=tf32)


def check_none(found: torch.Tensor, message) -> None:
    """Raise :class:`Violation` when any element of the boolean tensor ``found`` is True,
    with the text ``message(count, index)``: ``count`` the number of True elements, ``index``
    the first one's (a tuple of ints, in ``found``'s dimensions)."""
    if found.any():
        index = tuple(int(i) for i in found.nonzero()[0])
        raise Violation(message(int(found.sum()), index))


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
