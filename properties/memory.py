"""Memory-safety properties: inputs are left alone, outputs are written completely and
nothing around them is touched, and repeated calls hold no more device memory than one."""

from __future__ import annotations

import gc
from typing import Callable

import torch

from flashcheck import protocol
from flashcheck.oracle import compare
from flashcheck.oracle.backward_pass import gradients
from flashcheck.oracle.compare import Violation
from flashcheck.properties.common import call_checked, check_none, materialize
from flashcheck.properties.registry import prop


@prop()
def inputs_unchanged(impl, case, *, device=None):
    """The call modifies neither q, k, v nor anything else in their storage.

    Every property that compares values checks this first, around each call (see
    :func:`flashcheck.protocol.unchanged`); this property states it on its own."""
    inputs = materialize(case, device)
    call_checked(impl, case, inputs)  # raises, naming the input, where the call changed one


#: The guard bands around the output views of :func:`outputs_written_in_bounds`, per dimension
#: (the last ones used: packed outputs have one dimension fewer).
OUT_PADS = (1, 2, 1, 3)
LSE_PADS = (1, 1, 5)


@prop(requires={"out"})
def outputs_written_in_bounds(impl, case, *, device=None):
    """Given NaN-poisoned output views inside guard bands, the call writes every element of
    out and lse and no byte outside them."""
    inputs = materialize(case, device)
    from flashcheck.repro.standalone import guarded  # here: flashcheck.repro imports the properties

    q = inputs.q
    out_buf, out_view, out_inside = guarded(tuple(q.shape), q.dtype, q.device, OUT_PADS[-q.dim():])
    lse_shape = case.lse_shape
    lse_buf, lse_view, lse_inside = guarded(lse_shape, torch.float32, q.device, LSE_PADS[-len(lse_shape):])
    out, lse = call_checked(impl, case, inputs, out=out_view, lse_out=lse_view)
    for name, buffer, view, inside, returned in (
        ("out", out_buf, out_view, out_inside, out),
        ("lse", lse_buf, lse_view, lse_inside, lse),
    ):
        if returned is not None and returned.data_ptr() != view.data_ptr():
            raise Violation(f"{name}: the call returned a new tensor instead of writing the given one")
        unwritten = torch.isnan(view)
        check_none(unwritten, lambda count, index: (
            f"{name}: {count} of {view.numel()} elements were left unwritten (still the NaN "
            f"poison); first at {compare.format_index(name, index)}"
        ))
        touched = ~torch.isnan(buffer) & ~inside
        check_none(touched, lambda count, index: (
            f"{name}: {count} elements outside the output were overwritten; first at buffer "
            f"index {index} (the output starts at the guard offset)"
        ))


#: Identical calls measured after the warm-up call.
REPEATS = 4
#: Growth of the allocated device memory over the :data:`REPEATS` calls that is not taken for
#: a leak by itself: a workspace or cache that a library allocates once on a later call than
#: the first. Once all temporaries are freed, a call that keeps nothing returns the allocator's
#: count to the very byte (it counts the rounded blocks of live tensors), so a leak of 256 KiB
#: or more per call exceeds this within the repeats, and a smaller one is caught by growing at
#: every call (see :func:`check_memory_flat`).
GROWTH_SLACK_BYTES = 1 << 20


def cuda_allocated_bytes(device) -> int:
    """Device memory held by live tensors on ``device`` (``torch.cuda.memory_allocated``),
    once queued work has finished and unreachable Python objects are collected."""
    gc.collect()
    torch.cuda.synchronize(device)
    return torch.cuda.memory_allocated(device)


def check_memory_flat(call: Callable[[], None], allocated: Callable[[], int], *, repeats: int = REPEATS,
                      slack: int = GROWTH_SLACK_BYTES) -> list[int]:
    """Run ``call`` once (the warm-up, which may allocate what a library keeps for good),
    read ``allocated()``, then ``repeats`` times call and read again; raise
    :class:`Violation` when the memory grew by more than ``slack`` bytes over the
    repeats, or grew at every one of them (``repeats`` of at least 2). Returns the readings.

    ``allocated`` is the memory counter (:func:`cuda_allocated_bytes` on CUDA; the tests
    inject their own), ``call`` one identical call whose results it drops."""
    if repeats < 2:
        raise ValueError(f"repeats: at least 2 calls are needed to tell growth at every call, got {repeats}")
    call()
    readings = [allocated()]
    for _ in range(repeats):
        call()
        readings.append(allocated())
    from flashcheck.repro.standalone import memory_grew  # here: flashcheck.repro imports the properties

    steps = [after - before for before, after in zip(readings, readings[1:])]
    growth = readings[-1] - readings[0]
    if memory_grew(readings, slack):
        raise Violation(
            f"device memory grew by {growth} bytes ({growth / 2**20:.3g} MiB) over {repeats} identical calls after "
            f"a warm-up call: {', '.join(f'{step:+d}' for step in steps)} bytes call by call, from {readings[0]} "
            f"bytes allocated after the warm-up; the implementation keeps memory from each call (allowed: at most "
            f"{slack} bytes over the {repeats} calls, and no growth at every call)"
        )
    return readings


@prop(devices={"cuda"}, uses={"backward"})
def repeated_calls_do_not_grow_memory(impl, case, *, device=None):
    """Repeated identical calls do not grow the device memory held by live tensors.

    After a warm-up call, :data:`REPEATS` identical calls (forward, then backward through
    autograd when the implementation declares "backward"), each dropping its results, must
    leave the memory held by live tensors (``torch.cuda.memory_allocated``, read after each)
    within :data:`GROWTH_SLACK_BYTES` of what it was after the warm-up, and must not grow it
    at every call (:func:`check_memory_flat`). An implementation that keeps each call's
    buffers alive (a cache keyed on nothing that changes, tensors appended to a list) runs
    out of memory in a training loop however correct its values are.

    On the CPU torch exposes no count of allocated memory, so the property cannot be
    measured there: every runner shows it as not applicable on the CPU (not run, never a
    pass). Memory a library allocates outside
    torch's caching allocator is not seen."""
    inputs = materialize(case, device)
    backward = "backward" in protocol.features_of(impl, inputs.q.device)

    def call():
        if backward:
            gradients(impl, case, inputs)
        else:
            call_checked(impl, case, inputs)

    check_memory_flat(call, lambda: cuda_allocated_bytes(inputs.q.device))
