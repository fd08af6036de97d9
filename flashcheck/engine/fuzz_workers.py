"""Fuzzing in spawned worker processes: a crash or a hang is a finding, not the end of the run.

The parent process runs no case and never initialises CUDA. It spawns workers (``spawn``,
not ``fork``: CUDA does not survive a fork), each running the in-process engine
(:func:`flashcheck.engine.fuzz.fuzz_in_process`) with a seed of its own and, on CUDA, pinned to one GPU
(worker ``i`` gets the ``i``-th visible GPU modulo their number, through
``CUDA_VISIBLE_DEVICES`` set before the worker imports torch: :mod:`flashcheck.engine.placement`,
:func:`~flashcheck.engine.placement.worker_pins` here and
:func:`~flashcheck.engine.placement.pin_this_process` in the worker).
What runs inside a worker is :mod:`flashcheck.engine.fuzz_worker`; this module is the parent's
side (:func:`fuzz`, run by a :class:`WorkerPoolRun`).

Before every call a worker writes the property and case it is about to run to its case
file. The parent watches the workers: one that dies (a segfault, an abort, a fatal CUDA
error) or whose case has run longer than ``case_timeout``, not counting the time it spent
compiling Triton kernels (:mod:`flashcheck.engine.compile_clock`; it is then killed), is reported
as a failure carrying that case and the command that replays it, and a fresh worker takes
its place while time and ``max_crashes`` allow. A property failure found by one worker
stops the others while it shrinks its case; the run ends there. Everything else the
workers have to say comes as events on one queue (:mod:`flashcheck.engine.fuzz_events`),
from which the parent builds the run's result.

A campaign (``keep_going``) goes on to the end of its budget instead: each worker shrinks the
failures it finds while the others go on fuzzing, and the parent reports each distinct
failure once, by its signature (:attr:`flashcheck.engine.fuzz_result.Failure.signature`),
counting its repeats, crashes and hangs included. It publishes the signatures reported and
the case classes to avoid on the campaign's board (:mod:`flashcheck.engine.campaign`), which
the workers read: a repeat is counted there, not shrunk again, and a case class whose crashes
or hangs of one signature reach ``max_crashes`` is drawn rarely from then on, so that one
crashing bug neither ends the campaign nor spends it.

Crashes and hangs cannot enter hypothesis's example database (the process that would
save them is gone), so the parent keeps them in the crash store
(:mod:`flashcheck.engine.crash_store`), and the next run replays them first.

This module imports neither triton nor anything that initialises CUDA at the top.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
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

from flashcheck.engine import compile_clock, fuzz_events, interruption, placement
from flashcheck.engine.campaign import Board, CampaignState
from flashcheck.engine.crash_store import CrashStore
from flashcheck.engine.fuzz_result import case_class
from flashcheck.engine.fuzz_worker import DECLARED_FAULT_EXIT, FuzzOptions, WorkerTask, worker_main
from flashcheck.engine.worker_deaths import crash_failure, hang_failure, stacks_of

#: How often the parent looks at its workers, in seconds.
POLL_SECONDS = 0.1
#: How often a campaign sharing a database looks there for failures that runs elsewhere have
#: shrunk since it started: machines of a CI matrix start together, so what one shrinks in
#: its first minute the others should count as a repeat from then on, not shrink again.
SHARED_REFRESH_SECONDS = 5.0
#: The most workers ``--workers auto`` starts (:func:`default_workers`) per GPU, or in all
#: without one: as many as a GPU machine of 16 cores has, since a case's time there is mostly
#: one core compiling.
MAX_AUTO_WORKERS = 16


@dataclass
class _Slot:
    """One worker position: the process in it now and its files."""

    index: int
    gpu: str | None
    process: multiprocessing.Process | None = None
    stop: object = None  # a multiprocessing Event
    case_file: Path | None = None
    log_file: Path | None = None
    finished: bool = False  # the worker reported that it is done
    replay: list = field(default_factory=list)  # stored crashes this worker replays first

    def replayed(self, prop: str, case: str) -> None:
        """``(prop, case)`` is off this worker's replay list: it ran, whatever it did."""
        self.replay = [entry for entry in self.replay if entry != (prop, case)]


