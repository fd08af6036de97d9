"""Where a case's time goes: making its inputs, calling the implementation, computing the
reference, and everything else flashcheck does around them.

The engine's own cost bounds the pace of every kernel it fuzzes (a kernel that runs in
microseconds still waits for the float64 reference and the comparisons), so fuzz workers
time each case by phase and the summary shows the shares (``--json``: ``pace.phases``).
:func:`phase` wraps the code of one phase; phases nest, and each second counts once, in the
innermost phase running (the reference's own inputs count as the reference). On a GPU each
boundary waits for the device (``torch.cuda.synchronize``), so that a kernel launched in one
phase is not timed in the next; timing is off (nothing waits) until :func:`start` is called,
as a fuzz worker does.

Imports torch only when a CUDA device is in use.
"""

from __future__ import annotations

import contextlib
import sys
import time

#: The phases timed, in the order the summary lists them; the rest of a case's time is the
#: checking around them (comparisons, the checks of the inputs, bookkeeping), and the time
#: between cases goes to drawing them.
PHASES = ("inputs", "call", "reference")

_enabled = False
_seconds: dict[str, float] = {}
_stack: list[list] = []  # [phase, started, seconds of nested phases]


def start() -> None:
    """Time phases in this process from now on."""
    global _enabled
    _enabled = True


def _synchronize() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


@contextlib.contextmanager
def phase(name: str):
    """Count the time inside the block as phase ``name`` (one of :data:`PHASES`)."""
    if not _enabled:
        yield
        return
    _synchronize()
    entry = [name, time.perf_counter(), 0.0]
    _stack.append(entry)
    try:
        yield
    finally:
        _synchronize()
        _stack.pop()
        spent = time.perf_counter() - entry[1]
        _seconds[name] = _seconds.get(name, 0.0) + spent - entry[2]
        if _stack:
            _stack[-1][2] += spent


def take() -> dict[str, float]:
    """The seconds of each phase since the last call, and start counting afresh."""
    taken = dict(_seconds)
    _seconds.clear()
    return taken
