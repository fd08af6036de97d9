"""Fuzzing in spawned worker processes: a crash or a hang is a finding, not the end of the run.

The parent process runs no case and never initialises CUDA. It spawns workers (``spawn``,
not ``fork``: CUDA does not survive a fork), each running the in-process engine
(:func:`flashcheck.engine.fuzz.fuzz_in_process`) with a seed of its own and, on CUDA, pinned to one GPU
(worker ``i`` gets the ``i``-th visible GPU modulo their number, through
``CUDA_VISIBLE_DEVICES`` set before the worker imports torch: :mod:`flashcheck.engine.placement`).

Before every call a worker writes the property and case it is about to run to its case
file. The parent watches the workers: one that dies (a segfault, an abort, a fatal CUDA
error) or whose case has run longer than ``case_timeout``, not counting the time it spent
compiling Triton kernels (:mod:`flashcheck.engine.compile_clock`; it is then killed), is reported
as a failure carrying that case and the command that replays it, and a fresh worker takes
its place while time and ``max_crashes`` allow. A property failure found by one worker
stops the others while it shrinks its case; the run ends there.

Crashes and hangs cannot enter hypothesis's example database (the process that would
save them is gone), so the parent keeps them in the crash store
(:mod:`flashcheck.engine.crash_store`), and the next run replays them first.

This module imports neither triton nor anything that initialises CUDA at the top: a spawned
worker imports it before it has set its environment (``CUDA_VISIBLE_DEVICES``,
``TRITON_INTERPRET``); torch, which the package imports, reads ``CUDA_VISIBLE_DEVICES`` only
when CUDA is first used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import os
import queue
import random
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from flashcheck.engine import compile_clock, fuzz_events, placement
from flashcheck.engine.crash_store import CrashStore

#: Exit status of a worker that met an error after which it could not go on (a CUDA error).
FATAL_EXIT = 86
#: Lines of a dead worker's log quoted in its failure's evidence.
LOG_TAIL_LINES = 20
#: How often the parent looks at its workers, in seconds.
POLL_SECONDS = 0.1
#: The most workers ``--workers auto`` starts (:func:`default_workers`): as many as a GPU
#: machine of 16 cores has, since a case's time there is mostly one core compiling.
MAX_AUTO_WORKERS = 16


@dataclass(frozen=True)
class FuzzOptions:
    """Everything a worker needs to fuzz, as plain data (it crosses a spawn).

    ``impl``: a name :func:`flashcheck.peers.resolve` understands. ``sizes``: the name of
    the case sizes (:mod:`flashcheck.case_sizes`) or None (chosen by the device). ``database``: the hypothesis example
    database folder or None. ``seed``: None for a random run. ``replay_only``: run the
    stored crashes, hangs and failures, then stop (no new cases).
    """

    impl: str
    device: str
    budget: float
    seed: int | None = None
    properties: tuple[str, ...] | None = None
    sizes: str | None = None
    database: str | None = None
    workers: int = 1
    case_timeout: float = 120.0
    shrink_time: float = 30.0
    max_crashes: int = 3
    replay_only: bool = False


@dataclass
class _Slot:
    """One worker position: the process in it now and its files."""

    index: int
    gpu: str | None
    process: multiprocessing.Process | None = None
    stop: object = None  # a multiprocessing Event
    case_file: Path | None = None
    log_file: Path | None = None
    finished: bool = False  # the worker reported "done"
    replay: list = field(default_factory=list)  # stored crashes this worker replays first


def fuzz(options: FuzzOptions, *, on_progress: Callable | None = None, replay: list | None = None):
    """Fuzz ``options.impl`` in ``options.workers`` spawned processes for ``options.budget``
    seconds; return a :class:`flashcheck.engine.fuzz.FuzzResult` whose failures include crashes
    and hangs (each with its case when one was running), and whose ``stale`` lists the
    crash store's entries that no longer parse (:meth:`CrashStore.replayable`).

    ``replay``: ``(property, case spec)`` pairs the first worker runs first, in place of the
    crash store's (with ``replay_only`` and no database, a run of exactly those cases:
    ``flashcheck check --case-timeout``). ``on_progress(result)`` is called whenever a case
    completes. The run ends at the
    budget (cases in flight are given a short grace, then their workers are stopped), at
    the first property failure (once shrunk), or after ``max_crashes`` crashes and hangs.
    A SIGINT (Ctrl-C; called in the main thread) ends the run at once, keeping what it found:
    the workers are killed, their cases in flight are reported unfinished, a failure still
    being shrunk is reported as first drawn, and ``result.interrupted`` is set. Workers
    ignore SIGINT (Ctrl-C reaches the whole process group): the parent decides.
    Raises :class:`WorkerError` when a worker fails outside any case (a setup error), and
    :class:`~flashcheck.engine.crash_store.CrashStoreError` before starting any when the crash store cannot be read.
    """
    from flashcheck import interruption
    from flashcheck.engine.fuzz_result import FuzzResult

    interrupted = threading.Event()
    previous_sigint = _catch_sigint(interrupted)
    if interruption.requested():  # a Ctrl-C the command recorded before this handler took over
        interrupted.set()
    try:
        context = multiprocessing.get_context("spawn")
        messages = context.Queue()
        run_dir = Path(tempfile.mkdtemp(prefix="flashcheck-fuzz-"))
        store = CrashStore.in_database(options.database)
        result = FuzzResult()
        start = time.monotonic()
        deadline = start + options.budget
        wall_deadline = time.time() + options.budget
        slots = [_Slot(i, gpu) for i, gpu in enumerate(_gpus_for_workers(options))]
        slots[0].replay, result.stale = (list(replay), []) if replay is not None else store.replayable()
        result.workers = [{"worker": slot.index, "gpu": slot.gpu, "device": None, "cases": 0, "processes": 0,
                           "compile_classes": None}
                          for slot in slots]
        # One catalogue of compile classes for the whole run, each worker starting at a class
        # of its own (flashcheck.engine.focus): what one worker compiled, the others load
        # from Triton's cache when they widen to its class.
        focus_seed = options.seed if options.seed is not None else random.getrandbits(32)
        spawned = 0
        crashes = 0
        stopping = False
        finder: _Slot | None = None
        unshrunk: list = []  # the first property failure as found, before shrinking

        def spawn(slot: _Slot) -> None:
            nonlocal spawned
            seed = None if options.seed is None else options.seed + 7919 * spawned
            spawned += 1
            result.workers[slot.index]["processes"] += 1
            slot.case_file = run_dir / f"worker-{spawned}.case.json"
            slot.log_file = run_dir / f"worker-{spawned}.log"
            slot.stop = context.Event()
            slot.finished = False
            slot.process = context.Process(
                target=worker_main, name=f"flashcheck-worker-{slot.index}",
                args=(options, slot.index, seed, focus_seed, wall_deadline, slot.gpu, list(slot.replay),
                      str(slot.case_file), str(slot.log_file), messages, slot.stop),
                daemon=True,
            )
            with _sigint_held():  # inherited: the worker ignores Ctrl-C from its first instruction on
                slot.process.start()

        def unfinished(slot: _Slot) -> None:
            """The case in flight in ``slot``, about to be stopped: neither passed nor failed.
            Not called for the finder, whose case in flight is a step of shrinking the failure
            reported (as drawn), not a case of its own."""
            running = _running_case(slot.case_file)
            if running is not None:
                result.unfinished.append({
                    "property": running["property"], "case": running["case"],
                    "running_for": round(time.time() - running["started"], 1),
                })

        def drawn_failure() -> None:
            """The failure the finder was shrinking, as it was first drawn, unless shrunk already."""
            if finder is not None and not any(f.kind == "property" for f in result.failures):
                result.failures.append(dataclasses.replace(unshrunk[0], shrunk=False))

        def stop_all() -> None:
            nonlocal stopping
            stopping = True
            for slot in slots:
                if slot.stop is not None and slot is not finder:
                    slot.stop.set()

        def handle(index: int, event) -> None:
            nonlocal finder
            slot = slots[index]
            match event:
                case fuzz_events.Started():
                    result.workers[index]["device"] = event.device
                case fuzz_events.Passed():
                    result.count(event.property, event.kinds)
                    result.workers[index]["cases"] += 1
                    result.workers[index]["compile_classes"] = event.compile_classes
                    result.seconds = time.monotonic() - start
                    result.timed(result.seconds, event.seconds, event.compiling)
                    if on_progress is not None:
                        on_progress(result)
                case fuzz_events.Found():
                    if finder is None:
                        finder = slot
                        unshrunk.append(dataclasses.replace(event.failure, seconds=time.monotonic() - start))
                    stop_all()
                case fuzz_events.Counterexample():
                    # Timed from when it was first found, not from the end of its shrinking.
                    found_at = unshrunk[0].seconds if unshrunk else time.monotonic() - start
                    result.failures.append(dataclasses.replace(event.failure, seconds=found_at))
                case fuzz_events.Replayed():
                    slot.replay = [entry for entry in slot.replay if entry != (event.property, event.case)]
                    if not event.still_fails:
                        store.remove(event.property, event.case)
                case fuzz_events.KnownDivergenceSeen():
                    result.known.append(dataclasses.replace(event.failure, seconds=time.monotonic() - start))
                case fuzz_events.Declined():
                    result.decline(event.property, event.reason)
                case fuzz_events.NotApplicable():
                    result.not_applicable[event.property] = event.reason
                case fuzz_events.Stale():  # a stored entry the implementation's features no longer cover
                    result.stale.append({"property": event.property, "case": event.case, "problem": event.problem,
                                         "store": str(store.path)})
                case fuzz_events.Done():
                    slot.finished = True
                case fuzz_events.SetupFailed():
                    raise WorkerError(event.message)
                case fuzz_events.FlashcheckFailed():
                    raise FlashcheckBug(event.report)

        try:
            for slot in slots:
                if interrupted.is_set():
                    break
                spawn(slot)
            while any(slot.process is not None for slot in slots):
                try:
                    handle(*messages.get(timeout=POLL_SECONDS))
                except queue.Empty:
                    pass
                _drain(messages, handle)
                if interrupted.is_set():
                    result.interrupted = True
                    for slot in slots:
                        if slot.process is not None and slot is not finder:
                            unfinished(slot)
                    drawn_failure()
                    break
                if time.monotonic() > deadline and not stopping:
                    stop_all()
                for slot in slots:
                    failure = _check_worker(slot, options, messages, handle)
                    if failure is None:
                        continue
                    failure.seconds = time.monotonic() - start
                    result.failures.append(failure)
                    if failure.case is not None:
                        store.add(failure.property, failure.case, failure.kind)
                        slot.replay = [entry for entry in slot.replay if entry != (failure.property, failure.case)]
                    crashes += 1
                    if crashes >= options.max_crashes:
                        stop_all()
                    if not stopping and time.monotonic() < deadline - 1.0:
                        spawn(slot)
                overtime = time.monotonic() - deadline
                for slot in slots:
                    # Past the budget, a worker between cases has nothing left to say: stop it
                    # now. One with a case in flight gets a grace to finish it; a finder still
                    # shrinking (its shrinking ends with the budget) gets a second grace, then
                    # its failure is reported as first found, unshrunk.
                    if slot.process is None or overtime <= 0:
                        continue
                    if slot is finder:
                        limit = 2 * _grace(options)
                    else:
                        limit = _grace(options) if _running_case(slot.case_file) is not None else 0.0
                    if overtime > limit:
                        if slot is not finder:  # the finder's case in flight is a step of its shrinking
                            unfinished(slot)  # not a hang (it did not reach the per-case timeout), not a pass
                        _kill(slot)
                        if slot is finder:
                            drawn_failure()
            if interrupted.is_set() and not result.interrupted:  # before any worker was started
                result.interrupted = True
        finally:
            for slot in slots:
                if slot.process is not None:
                    _kill(slot)
            # The case files and logs served while the workers ran; what a dead worker said
            # is already quoted in its failure.
            shutil.rmtree(run_dir, ignore_errors=True)
        _drain(messages, handle)
    finally:
        _restore_sigint(previous_sigint)  # last: a second Ctrl-C does not cut the clean-up short
    result.seconds = time.monotonic() - start
    return result


class WorkerError(RuntimeError):
    """A worker failed outside any case: the implementation could not be loaded, or the
    fuzzer itself broke. Not a finding about the implementation."""


class FlashcheckBug(WorkerError):
    """flashcheck's own code failed in a worker (the message carries its traceback): a bug
    in flashcheck, not a finding about the implementation, and not a usage error."""


def _check_worker(slot: _Slot, options: FuzzOptions, messages, handle):
    """A crash or hang :class:`~flashcheck.engine.fuzz.Failure` if the worker in ``slot`` died
    (or exited without finishing) or has run its case past the timeout; None otherwise.
    The slot is empty afterwards whenever its process is gone."""
    process = slot.process
    if process is None:
        return None
    running = _running_case(slot.case_file)
    if not process.is_alive():
        process.join()
        _drain(messages, handle)  # what it said before it went
        slot.process = None
        if slot.finished and process.exitcode == 0:
            return None
        return _crash_failure(options.impl, process.exitcode, running, slot.log_file, options.case_timeout)
    now = time.time()
    if running is not None and compile_clock.overran(running, now, options.case_timeout):
        _kill(slot)
        return _hang_failure(options.impl, options.case_timeout, running, now, slot.log_file)
    return None


def _catch_sigint(caught: threading.Event):
    """From now on SIGINT sets ``caught`` instead of raising KeyboardInterrupt (in the main
    thread; elsewhere signals cannot be set); returns what :func:`_restore_sigint` restores."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, lambda signum, frame: caught.set())