def fuzz(options: FuzzOptions, *, on_progress: Callable | None = None, replay: list | None = None,
         counterexamples: list | None = None):
    """Fuzz ``options.impl`` in ``options.workers`` spawned processes for ``options.budget``
    seconds; return a :class:`flashcheck.engine.fuzz.FuzzResult` whose failures include crashes
    and hangs (each with its case when one was running), and whose ``stale`` lists the crash
    store's entries that no longer parse (:meth:`flashcheck.engine.crash_store.CrashStore.replayable`).

    ``replay``: ``(property, case spec)`` pairs the first worker runs first, in place of the
    crash store's (with ``replay_only`` and no database, a run of exactly those cases:
    ``flashcheck check --case-timeout``). ``counterexamples``: recorded ``(property, case
    spec)`` pairs (:mod:`flashcheck.regress.counterexamples`) checked after those and before
    anything is drawn, dealt round the workers; one that fails is a counterexample like any
    replayed case. ``on_progress(result)`` is called whenever a case
    completes. The run ends at the
    budget (cases in flight are given a short grace, then their workers are stopped), at
    the first property failure (once shrunk), or after ``max_crashes`` crashes and hangs;
    with ``options.keep_going`` only at the budget (module docstring).
    A SIGINT (Ctrl-C) or SIGTERM (a job's time limit; called in the main thread) ends the run at
    once, keeping what it found:
    the workers are killed, their cases in flight are reported unfinished, a failure still
    being shrunk is reported as first drawn, and ``result.interrupted`` is set. Workers
    ignore both (Ctrl-C reaches the whole process group, and so may a job's SIGTERM): the parent
    decides. An error
    of flashcheck's own code in a worker (a bug in flashcheck, not a finding) ends the run
    the same way, keeping what it found, with the worker's report of it (its case and
    traceback) in ``result.flashcheck_error``.
    Raises :class:`WorkerError` when a worker fails to set up (the implementation cannot be
    loaded), and :class:`~flashcheck.engine.crash_store.CrashStoreError` before starting any
    when the crash store cannot be read.
    """
    interrupted = threading.Event()
    previous_handlers = _catch_interruptions(interrupted)
    if interruption.requested():  # a Ctrl-C the command recorded before this handler took over
        interrupted.set()
    try:
        return WorkerPoolRun(options, interrupted, on_progress=on_progress, replay=replay,
                             counterexamples=counterexamples).run()
    finally:
        interruption.restore(previous_handlers)  # last: a second Ctrl-C does not cut the clean-up short


