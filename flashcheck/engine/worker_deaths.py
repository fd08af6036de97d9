"""How a worker that died or overran its case is reported: how it died, in which case, what it
said last and, for a case that overran, where its threads were when it was killed.

The parent (:mod:`flashcheck.engine.fuzz_workers`) builds these failures from what the worker
left: its case file's record (:mod:`flashcheck.engine.compile_clock`), its exit status, its log,
and the stacks it writes to the log at :data:`flashcheck.engine.fuzz_worker.STACKS_SIGNAL`.
"""

from __future__ import annotations

import os
import signal
import sysconfig
import time
from pathlib import Path

from flashcheck.engine import compile_clock
from flashcheck.engine.fuzz_result import Failure
from flashcheck.engine.fuzz_worker import FATAL_EXIT, STACKS_SIGNAL

#: Lines of a dead worker's log quoted in its failure's evidence.
LOG_TAIL_LINES = 20
#: Frames of each thread quoted in a hang's evidence, innermost first.
STACK_FRAMES_QUOTED = 12


def stacks_of(process, log_file: Path | None, wait: float = 2.0) -> tuple[int | None, str]:
    """Ask a live worker ``process`` for every thread's Python stack (:data:`STACKS_SIGNAL`), which
    it writes to ``log_file`` at once, from the signal handler, whatever its threads are doing. Returns the log's
    size before the stacks and the stacks, or ``(None, "")`` where they cannot be had."""
    if STACKS_SIGNAL is None or log_file is None:
        return None, ""
    try:
        logged = log_file.stat().st_size
        os.kill(process.pid, STACKS_SIGNAL)
    except (OSError, AttributeError):
        return None, ""
    deadline, size, settled = time.monotonic() + wait, logged, 0
    while time.monotonic() < deadline and settled < 2:  # until it has written and stopped writing
        time.sleep(0.05)
        now = log_file.stat().st_size
        settled = settled + 1 if now == size and now > logged else 0
        size = now
    with log_file.open("rb") as log:
        log.seek(logged)
        return logged, log.read().decode(errors="replace")


def _where_stuck(stacks: str) -> str:
    """The stacks a worker wrote (:func:`stacks_of`) as evidence lines: each thread's innermost
    :data:`STACK_FRAMES_QUOTED` frames, leaving out the threads that run only the standard
    library's code (a queue's feeder thread, say), which say nothing about the case."""
    threads: list[tuple[str, list[str]]] = []
    for line in stacks.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            threads.append((line.strip(), []))
        elif line.strip().startswith("File ") and threads:
            threads[-1][1].append(line.strip())
    lines = []
    for header, frames in threads:
        if header.startswith("Current") or not all(_in_standard_library(frame) for frame in frames):
            lines += ["  " + header] + ["    " + frame for frame in frames[:STACK_FRAMES_QUOTED]]
    return "\n".join(["where its threads were (innermost call first):"] + lines) if lines else ""


def _log_tail(log_file: Path | None, size: int | None = None) -> str:
    """What a dead worker said last, in its log's first ``size`` bytes (all of it by default):
    from Python's fatal-error report when there is one (it lists the innermost frames first),
    else the last lines."""
    try:
        with log_file.open("rb") as log:
            text = log.read(size if size is not None else -1).decode(errors="replace")
    except (OSError, AttributeError):
        return ""
    lines = [line for line in text.splitlines() if line.strip()]
    fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
    quoted = lines[fatal[-1]:][:LOG_TAIL_LINES] if fatal else lines[-LOG_TAIL_LINES:]
    return "\n".join(["the worker's last output:"] + ["  " + line for line in quoted]) if quoted else ""


def _in_standard_library(frame: str) -> bool:
    """Whether a stack line (``File "PATH", line N in NAME``) is in the standard library's code:
    under its folder, and not in a folder of installed packages there (an interpreter outside a
    virtual environment installs into its standard library's ``site-packages``)."""
    path = frame.split('"')[1] if frame.count('"') >= 2 else ""
    parts = Path(path).parts
    return (path.startswith(sysconfig.get_paths()["stdlib"] + os.sep)
            and "site-packages" not in parts and "dist-packages" not in parts)


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "an unknown status"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name} (exit {exitcode})"
        except ValueError:
            return f"signal {-exitcode}"
    if exitcode == FATAL_EXIT:
        return "a fatal device error, after which it could not go on"
    return f"exit status {exitcode}"


def crash_failure(impl: str, exitcode, running: dict | None, log_file, case_timeout: float | None = None):
    """The failure of a worker that died: how, in which case (``running``, its case record, or
    None between cases) and what it said last."""
    where = f"while running {running['property']}" if running else "between cases"
    evidence = f"the worker process died with {_describe_exit(exitcode)} {where}"
    previous = (running or {}).get("previous")
    if previous:
        # CUDA reports a kernel's fault at a later call: where this case alone does not fault,
        # the one before it in the same process is where to look.
        evidence += (f"\nthe case this process ran before it: {previous['property']} on {previous['case']} "
                     "(where this case alone does not reproduce it, replay that one first)")
    tail = _log_tail(log_file)
    # A worker exits FATAL_EXIT at a fatal verdict (flashcheck.engine.verdict), after logging it; the
    # replay of a fatal error reports it in one process, that of a crash needs a worker to die in.
    fatal = exitcode == FATAL_EXIT
    return Failure("fatal" if fatal else "crash", running and running["property"],
                   running and running["case"], evidence + ("\n" + tail if tail else ""), impl,
                   case_timeout=None if fatal else case_timeout)


def hang_failure(impl: str, timeout: float, running: dict, now: float, log_file, stacks: str = "",
                  logged: int | None = None):
    """The failure of a case that overran: what overran, where the worker's threads were
    (``stacks``, as :func:`stacks_of` got them) and what it had said before (its log's first
    ``logged`` bytes)."""
    compiling = compile_clock.compile_seconds(running, now)
    if compile_clock.running_seconds(running, now) > timeout:
        evidence = f"the case ran longer than the per-case timeout of {timeout:g} s"
        if compiling >= 1:
            evidence += f" besides {compiling:.0f} s of compiling Triton kernels, which it does not count"
    else:
        evidence = (f"the case spent {compiling:.0f} s compiling Triton kernels, past the per-case timeout of "
                    f"{timeout:g} s and the {compile_clock.COMPILE_ALLOWANCE:g} s more allowed for compiling")
    evidence += "; the worker was killed"
    where = _where_stuck(stacks)
    if where:
        evidence += "\n" + where
    tail = _log_tail(log_file, logged)
    return Failure("hang", running["property"], running["case"], evidence + ("\n" + tail if tail else ""), impl,
                   case_timeout=timeout)