def _restore_sigint(previous) -> None:
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _sigint_held():
    """SIGINT blocked in this thread for the duration, so that a process started meanwhile
    inherits it blocked, through its exec and start-up, until it ignores it
    (:func:`worker_main`); a Ctrl-C meanwhile reaches this process when the block ends, not
    lost (ignoring SIGINT instead, as once, dropped a Ctrl-C that came while a worker started)."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: ignore it, in the main thread
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
        return
    # A spawn starts multiprocessing's resource tracker first if it is not running, and
    # unblocks SIGINT on the way (resource_tracker.ensure_running): started now, it is not then.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _kill(slot: _Slot) -> None:
    slot.process.kill()
    slot.process.join()
    slot.process = None


def _grace(options: FuzzOptions) -> float:
    """How long cases still running at the end of the budget may finish: 5% of the budget
    (at least 2 s), so that the run ends within 10% of it."""
    return max(2.0, 0.05 * options.budget)


def default_workers(device: str) -> int:
    """The worker count of ``flashcheck fuzz --workers auto``: one per CPU core this process
    may use, at most :data:`MAX_AUTO_WORKERS`, and on CUDA at least one per visible GPU
    (:func:`flashcheck.engine.placement.default_worker_count`).

    A case's time is mostly single-threaded CPU work on either device: on a GPU, Triton
    compiling the kernel variants the case needs (seconds per new variant, against
    milliseconds of GPU time), which workers sharing the GPU overlap; in the interpreter,
    Python running the kernel. Two workers on a 2-core machine ran 1.9 times the cases of
    one in the interpreter (90 s, the project kernel)."""
    return placement.default_worker_count(
        MAX_AUTO_WORKERS, gpus=len(placement.visible_gpus()) if device == "cuda" else 0)


def _gpus_for_workers(options: FuzzOptions) -> list[str | None]:
    """The ``CUDA_VISIBLE_DEVICES`` value each worker is pinned with: on CUDA, worker ``i``'s
    entry of this process's visible GPUs, ``i`` modulo their number, even where there is
    only one (:func:`flashcheck.engine.placement.pin_environment`); None on the CPU."""
    if options.device != "cuda":
        return [None] * options.workers
    count = len(placement.visible_gpus())
    if not count:
        raise ValueError("--device cuda: no visible GPU")
    visible = os.environ.get(placement.VISIBLE_DEVICES)
    return [placement.pin_environment(placement.gpu_for_worker(i, count), visible)[placement.VISIBLE_DEVICES]
            for i in range(options.workers)]


def _drain(messages, handle) -> None:
    while True:
        try:
            handle(*messages.get_nowait())
        except queue.Empty:
            return


def _running_case(case_file: Path | None) -> dict | None:
    """The case a worker has started and not finished, from its case file (None if idle)."""
    try:
        record = json.loads(case_file.read_text())
    except (OSError, ValueError, AttributeError):
        return None
    return record if record.get("case") is not None else None


def _log_tail(log_file: Path | None) -> str:
    """What a dead worker said last: from Python's fatal-error report when there is one
    (it lists the innermost frames first), else the last lines of its log."""
    try:
        lines = [line for line in log_file.read_text(errors="replace").splitlines() if line.strip()]
    except (OSError, AttributeError):
        return ""
    fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
    quoted = lines[fatal[-1]:][:LOG_TAIL_LINES] if fatal else lines[-LOG_TAIL_LINES:]
    return "\n".join(["the worker's last output:"] + ["  " + line for line in quoted]) if quoted else ""


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


def _crash_failure(impl: str, exitcode, running: dict | None, log_file, case_timeout: float | None = None):
    from flashcheck.engine.fuzz_result import Failure

    where = f"while running {running['property']}" if running else "between cases"
    evidence = f"the worker process died with {_describe_exit(exitcode)} {where}"
    tail = _log_tail(log_file)
    # A worker exits FATAL_EXIT at a fatal verdict (flashcheck.engine.verdict), after logging it; the
    # replay of a fatal error reports it in one process, that of a crash needs a worker to die in.
    fatal = exitcode == FATAL_EXIT
    return Failure("fatal" if fatal else "crash", running and running["property"],
                   running and running["case"], evidence + ("\n" + tail if tail else ""), impl,
                   case_timeout=None if fatal else case_timeout)


def _hang_failure(impl: str, timeout: float, running: dict, now: float, log_file):
    from flashcheck.engine.fuzz_result import Failure

    compiling = compile_clock.compile_seconds(running, now)
    if compile_clock.running_seconds(running, now) > timeout:
        evidence = f"the case ran longer than the per-case timeout of {timeout:g} s"
        if compiling >= 1:
            evidence += f" besides {compiling:.0f} s of compiling Triton kernels, which it does not count"
    else:
        evidence = (f"the case spent {compiling:.0f} s compiling Triton kernels, past the per-case timeout of "
                    f"{timeout:g} s and the {compile_clock.COMPILE_ALLOWANCE:g} s more allowed for compiling")
    evidence += "; the worker was killed"
    tail = _log_tail(log_file)
    return Failure("hang", running["property"], running["case"], evidence + ("\n" + tail if tail else ""), impl,
                   case_timeout=timeout)


# -- the worker side ---------------------------------------------------------------------


def worker_main(options: FuzzOptions, index: int, seed, focus_seed: int, wall_deadline: float, gpu, replay,
                case_file: str, log_file: str, messages, stop) -> None:
    """A spawned worker: set the environment, load the implementation, replay stored
    crashes, fuzz until the deadline or ``stop``, and report through ``messages``
    (``(index, event)`` tuples, :mod:`flashcheck.engine.fuzz_events`). Ignores SIGINT: the parent decides what Ctrl-C ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # discards one that came while it was blocked
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent (_sigint_held)
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # before torch is imported: this process sees one GPU
    if options.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    _redirect_output(log_file)
    import faulthandler

    faulthandler.enable()  # a segfault leaves a Python traceback in the log
    try:
        from flashcheck import case_sizes, peers, protocol
        from flashcheck.engine import fuzz
        from flashcheck.engine.focus import WideningFocus
        from flashcheck.engine.verdict import Outcome

        impl = peers.resolve(options.impl)
        protocol.prepare(impl)  # a library that cannot be imported: a usage error, not a finding
        sizes = case_sizes.choose(options.sizes)
        # Compile-aware drawing: the run's catalogue of compile classes (another each run), from
        # a class of this worker's own, one class at first and more as its compilations pay off.
        focus = WideningFocus(case_sizes.with_focus_seed(sizes, focus_seed, start=index))
    except Exception as error:  # noqa: BLE001 - any setup error ends the run as a usage problem
        messages.put((index, fuzz_events.SetupFailed(f"worker {index} could not load {options.impl!r}: {error}")))
        return
    messages.put((index, fuzz_events.Started(placement.describe_device(options.device))))
    case_path = Path(case_file)
    clock = compile_clock.CaseClock(lambda record: _write_atomically(case_path, record))
    compile_clock.watch(clock.compiling, clock.compiled)  # compiling is not hanging

    def before_case(prop: str, case) -> None:
        clock.start(prop, case.spec())

    def after_case(verdict) -> None:
        if verdict.outcome is Outcome.FATAL:
            # The worker exits with the case still on file, which the parent reports with it,
            # and the log's tail, which it quotes: the error's traceback, then the verdict with
            # its replay line.
            import traceback

            traceback.print_exception(verdict.error)
            print(verdict)
            _flush_and_exit(FATAL_EXIT)
        clock.finish()  # the case is over, whatever its verdict

    def report(event) -> None:
        if isinstance(event, fuzz_events.Passed):  # with the times the clock measured
            focus.record(*clock.last)
            seconds, compiling = clock.last
            event = dataclasses.replace(event, seconds=seconds, compiling=compiling,
                                        compile_classes=focus.classes if focus.sizes().focus else None)
        messages.put((index, event))

    try:
        if not _replay(impl, options, replay, report, before_case, after_case):
            report(fuzz_events.Done())
            return
        fuzz.fuzz_in_process(
            impl, impl_name=options.impl, budget=max(0.0, wall_deadline - time.time()), device=options.device,
            sizes=focus.sizes, seed=seed, database=options.database,
            properties=list(options.properties or ()) or None,
            on_event=report, before_case=before_case, after_case=after_case,
            should_stop=stop.is_set, shrink_time=options.shrink_time, replay_only=options.replay_only,
            # Every worker's first turns would start from the same simplest cases: worker 0 runs them.
            simplest_run_elsewhere=index > 0,
        )
    except Exception as error:  # noqa: BLE001 - flashcheck itself broke: a bug, not a finding
        from flashcheck.engine.verdict import FlashcheckError

        if isinstance(error, FlashcheckError):  # its message carries the case and the traceback
            problem = str(error)
        else:
            import traceback

            problem = f"the fuzzer failed (a bug in flashcheck, not a finding about {options.impl}):\n" \
                     f"{traceback.format_exc()}"
        messages.put((index, fuzz_events.FlashcheckFailed(f"worker {index}: {problem}")))
        return
    report(fuzz_events.Done())