class WorkerPoolRun:
    """One run of :func:`fuzz`, whose docstring is its specification: the worker slots and
    their processes, the queue they report on, the crash store, the clock, and the result
    built from their events. :meth:`run` runs it, once; ``interrupted`` (a threading Event) is
    set by the caller's SIGINT and SIGTERM handler."""

    def __init__(self, options: FuzzOptions, interrupted: threading.Event, *, on_progress: Callable | None,
                 replay: list | None, counterexamples: list | None = None):
        from flashcheck.engine.fuzz_result import FuzzResult

        self.options, self.interrupted, self.on_progress = options, interrupted, on_progress
        self.context = multiprocessing.get_context("spawn")
        self.messages = self.context.Queue()
        self.store = CrashStore.in_database(options.database, options.shared_database)
        #: A campaign sharing a database: the failures earlier runs shrank there, by signature
        #: (:class:`flashcheck.engine.shared_database.SharedFailures`), which the workers count
        #: as repeats instead of shrinking them again.
        self.shared_failures = None
        self.shrunk_elsewhere: dict = {}
        if options.keep_going and options.shared_database is not None and options.database is not None:
            from flashcheck.engine.shared_database import SharedFailures

            self.shared_failures = SharedFailures(options.shared_database, options.database)
            self.shrunk_elsewhere = self.shared_failures.load()
        self.next_shared_refresh = 0.0  # monotonic time of the next look at the shared failures
        self.result = FuzzResult()
        self.slots = [_Slot(i, gpu) for i, gpu in enumerate(_worker_pins(options))]
        self.slots[0].replay, self.result.stale = (list(replay), []) if replay is not None else self.store.replayable()
        for number, entry in enumerate(counterexamples or ()):  # dealt round, so each worker has a share
            self.slots[number % len(self.slots)].replay.append(tuple(entry))
        self.result.workers = [{"worker": slot.index, "gpu": slot.gpu, "device": None, "capability": None, "cases": 0,
                                "processes": 0, "compile_classes": None, "classes": None}
                               for slot in self.slots]
        # One catalogue of compile classes for the whole run, each worker starting at a class
        # of its own (flashcheck.engine.focus): what one worker compiled, the others load
        # from Triton's cache when they widen to its class.
        self.focus_seed = options.seed if options.seed is not None else random.getrandbits(32)
        self.run_dir: Path | None = None  # the case files and logs, while the workers run
        self.spawned = 0  # worker processes started so far
        self.crashes = 0  # crashes and hangs so far
        self.board: Board | None = None  # in run_dir (run): what the workers are told
        self.avoided: set[str] = set()  # case classes a campaign draws rarely
        self.causes: set[str] = set()  # known divergences seen, each by itself (its reason)
        self.stopping = False  # the workers were told to stop
        #: The workers shrinking a property failure, by slot index, with that failure as first
        #: found: the run's first one only, unless it is a campaign.
        self.finders: dict[int, object] = {}
        self.start = time.monotonic()
        self.deadline = self.start + options.budget
        self.wall_deadline = time.time() + options.budget

    def run(self):
        self.run_dir = Path(tempfile.mkdtemp(prefix="flashcheck-fuzz-"))
        self.board = Board(self.run_dir / "campaign.json")
        self.publish()
        try:
            for slot in self.slots:
                if self.interrupted.is_set():
                    break
                self.spawn(slot)
            while any(slot.process is not None for slot in self.slots):
                try:
                    self.handle(*self.messages.get(timeout=POLL_SECONDS))
                except queue.Empty:
                    pass
                self.drain()
                if self.interrupted.is_set() or self.result.flashcheck_error is not None:
                    self.result.interrupted = self.interrupted.is_set()
                    self.end_early()
                    break
                if time.monotonic() > self.deadline and not self.stopping:
                    self.stop_all()
                self.refresh_shared_failures()
                for slot in self.slots:
                    self.watch(slot)
                self.end_overtime()
            if self.interrupted.is_set() and not self.result.interrupted:  # before any worker was started
                self.result.interrupted = True
        finally:
            for slot in self.slots:
                if slot.process is not None:
                    _kill(slot)
            # The case files and logs served while the workers ran; what a dead worker said
            # is already quoted in its failure. The board goes with them: no worker is left to
            # read it, and a report drained below must not write into the removed folder.
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.board = None
        self.drain()
        if self.result.flashcheck_error is not None:  # told last, by a finder shrinking: its failure as drawn
            self.drawn_failure()
        self.result.seconds = time.monotonic() - self.start
        return self.result

    def spawn(self, slot: _Slot) -> None:
        """Start a fresh worker process in ``slot``."""
        options = self.options
        seed = None if options.seed is None else options.seed + 7919 * self.spawned
        self.spawned += 1
        self.result.workers[slot.index]["processes"] += 1
        slot.case_file = self.run_dir / f"worker-{self.spawned}.case.json"
        slot.log_file = self.run_dir / f"worker-{self.spawned}.log"
        slot.stop = self.context.Event()
        slot.finished = False
        task = WorkerTask(options, slot.index, seed, self.focus_seed, self.wall_deadline, slot.gpu,
                          tuple(slot.replay), str(slot.case_file), str(slot.log_file),
                          str(self.board.path) if self.board is not None else None,
                          shares_device=slot.gpu is not None and sum(other.gpu == slot.gpu for other in self.slots) > 1)
        slot.process = self.context.Process(target=worker_main, name=f"flashcheck-worker-{slot.index}",
                                            args=(task, self.messages, slot.stop), daemon=True)
        with _interruptions_held():  # inherited: the worker ignores Ctrl-C from its first instruction on
            slot.process.start()

    def handle(self, index: int, event) -> None:
        """Act on ``event`` (:mod:`flashcheck.engine.fuzz_events`), reported by worker ``index``."""
        slot, result, now = self.slots[index], self.result, time.monotonic() - self.start
        match event:
            case fuzz_events.Started():
                result.workers[index].update(device=event.device, capability=event.capability)
                if event.classes is not None:
                    result.workers[index]["classes"] = list(event.classes)
            case fuzz_events.Passed():
                result.count(event.property, event.kinds, event.unchecked)
                result.workers[index]["cases"] += 1
                result.workers[index]["compile_classes"] = event.compile_classes
                if event.classes is not None:
                    result.workers[index]["classes"] = list(event.classes)
                result.seconds = now
                result.timed(now, event.seconds, event.compiling, event.phases)
                if self.on_progress is not None:
                    self.on_progress(result)
            case fuzz_events.OutOfMemory():
                result.out_of_memory(event.property, event.case, event.report, worker=index,
                                     in_the_call=event.in_the_call)
            case fuzz_events.Found():
                if self.options.keep_going or not self.finders:
                    self.finders.setdefault(index, dataclasses.replace(event.failure, seconds=now))
                if not self.options.keep_going:
                    self.stop_all()
            case fuzz_events.Counterexample():
                # Timed from when it was first found, not from the end of its shrinking.
                first = self.finders.pop(index, None)
                self.report(dataclasses.replace(event.failure, seconds=first.seconds if first is not None else now))
            case fuzz_events.Repeated():
                stored = self.shrunk_elsewhere.get(event.signature)
                if stored is not None and result.failure_with(event.signature) is None:
                    self.report(dataclasses.replace(stored, seconds=now, count=1, shrunk_elsewhere=True))
                else:
                    result.repeated(event.signature)
            case fuzz_events.Replayed():
                if event.still_fails:
                    slot.replayed(event.property, event.case)
                else:
                    self.retire(slot, event.property, event.case)
            case fuzz_events.KnownDivergenceSeen():
                seen = {known.property for known in result.known}
                result.add_known(dataclasses.replace(event.failure, seconds=now))
                if event.failure.property not in seen:
                    self.publish()  # every worker steers off it now
            case fuzz_events.KnownCase():
                result.known_cases[event.property] += 1
                if event.cause and event.cause not in self.causes:
                    self.causes.add(event.cause)
                    self.publish()  # every worker steers off its cases now, in every property
            case fuzz_events.Declined():
                result.decline(event.property, event.reason, inside_domain=event.case if event.inside_domain else None)
            case fuzz_events.NotApplicable():
                result.not_applicable[event.property] = event.reason
            case fuzz_events.Stale():  # a stored entry the implementation's features no longer cover
                result.stale.append({"property": event.property, "case": event.case, "problem": event.problem,
                                     "store": str(self.store.path)})
            case fuzz_events.Done():
                slot.finished = True
            case fuzz_events.SetupFailed():
                raise WorkerError(event.message)
            case fuzz_events.FlashcheckFailed():  # the worker stopped there, and the run ends (run)
                slot.finished = True
                if result.flashcheck_error is None:
                    result.flashcheck_error = event.report
                self.stop_all()

    def retire(self, slot: _Slot, prop: str, case: str) -> None:
        """A stored case that no longer fails as a finding (it passed, or failed as a known
        divergence): off the slot's replay list and out of the crash store."""
        slot.replayed(prop, case)
        self.store.remove(prop, case)

    def drain(self) -> None:
        """Handle every event already on the queue."""
        while True:
            try:
                self.handle(*self.messages.get_nowait())
            except queue.Empty:
                return

    def watch(self, slot: _Slot) -> None:
        """Report the worker in ``slot`` as a crash or a hang if it died (or exited without
        finishing; a declared fault is no crash: :data:`DECLARED_FAULT_EXIT`) or has run its case
        past the timeout (it is then killed), and start a fresh one in its place while time and
        ``max_crashes`` allow. The slot is empty afterwards whenever its process is gone."""
        process, options = slot.process, self.options
        if process is None:
            return
        running = _running_case(slot.case_file)
        now = time.time()
        if not process.is_alive():
            process.join()
            self.drain()  # what it said before it went
            slot.process = None
            if slot.finished and process.exitcode == 0:
                return
            if process.exitcode == DECLARED_FAULT_EXIT:
                failure = None  # expected: the worker reported it as a known divergence
                if running is not None:  # if it was replaying a stored case, that case is done with
                    self.retire(slot, running["property"], running["case"])
            else:
                failure = crash_failure(options.impl, process.exitcode, running, slot.log_file, options.case_timeout)
        elif running is not None and compile_clock.overran(running, now, options.case_timeout):
            logged, stacks = stacks_of(process, slot.log_file)
            _kill(slot)
            failure = hang_failure(options.impl, options.case_timeout, running, now, slot.log_file, stacks, logged)
        else:
            return
        shrinking = self.finders.pop(slot.index, None)
        if shrinking is not None:  # it died shrinking a failure: that one as first drawn
            self.report(dataclasses.replace(shrinking, shrunk=False))
        if failure is not None:
            self.crashed(slot, failure)
        if not self.stopping and time.monotonic() < self.deadline - 1.0:
            self.spawn(slot)

    def crashed(self, slot: _Slot, failure) -> None:
        """Report the crash or hang ``failure`` of the worker in ``slot``, keep its case for the
        next run's replay and, in a campaign, have the workers draw its case class rarely once it
        has recurred ``max_crashes`` times; outside one, stop the run at ``max_crashes``."""
        options = self.options
        failure.seconds = time.monotonic() - self.start
        reported = self.report(failure)
        if failure.case is not None:
            self.store.add(failure.property, failure.case, failure.kind)
            slot.replayed(failure.property, failure.case)
        self.crashes += 1
        if not options.keep_going and self.crashes >= options.max_crashes:
            self.stop_all()
        elif options.keep_going and reported.count >= options.max_crashes and failure.case is not None:
            crashing = case_class(failure.case)
            if crashing not in self.avoided:
                self.avoided.add(crashing)
                self.publish()

    def end_overtime(self) -> None:
        """Past the budget, a worker stops on its own (its own clock ends with the budget): one
        between cases exits, one with a case in flight finishes it first. Either is killed once
        the grace is over; a finder still shrinking (its shrinking ends with the budget) gets a
        second grace, then its failure is reported as first found, unshrunk. A worker left to
        exit runs its finalizers: the locks its libraries made (FlagGems makes a multiprocessing
        lock per kernel at import) are released, where a killed one leaves them to
        multiprocessing's resource tracker, which warns of them as leaked after the summary."""
        overtime = time.monotonic() - self.deadline
        if overtime <= 0:
            return
        for slot in self.slots:
            if slot.process is None:
                continue
            limit = (2 if slot.index in self.finders else 1) * _grace(self.options)
            if overtime > limit:
                if slot.index not in self.finders:  # a finder's case in flight is a step of its shrinking
                    self.unfinished(slot)  # not a hang (it did not reach the per-case timeout), not a pass
                _kill(slot)
                self.drawn_failure(slot)

    def end_early(self) -> None:
        """The run ends before its time (interrupted, or flashcheck's own code failed): the
        cases in flight are unfinished, and a failure still being shrunk is reported as drawn.
        The workers are killed on the way out."""
        for slot in self.slots:
            if slot.process is not None and slot.index not in self.finders:
                self.unfinished(slot)
        self.drawn_failure()

    def unfinished(self, slot: _Slot) -> None:
        """The case in flight in ``slot``, about to be stopped: neither passed nor failed.
        Not called for a finder, whose case in flight is a step of shrinking the failure
        reported (as drawn), not a case of its own."""
        running = _running_case(slot.case_file)
        if running is not None:
            self.result.unfinished.append({
                "property": running["property"], "case": running["case"],
                "running_for": round(time.time() - running["started"], 1), "worker": slot.index,
            })

    def drawn_failure(self, slot: _Slot | None = None) -> None:
        """The failures still being shrunk (by the worker in ``slot``, or by any), each as it
        was first drawn."""
        for index in [slot.index] if slot is not None else list(self.finders):
            first = self.finders.pop(index, None)
            if first is not None:
                self.report(dataclasses.replace(first, shrunk=False))

    def report(self, failure):
        """Add ``failure`` to the result (in a campaign, one of a signature already reported
        adds to its count) and, in a campaign, tell the workers its signature. Returns the
        failure that carries it."""
        reported = self.result.add_failure(failure, campaign=self.options.keep_going)
        if reported is failure:
            self.publish()
        if (self.shared_failures is not None and reported is failure and failure.kind == "property"
                and failure.shrunk is not False and not failure.shrunk_elsewhere):
            self.shared_failures.save(failure)
        return reported

    def refresh_shared_failures(self) -> None:
        """In a campaign sharing a database, at most every :data:`SHARED_REFRESH_SECONDS`:
        take in the failures that runs elsewhere shrank since the last look, and tell the
        workers, which then count them as repeats instead of shrinking them again."""
        if self.shared_failures is None or time.monotonic() < self.next_shared_refresh:
            return
        self.next_shared_refresh = time.monotonic() + SHARED_REFRESH_SECONDS
        fresh = {signature: failure for signature, failure in self.shared_failures.load().items()
                 if signature not in self.shrunk_elsewhere and self.result.failure_with(signature) is None}
        if fresh:
            self.shrunk_elsewhere.update(fresh)
            self.publish()

    def publish(self) -> None:
        """Tell the workers of a campaign what the parent has heard (:mod:`flashcheck.engine.campaign`);
        nothing once the workers are gone."""
        if self.board is None:
            return
        self.board.publish(CampaignState(frozenset(f.signature for f in self.result.failures) | set(self.shrunk_elsewhere),
                                         frozenset(self.avoided), frozenset(k.property for k in self.result.known),
                                         frozenset(self.causes)))

    def stop_all(self) -> None:
        """Tell every worker but the finders to stop."""
        self.stopping = True
        for slot in self.slots:
            if slot.stop is not None and slot.index not in self.finders:
                slot.stop.set()


