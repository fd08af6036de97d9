"""Memory-safety properties: inputs are left alone, outputs are written completely and
nothing around them is touched."""

from __future__ import annotations

import torch

from flashcheck import compare
from flashcheck.compare import PropertyFailure
from flashcheck.properties.common import materialize, run
from flashcheck.properties.registry import prop


@prop()
def inputs_unchanged(impl, case, *, device=None):
    """The call modifies neither q, k, v nor anything else in their storage.

    Every property that compares values checks this first, around each call (see
    :func:`flashcheck.properties.common.unchanged`); this property states it on its own."""
    inputs = materialize(case, device)
    run(impl, case, inputs)  # raises, naming the input, where the call changed one


def _guarded(shape, dtype, device, pads):
    """A view of ``shape`` inside a NaN-filled buffer with guard bands of ``pads`` on
    each side of each dimension; returns (buffer, view, inside) with ``inside`` a
    boolean mask over the buffer that is True exactly under the view."""
    padded = tuple(size + 2 * pad for size, pad in zip(shape, pads))
    buffer = torch.full(padded, float("nan"), dtype=dtype, device=device)
    region = tuple(slice(pad, pad + size) for size, pad in zip(shape, pads))
    inside = torch.zeros(padded, dtype=torch.bool, device=device)
    inside[region] = True
    return buffer, buffer[region], inside


@prop(requires={"out"})
def outputs_written_in_bounds(impl, case, *, device=None):
    """Given NaN-poisoned output views inside guard bands, the call writes every element of
    out and lse and no byte outside them."""
    inputs = materialize(case, device)
    q = inputs.q
    out_buf, out_view, out_inside = _guarded(tuple(q.shape), q.dtype, q.device, (1, 2, 1, 3)[-q.dim():])
    lse_shape = case.lse_shape
    lse_buf, lse_view, lse_inside = _guarded(lse_shape, torch.float32, q.device, (1, 1, 5)[-len(lse_shape):])
    out, lse = run(impl, case, inputs, out=out_view, lse_out=lse_view)
    for name, buffer, view, inside, returned in (
        ("out", out_buf, out_view, out_inside, out),
        ("lse", lse_buf, lse_view, lse_inside, lse),
    ):
        if returned is not None and returned.data_ptr() != view.data_ptr():
            raise PropertyFailure(f"{name}: the call returned a new tensor instead of writing the given one")
        unwritten = torch.isnan(view)
        if unwritten.any():
            index = tuple(int(i) for i in unwritten.nonzero()[0])
            raise PropertyFailure(
                f"{name}: {int(unwritten.sum())} of {view.numel()} elements were left unwritten (still the NaN "
                f"poison); first at {compare.format_index(name, index)}"
            )
        touched = ~torch.isnan(buffer) & ~inside
        if touched.any():
            index = tuple(int(i) for i in touched.nonzero()[0])
            raise PropertyFailure(
                f"{name}: {int(touched.sum())} elements outside the output were overwritten; first at buffer "
                f"index {index} (the output starts at the guard offset)"
            )