def _replay(impl, options, replay, report, before_case, after_case) -> bool:
    """Run stored crash cases first, each decided as fuzzing decides a case
    (:func:`flashcheck.engine.verdict.decide`). Returns False when one of them failed a property
    (the run then ends with it, as with any property failure). A case the implementation
    declines is counted as declined, not as a case run (and, not crashing, leaves the store).
    One of a property the run does not choose (``--property``) waits in the store for a run
    that does; one the implementation's features no longer cover (a feature it stopped
    declaring, a case needing one) is reported as stale and kept, never run: it would test
    what the implementation does not claim."""
    from flashcheck import protocol
    from flashcheck.case import Case
    from flashcheck.engine.fuzz import case_kinds
    from flashcheck.engine.fuzz_result import Failure
    from flashcheck.properties import PROPERTIES
    from flashcheck.engine.verdict import Outcome, decide

    features = protocol.features_of(impl, options.device)
    for prop_name, spec in replay:
        prop, case = PROPERTIES.get(prop_name), Case.from_spec(spec)
        if prop is None or (options.properties and prop_name not in options.properties):
            continue
        problem = prop.not_runnable_because(features, case, device=options.device)
        if problem is not None:
            report(fuzz_events.Stale(prop_name, spec, f"no longer runnable for {options.impl}: {problem}"))
            continue
        before_case(prop_name, case)
        verdict = decide(prop, impl, case, device=options.device, impl_name=options.impl)
        after_case(verdict)
        if verdict.outcome is Outcome.FLASHCHECK_ERROR:
            raise verdict.error
        if verdict.outcome is Outcome.FAILED:
            failure = dataclasses.replace(Failure.from_verdict(verdict), shrunk=False)  # a stored case, as stored
            report(fuzz_events.Replayed(prop_name, spec, still_fails=True))
            report(fuzz_events.Found(failure))
            report(fuzz_events.Counterexample(failure))
            return False
        if verdict.outcome is Outcome.DECLINED:
            report(fuzz_events.Declined(prop_name, spec, verdict.reason))
        elif verdict.outcome is Outcome.KNOWN:
            report(fuzz_events.KnownDivergenceSeen(Failure.from_verdict(verdict)))
        else:
            report(fuzz_events.Passed(prop_name, spec, tuple(case_kinds(case))))
        report(fuzz_events.Replayed(prop_name, spec, still_fails=False))
    return True


def _write_atomically(path: Path, record: dict) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record))
    os.replace(temporary, path)


def _redirect_output(log_file: str) -> None:
    """Send this process's stdout and stderr, native writes included, to ``log_file``."""
    import sys

    descriptor = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def _flush_and_exit(status: int) -> None:
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