class WorkerError(RuntimeError):
    """A worker could not set up: the implementation, or a library it needs, could not be
    loaded. Not a finding about the implementation."""


def _catch_interruptions(caught: threading.Event) -> dict:
    """From now on SIGINT and SIGTERM (:data:`flashcheck.engine.interruption.SIGNALS`) set
    ``caught`` instead of raising KeyboardInterrupt (in the main thread; elsewhere signals cannot
    be set); returns what :func:`flashcheck.engine.interruption.restore` restores."""
    return interruption.handle(lambda signum, frame: caught.set())


@contextlib.contextmanager
def _interruptions_held():
    """SIGINT and SIGTERM blocked in this thread for the duration, so that a process started
    meanwhile inherits them blocked, through its exec and start-up, until it ignores them
    (:func:`flashcheck.engine.fuzz_worker.worker_main`); one that comes meanwhile reaches this process when the block
    ends, not lost (ignoring SIGINT instead, as once, dropped a Ctrl-C that came while a worker started)."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: ignore them, in the main thread
        previous = interruption.handle(signal.SIG_IGN)
        try:
            yield
        finally:
            interruption.restore(previous)
        return
    # A spawn starts multiprocessing's resource tracker first if it is not running, and
    # unblocks both on the way (resource_tracker.ensure_running): started now, it is not then.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, set(interruption.SIGNALS))
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
    may use, at most :data:`MAX_AUTO_WORKERS` (on CUDA, that many per visible GPU: a host of
    four GPUs and 64 cores runs 64), and on CUDA at least one per visible GPU
    (:func:`flashcheck.engine.placement.default_worker_count`).

    A case's time is mostly single-threaded CPU work on either device: on a GPU, Triton
    compiling the kernel variants the case needs (seconds per new variant, against
    milliseconds of GPU time), which workers sharing the GPU overlap; in the interpreter,
    Python running the kernel. Two workers on a 2-core machine ran 1.9 times the cases of
    one in the interpreter (90 s, the project kernel)."""
    gpus = len(placement.visible_gpus()) if device == "cuda" else 0
    return placement.default_worker_count(MAX_AUTO_WORKERS * max(1, gpus), gpus=gpus)


def _worker_pins(options: FuzzOptions) -> list[str | None]:
    """The GPU each worker is pinned to (:func:`flashcheck.engine.placement.worker_pins`): on CUDA,
    worker ``i`` takes this process's visible GPU ``i`` modulo their number; None on the CPU."""
    if options.device != "cuda":
        return [None] * options.workers
    pins = placement.worker_pins(options.workers)
    if pins[0] is None:
        raise ValueError("--device cuda: no visible GPU")
    return pins


def _running_case(case_file: Path | None) -> dict | None:
    """The case a worker has started and not finished, from its case file (None if idle)."""
    try:
        record = json.loads(case_file.read_text())
    except (OSError, ValueError, AttributeError):
        return None
    return record if record.get("case") is not None else None
