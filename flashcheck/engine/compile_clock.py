"""How long a running case has spent compiling Triton kernels, told apart from running them.

The fuzzer's per-case timeout is for hangs: a kernel that never finishes. But the first call
of each Triton kernel variant compiles it, and on a GPU that can take minutes (a float32
head-dim-256 backward of the project kernel, from a cold cache; measurements in
docs/performance.md). Compiling is not hanging. So a worker records, in its case file,
the seconds its case has spent inside Triton's JIT compilations (announced by Triton's
``knobs.runtime.jit_cache_hook`` before and ``jit_post_compile_hook`` after each one), and
the parent times the case without them (:func:`running_seconds`). A compilation that never
ends is still caught: a case's whole time is capped at the timeout plus
:data:`COMPILE_ALLOWANCE`.

Other JITs are timed as compiling too, by wrapping their entry points (:data:`OTHER_JITS`):
the CuTe DSL's ``cutlass.cute.compile`` (FlashAttention-4 compiles a kernel variant through it,
for seconds, at the first call of each), Triton's autotuner benchmarking its configs
(``Autotuner._bench``: FlagGems' SDPA autotunes afresh for every new key length), and
``torch.compile``'s frame compilation (``torch._dynamo.convert_frame._compile``: compiled
FlexAttention compiles every new shape, for up to minutes). Nested compilations (Triton
compiling a config the autotuner benchmarks, or what Inductor compiles inside a frame) count
once, and a compilation that raises ends there (:class:`_Compilations`). A JIT's module is wrapped where it is imported before the first case (the adapters of
these kernels import it); what none of these announce is timed as running.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable

#: Seconds of compiling a case may take beyond the per-case timeout before it counts as hung
#: anyway (about four times the slowest compilation measured, 148 s: docs/performance.md).
COMPILE_ALLOWANCE = 600.0


#: The environment variable naming a folder into which each fuzz worker logs its Triton
#: compilations (:func:`log_compilations`): a developer's view of what a run compiles.
LOG_VARIABLE = "FLASHCHECK_COMPILE_LOG"


#: Entry points of JITs that Triton's hooks do not announce, timed as compiling: ``(module,
#: class or None, function)``. A module is wrapped only where it is imported already (the CuTe DSL
#: is, by FlashAttention-4's adapter, and torch.compile's frame compiler by FlexAttention's,
#: before the first case) or is Triton's own.
OTHER_JITS = (("triton.runtime.autotuner", "Autotuner", "_bench"), ("cutlass.cute", None, "compile"),
              ("torch._dynamo.convert_frame", None, "_compile"))


def watch(on_start: Callable[[], None], on_end: Callable[[], None]) -> bool:
    """Call ``on_start()`` when this process starts compiling and ``on_end()`` when it stops:
    Triton's JIT compilations, announced by its hooks ahead of any hooks already set (which
    still run, and whose results still count), and the calls of :data:`OTHER_JITS`; a
    compilation inside another counts as part of it, and one that raises ends there (see
    :class:`_Compilations`). Returns False, watching nothing, where neither Triton's hooks nor
    any of the other JITs are there."""
    compilations = _Compilations(on_start, on_end)
    hooked = _hook(lambda details: compilations.triton_started(), lambda details: compilations.triton_ended())
    wrapped = [_wrap(module, owner, name, compilations) for module, owner, name in OTHER_JITS]
    return hooked or any(wrapped)


class _Compilations:
    """Whether the process is compiling, from two kinds of announcement; ``on_start`` when it
    starts, ``on_end`` when it stops.

    A wrapped entry point (:data:`OTHER_JITS`) brackets its call in ``try``/``finally``: its
    start and end always pair up, whatever it raises. Triton's hooks do not: a compilation that
    raises gets no "after" call (ptxas refusing one of an autotuner's configurations, say, which
    the autotuner catches and goes on from). Left open, such a compilation would hide every
    later one of the process inside it (none would start the clock again) and count their time
    as running, until a case overran its timeout while compiling. A thread compiles one Triton
    kernel at a time, so each thread's is tracked on its own, and a compilation the thread left
    open is closed by its next one or by the return of the wrapped entry point around it.
    Triton's asynchronous compile mode, which ends compilations on another thread, is not
    used by the kernels flashcheck runs."""

    def __init__(self, on_start: Callable[[], None], on_end: Callable[[], None]):
        self.on_start, self.on_end = on_start, on_end
        self.wrapped = 0  # calls of wrapped entry points under way, on any thread
        self.triton: set[int] = set()  # threads inside a compilation that Triton's hooks announced
        self.lock = threading.RLock()

    def wrapped_started(self) -> None:
        self._change(lambda: setattr(self, "wrapped", self.wrapped + 1))

    def wrapped_ended(self) -> None:
        def end():
            self.wrapped = max(0, self.wrapped - 1)
            self.triton.discard(threading.get_ident())  # whatever it compiled is over
        self._change(end)

    def triton_started(self) -> None:
        thread = threading.get_ident()
        with self.lock:
            if thread in self.triton:  # the thread's last compilation raised: it ended there
                self._change(lambda: self.triton.discard(thread))
            self._change(lambda: self.triton.add(thread))

    def triton_ended(self) -> None:
        self._change(lambda: self.triton.discard(threading.get_ident()))

    def _compiling(self) -> bool:
        return self.wrapped > 0 or bool(self.triton)

    def _change(self, change: Callable[[], None]) -> None:
        with self.lock:
            was = self._compiling()
            change()
            now = self._compiling()
            if now and not was:
                self.on_start()
            elif was and not now:
                self.on_end()


def _wrap(module_name: str, owner: str | None, name: str, compilations: _Compilations) -> bool:
    """Time ``module_name.[owner.]name`` as compiling; False where it is not there."""
    module = sys.modules.get(module_name)
    if module is None and module_name.startswith("triton."):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return False
    target = getattr(module, owner, None) if owner is not None else module
    function = getattr(target, name, None) if target is not None else None
    if function is None:
        return False

    @functools.wraps(function)
    def timed(*args, **kwargs):
        compilations.wrapped_started()
        try:
            return function(*args, **kwargs)
        finally:
            compilations.wrapped_ended()

    setattr(target, name, timed)  # a wrapper already there (another watcher) still runs, inside
    return True


def log_compilations(folder, current_case: Callable[[], dict]) -> bool:
    """Append one JSON line per Triton JIT compilation in this process to
    ``folder/compilations-<pid>.jsonl``: ``kernel`` (Triton's description of the kernel, its
    launch options and the specialisation of every argument), ``seconds`` it took (a load
    from Triton's on-disk cache included), ``at`` (when it ended, seconds since the epoch)
    and ``current_case()``'s fields. Returns False, logging nothing, where Triton has no
    such hooks."""
    path = Path(folder) / f"compilations-{os.getpid()}.jsonl"
    started: dict = {}

    def start(details: dict) -> None:
        started.update(at=time.time(), kernel=details.get("repr"))

    def end(details: dict) -> None:
        now = time.time()
        line = {"kernel": started.get("kernel"), "seconds": round(now - started.get("at", now), 3),
                "at": round(now, 3), **current_case()}
        with path.open("a") as log:
            log.write(json.dumps(line, default=str) + "\n")

    return _hook(start, end)


def _hook(before_compiling: Callable[[dict], None], after_compiling: Callable[[dict], None]) -> bool:
    """Install the two callables, each given Triton's keyword details, around every JIT
    compilation, ahead of the hooks already set (see :func:`watch`)."""
    try:
        from triton import knobs
    except ImportError:
        return False
    runtime = knobs.runtime
    if not (hasattr(runtime, "jit_cache_hook") and hasattr(runtime, "jit_post_compile_hook")):
        return False
    earlier_before, earlier_after = runtime.jit_cache_hook, runtime.jit_post_compile_hook

    def before(**details):
        before_compiling(details)
        skip = earlier_before(**details) if earlier_before else None
        if skip:  # the earlier hook skips the compilation: no "after" call will come
            after_compiling(details)
        return skip

    def after(**details):
        after_compiling(details)
        return earlier_after(**details) if earlier_after else None

    runtime.jit_cache_hook, runtime.jit_post_compile_hook = before, after
    return True


class CaseClock:
    """The case-file record of one worker's current case, with its compile time: ``start``
    a case, ``compiling``/``compiled`` around each compilation, ``finish`` it. Every change
    goes to ``write(record)`` (the worker writes it atomically to its case file). The record
    also names, as ``previous``, the case the process finished last (None before its first):
    a device fault reported in one case may come from kernels of the one before it."""

    def __init__(self, write: Callable[[dict], None]):
        self._write = write
        self.previous: dict | None = None
        self.record: dict = {"property": None, "case": None, "started": time.time(), "previous": None}
        #: ``(seconds, compile_seconds)`` of the last finished case.
        self.last: tuple[float, float] = (0.0, 0.0)

    def start(self, prop: str, case_spec: str) -> None:
        self.record = {"property": prop, "case": case_spec, "started": time.time(),
                       "compile_seconds": 0.0, "compiling_since": None, "previous": self.previous}
        self._write(self.record)

    def finish(self) -> None:
        now = time.time()
        if self.record.get("case") is not None:
            self.last = (now - self.record["started"], compile_seconds(self.record, now))
            self.previous = {"property": self.record["property"], "case": self.record["case"]}
        self.record = {"property": None, "case": None, "started": now, "previous": self.previous}
        self._write(self.record)

    def compiling(self) -> None:
        if self.record.get("case") is not None and self.record["compiling_since"] is None:
            self.record["compiling_since"] = time.time()
            self._write(self.record)

    def compiled(self) -> None:
        since = self.record.get("compiling_since")
        if self.record.get("case") is not None and since is not None:
            self.record["compile_seconds"] += time.time() - since
            self.record["compiling_since"] = None
            self._write(self.record)


def compile_seconds(record: dict, now: float) -> float:
    """Seconds the case of ``record`` (a :class:`CaseClock` record) has spent compiling by
    ``now``, a compilation in progress included."""
    since = record.get("compiling_since")
    return record.get("compile_seconds", 0.0) + (now - since if since is not None else 0.0)


def running_seconds(record: dict, now: float) -> float:
    """Seconds the case of ``record`` has spent by ``now`` outside Triton's compilations."""
    return now - record["started"] - compile_seconds(record, now)


def overran(record: dict, now: float, timeout: float) -> bool:
    """Whether the case of ``record`` counts as hung at ``now``: more than ``timeout``
    seconds outside compilations, or more than ``timeout + COMPILE_ALLOWANCE`` in all."""
    return running_seconds(record, now) > timeout or now - record["started"] > timeout + COMPILE_ALLOWANCE
