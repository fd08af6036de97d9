"""Inside one fuzz worker process: what a spawned worker of
:mod:`flashcheck.engine.fuzz_workers` does, from its first instruction to its exit.

The worker ignores Ctrl-C (the parent decides what it ends), pins itself to its GPU and
chooses Triton's interpreter before anything initialises CUDA or imports triton, sends its
output to its log file, loads the implementation, replays the stored crashes it was handed,
and fuzzes in process (:func:`flashcheck.engine.fuzz.fuzz_in_process`) until its deadline or
until the parent tells it to stop. Everything it has to say goes to the parent as
``(worker index, event)`` (:mod:`flashcheck.engine.fuzz_events`).

Before every call into the implementation it writes the property and case to its case
file, with the seconds the case has spent compiling Triton kernels
(:mod:`flashcheck.engine.compile_clock`): if the process dies or hangs, the parent reads there
what it was running. At a fatal error (a CUDA error that lost the context) it exits with
:data:`FATAL_EXIT`, the case still on file and the error in its log; with
:data:`DECLARED_FAULT_EXIT` where a known divergence declares that error, which it has reported.

Importing this module imports neither torch nor triton: a spawned worker imports it before
it has set its environment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from flashcheck.cases import phases as case_phases
from flashcheck.engine import compile_clock, fuzz_events, interruption, placement
from flashcheck.engine.campaign import Board

#: Exit status of a worker that met an error after which it could not go on (a CUDA error).
FATAL_EXIT = 86
#: Exit status of a worker that met such an error where a known divergence declares it (a
#: declared fault: :attr:`flashcheck.engine.verdict.Verdict.declared_fault`), already reported.
DECLARED_FAULT_EXIT = 87
#: The signal at which a worker writes every thread's Python stack to its log (None where the
#: platform has none to spare): the parent sends it to a worker whose case overran its timeout,
#: just before killing it, so that the hang's report says where the case was (a kernel that
#: never finishes, or a compilation the compile clock did not see).
STACKS_SIGNAL = getattr(signal, "SIGUSR1", None)


@dataclass(frozen=True)
class FuzzOptions:
    """Everything a worker needs to fuzz, as plain data (it crosses a spawn).

    ``impl``: a name :func:`flashcheck.peers.resolve` understands. ``sizes``: the name of
    the case sizes (:mod:`flashcheck.cases.sizes`) or None (chosen by the device). ``database``: the hypothesis example
    database folder or None; ``shared_database``: the URL of a Redis server multiplexed with it
    (:mod:`flashcheck.engine.shared_database`), or None. ``seed``: None for a random run. ``replay_only``: run the
    stored crashes, hangs and failures, then stop (no new cases). ``keep_going``: a campaign,
    which goes on past failures to the end of the budget (:mod:`flashcheck.engine.fuzz_workers`).
    """

    impl: str
    device: str
    budget: float
    seed: int | None = None
    properties: tuple[str, ...] | None = None
    sizes: str | None = None
    database: str | None = None
    shared_database: str | None = None
    workers: int = 1
    case_timeout: float = 120.0
    shrink_time: float = 30.0
    max_crashes: int = 3
    replay_only: bool = False
    keep_going: bool = False


@dataclass(frozen=True)
class WorkerTask:
    """What one worker process is to do, as plain data (it crosses a spawn): fuzz as
    ``options`` say, as worker number ``index`` with hypothesis seed ``seed`` (None: random),
    drawing in the run's catalogue of compile classes ``focus_seed`` (:mod:`flashcheck.engine.focus`),
    until ``wall_deadline`` (``time.time()``), pinned to ``gpu`` (a ``CUDA_VISIBLE_DEVICES``
    entry, :func:`flashcheck.engine.placement.worker_pins`; None on the CPU), after replaying
    ``replay`` (``(property, case spec)`` pairs); its case file and log file are at
    ``case_file`` and ``log_file``; in a campaign, the parent publishes what it has heard on the
    board ``board_file`` (:mod:`flashcheck.engine.campaign`; None where there is none);
    ``shares_device``: other workers are pinned to its GPU."""

    options: FuzzOptions
    index: int
    seed: int | None
    focus_seed: int
    wall_deadline: float
    gpu: str | None
    replay: tuple[tuple[str, str], ...]
    case_file: str
    log_file: str
    board_file: str | None = None
    #: Other workers of the run are pinned to the same GPU: its memory is shared.
    shares_device: bool = False


#: Triton's switch for caching autotuning results on disk (``triton.knobs.autotuning.cache``).
AUTOTUNE_CACHE_VARIABLE = "TRITON_CACHE_AUTOTUNING"
#: The thread count of torch's CPU operators (read by torch when it is imported).
THREADS_VARIABLE = "OMP_NUM_THREADS"


def worker_main(task: WorkerTask, messages, stop) -> None:
    """A spawned worker: set the environment, load the implementation, replay stored
    crashes, fuzz until the deadline or ``stop`` (a multiprocessing Event) is set, and report
    through ``messages`` (a multiprocessing Queue of ``(task.index, event)``). Ignores SIGINT and
    SIGTERM: the parent decides what Ctrl-C or a job's time limit ends."""
    interruption.handle(signal.SIG_IGN)  # discards one that came while they were blocked
    if hasattr(signal, "pthread_sigmask"):  # blocked by the parent (_interruptions_held)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(interruption.SIGNALS))
    placement.pin_this_process(task.gpu)  # before torch is imported: this process sees its one GPU
    options = task.options
    if options.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    # Triton's autotuner keeps what it measured in Triton's on-disk cache, which the workers
    # share within and across runs, instead of benchmarking every config again in each worker
    # (FlagGems' SDPA autotunes afresh for every new key length). Set before Triton is imported.
    os.environ.setdefault(AUTOTUNE_CACHE_VARIABLE, "1")
    # torch's CPU operators (making inputs, the reference's share on the CPU) each use every
    # core by default: the workers of a run would then run cores x workers threads. Each gets
    # its share of the cores instead, unless the user chose a thread count. Set before torch
    # is imported.
    os.environ.setdefault(THREADS_VARIABLE, str(max(1, placement.usable_cores() // max(1, options.workers))))
    _redirect_output(task.log_file)
    import faulthandler

    faulthandler.enable()  # a segfault leaves a Python traceback in the log
    if STACKS_SIGNAL is not None:
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
    try:
        from flashcheck import peers, protocol
        from flashcheck.cases import sizes as case_sizes
        from flashcheck.engine.focus import WideningFocus

        impl = peers.resolve(options.impl)
        protocol.prepare(impl)  # a library that cannot be imported: a usage error, not a finding
        sizes = case_sizes.choose(options.sizes)
        # Compile-aware drawing: the run's catalogue of compile classes (another each run), from
        # a class of this worker's own, one class at first and more as its compilations pay off.
        focus = WideningFocus(case_sizes.with_focus_seed(sizes, task.focus_seed, start=task.index),
                              keyed=protocol.compile_key_of(impl) is not None)
    except Exception as error:  # noqa: BLE001 - any setup error ends the run as a usage problem
        messages.put((task.index, fuzz_events.SetupFailed(
            f"worker {task.index} could not load {options.impl!r}: {error}")))
        return
    messages.put((task.index, fuzz_events.Started(placement.describe_device(options.device),
                                                  placement.compute_capability(options.device), focus.labels())))
    worker = Worker(task, impl, focus, messages)
    try:
        if worker.replay(stop):
            worker.fuzz(stop)
    except Exception as error:  # noqa: BLE001 - flashcheck itself broke: a bug, not a finding
        from flashcheck.engine.verdict import FlashcheckError

        if isinstance(error, FlashcheckError):  # its message carries the case and the traceback
            problem = str(error)
        else:
            import traceback

            problem = f"the fuzzer failed (a bug in flashcheck, not a finding about {options.impl}):\n" \
                      f"{traceback.format_exc()}"
        worker.report(fuzz_events.FlashcheckFailed(f"worker {task.index}: {problem}"))
        return
    worker.report(fuzz_events.Done())


class Worker:
    """The fuzzing of one worker process, once its implementation is loaded: its case clock
    (which writes the case file), its compile focus (``focus``, a
    :class:`flashcheck.engine.focus.WideningFocus`) and its line to the parent (``messages``)."""

    def __init__(self, task: WorkerTask, impl, focus, messages):
        self.task, self.options, self.impl, self.focus, self.messages = task, task.options, impl, focus, messages
        self.board = Board(task.board_file) if task.board_file is not None else None
        case_file = Path(task.case_file)
        self.clock = compile_clock.CaseClock(lambda record: _write_atomically(case_file, record))
        compile_clock.watch(self.clock.compiling, self.clock.compiled)  # compiling is not hanging
        case_phases.start()
        self.phases: tuple = ()
        log_folder = os.environ.get(compile_clock.LOG_VARIABLE)
        if log_folder:  # a developer's record of what the run compiles, and for which case
            compile_clock.log_compilations(log_folder, lambda: {
                "worker": task.index, "property": self.clock.record.get("property"),
                "case": self.clock.record.get("case")})

    def fuzz(self, stop) -> None:
        """Fuzz in process until the deadline, or until ``stop`` is set."""
        from flashcheck.engine import fuzz

        options = self.options
        fuzz.fuzz_in_process(
            self.impl, impl_name=options.impl, budget=max(0.0, self.task.wall_deadline - time.time()),
            device=options.device, sizes=self.focus.sizes, seed=self.task.seed, database=options.database,
            shared_database=options.shared_database,
            properties=list(options.properties or ()) or None,
            on_event=self.report, before_case=self.before_case, after_case=self.after_case,
            should_stop=stop.is_set, shrink_time=options.shrink_time, replay_only=options.replay_only,
            # Every worker's first turns would start from the same simplest cases: worker 0 runs them.
            simplest_run_elsewhere=self.task.index > 0,
            keep_going=options.keep_going, campaign=self.board.read if self.board is not None else None,
            device_shared=self.task.shares_device,
        )

    def replay(self, stop) -> bool:
        """Run the stored crash cases and recorded counterexamples handed to this worker first,
        each decided as fuzzing decides a case (:func:`flashcheck.engine.verdict.decide`), until
        the budget is spent or ``stop`` (a multiprocessing Event) is set: the rest stay stored.
        Returns False when one of them failed a property (the run then ends with it, as with
        any property failure). A case the implementation declines is counted as declined, not
        as a case run (and, not crashing, leaves the store). One of a property the run does not
        choose (``--property``) waits in the store for a run that does; one the implementation's features no longer
        cover (a feature it stopped declaring, a case needing one) is reported as stale and
        kept, never run: it would test what the implementation does not claim. In a campaign a
        stored case that fails is reported and the replay goes on. Raises the
        :class:`~flashcheck.engine.verdict.FlashcheckError` of flashcheck's own failure, except
        the device running out of memory in it: that case is reported unfinished, and stays stored."""
        from flashcheck import protocol
        from flashcheck.cases.case import Case
        from flashcheck.engine.fuzz import case_kinds
        from flashcheck.engine.fuzz_result import Failure
        from flashcheck.engine.verdict import Outcome, decide
        from flashcheck.properties import PROPERTIES

        options = self.options
        features = protocol.features_of(self.impl, options.device)
        for prop_name, spec in self.task.replay:
            if stop.is_set() or time.time() >= self.task.wall_deadline:  # the rest waits in the store
                break
            prop, case = PROPERTIES.get(prop_name), Case.from_spec(spec)
            if prop is None or (options.properties and prop_name not in options.properties):
                continue
            problem = prop.not_runnable_because(features, case, device=options.device)
            if problem is not None:
                self.report(fuzz_events.Stale(prop_name, spec, f"no longer runnable for {options.impl}: {problem}"))
                continue
            self.before_case(prop_name, case)
            verdict = decide(prop, self.impl, case, device=options.device, impl_name=options.impl)
            self.after_case(verdict)
            if verdict.outcome is Outcome.FLASHCHECK_ERROR and verdict.error.out_of_memory:
                self.report(fuzz_events.OutOfMemory(prop_name, spec, str(verdict.error)))
                continue  # left in the store, for a run with the memory to check it
            if verdict.outcome is Outcome.FLASHCHECK_ERROR:
                raise verdict.error
            if verdict.outcome is Outcome.FAILED:
                failure = dataclasses.replace(Failure.from_verdict(verdict), shrunk=False)  # a stored case, as stored
                self.report(fuzz_events.Replayed(prop_name, spec, still_fails=True))
                self.report(fuzz_events.Found(failure))
                self.report(fuzz_events.Counterexample(failure))
                if not options.keep_going:
                    return False
                continue
            if verdict.outcome is Outcome.DECLINED:
                self.report(fuzz_events.Declined(prop_name, spec, verdict.reason))
            elif verdict.outcome is Outcome.KNOWN:
                self.report(fuzz_events.KnownCase(prop_name, verdict.reason or ""))
                self.report(fuzz_events.KnownDivergenceSeen(Failure.from_verdict(verdict)))
            else:
                self.report(fuzz_events.Passed(prop_name, spec, tuple(case_kinds(case)), unchecked=verdict.unchecked))
            self.report(fuzz_events.Replayed(prop_name, spec, still_fails=False))
        return True

    def before_case(self, prop: str, case) -> None:
        self.clock.start(prop, case.spec())

    def after_case(self, verdict) -> None:
        from flashcheck.engine.verdict import Outcome

        self.focus.outcome(checked=verdict.outcome not in (Outcome.DECLINED, Outcome.KNOWN))
        self.phases = tuple(case_phases.take().items())

        if verdict.outcome is Outcome.FATAL:
            # The worker exits with the case still on file, which the parent reports with it,
            # and the log's tail, which it quotes: the error's traceback, then the verdict with
            # its replay line.
            import traceback

            traceback.print_exception(verdict.error)
            print(verdict)
            if verdict.declared_fault:
                # Expected: the parent hears of the divergence, so that every worker gives the
                # property's turns away, then replaces this process without a finding.
                from flashcheck.engine.fuzz_result import Failure

                self.report(fuzz_events.KnownCase(verdict.property, verdict.reason or ""))
                self.report(fuzz_events.KnownDivergenceSeen(Failure.from_verdict(verdict)))
            # What was said reaches the parent before the process goes.
            self.messages.close()
            self.messages.join_thread()
            _flush_and_exit(DECLARED_FAULT_EXIT if verdict.declared_fault else FATAL_EXIT)
        self.clock.finish()  # the case is over, whatever its verdict

    def report(self, event) -> None:
        """Send ``event`` to the parent, a passed case with the times its clock measured; give
        the compile focus what is its own."""
        if isinstance(event, fuzz_events.SteeredTurn):
            self.focus.steered_turn(event.property, mostly_rare=event.mostly_rare)
            return
        if isinstance(event, fuzz_events.Passed):
            self.focus.record(*self.clock.last)
            seconds, compiling = self.clock.last
            event = dataclasses.replace(event, seconds=seconds, compiling=compiling, phases=self.phases,
                                        compile_classes=self.focus.classes if self.focus.sizes().focus else None,
                                        classes=self.focus.labels())
        self.messages.put((self.task.index, event))


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
