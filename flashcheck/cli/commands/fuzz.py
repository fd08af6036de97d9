"""``flashcheck fuzz``: run the properties on an implementation until a time budget is spent.

Cases run in spawned worker processes (:mod:`flashcheck.engine.fuzz_workers`), so a kernel that
crashes or hangs is reported with its case and the run goes on in a fresh worker.

Exit status (:data:`EPILOG`): 0 nothing found, 1 a counterexample (or a crash or hang),
2 a usage or configuration error, 3 nothing checked, 4 flashcheck's own code failed, 130
interrupted (Ctrl-C); 4 and 130 after reporting what the run found until then.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from flashcheck.cli.commands import EXIT_FOUND, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNCHECKED, EXIT_USAGE
from flashcheck.cli.commands.common import (
    add_impl_arguments, check_writable_file, check_writable_folder, fuzz_in_workers, load, say_flashcheck_error,
)
from flashcheck.engine import interruption
from flashcheck.engine import crash_store  # imports neither torch nor hypothesis


EPILOG = f"""exit status:
  {EXIT_OK}    nothing found, and something checked
  {EXIT_FOUND}    a counterexample, or a case that crashed, hung or lost the CUDA context of a worker
  {EXIT_USAGE}    a usage or configuration error, reported before any work (an output that cannot be
       written, a damaged crash store, an --impl that cannot be loaded or names an unknown
       feature or property, no chosen property applicable to it), --replay-only with nothing to
       replay, or a --json file that could not be written at the end after all (the summary
       printed says what the run found)
  {EXIT_UNCHECKED}    nothing was checked: every case declined by the implementation, or none finished
  {EXIT_INTERNAL}    flashcheck's own code failed (a bug in flashcheck, not a finding): the run ends there, and
       the summary, the --json result and any failure found so far are reported first, then
       flashcheck's traceback
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C): the summary, the --json result and any failure found so far
       (one still being shrunk as drawn) are reported first"""


def register(subparsers) -> None:
    import argparse

    from flashcheck.engine.fuzz_workers import FuzzOptions as defaults  # one place for the defaults the engine uses

    parser = subparsers.add_parser("fuzz", help="fuzz an implementation against the properties", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add_impl_arguments(parser)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds to fuzz (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="make the run reproducible")
    parser.add_argument("--property", action="append", dest="properties", help="only this property (repeatable)")
    parser.add_argument(
        "--workers", default="auto",
        help="worker processes, or auto (the default): one per CPU core up to 16, and on CUDA at least one per "
             "GPU, since compiling kernel variants on the CPU is most of a case's time; on CUDA, worker i uses "
             "GPU i modulo the visible GPUs",
    )
    parser.add_argument(
        "--case-timeout", type=float, default=defaults.case_timeout,
        help=f"seconds one case may run, not counting its Triton compilations, before it counts as a hang "
             f"(default {defaults.case_timeout:g})",
    )
    parser.add_argument(
        "--shrink-time", type=float, default=defaults.shrink_time,
        help=f"seconds spent shrinking a failure at most (default {defaults.shrink_time:g})",
    )
    parser.add_argument(
        "--keep-going", action="store_true",
        help="a campaign: go on past failures to the end of the budget, shrinking and reporting each distinct "
             "failure (by its signature: property, kind, what failed, case class) once and counting its repeats",
    )
    parser.add_argument(
        "--max-crashes", type=int, default=defaults.max_crashes,
        help=f"end the run after this many crashes and hangs (default {defaults.max_crashes}); with --keep-going, "
             f"draw a case class rarely once one crash or hang signature has repeated this many times there",
    )
    parser.add_argument(
        "--repro-dir", default=None, metavar="DIR",
        help="write a standalone reproduction script (torch and the kernel, no flashcheck) for every distinct "
             "failure into DIR (created if missing; it must be writable)",
    )
    parser.add_argument(
        "--database", default=LOCAL_DATABASE,
        help="hypothesis example database folder (created if missing; it must be writable); failures found "
             "are replayed first next time. Or a Redis server several machines share, redis://HOST:PORT/DB "
             f"(needs flashcheck[redis]), multiplexed with the local folder {LOCAL_DATABASE}",
    )
    parser.add_argument(
        "--counterexamples", default=None, metavar="FILE",
        help="a TOML file of recorded counterexamples ([[counterexample]] tables with property, case and "
             "optionally devices): those for this device are checked before anything is drawn "
             "(flashcheck.regress.counterexamples)",
    )
    parser.add_argument(
        "--replay-only", action="store_true",
        help="only replay the failures, crashes and hangs the database holds (e.g. to confirm a fix); "
             "exit 2 when it holds nothing to replay",
    )
    parser.add_argument(
        "--json", default=None, metavar="PATH",
        help="also write the result as JSON (schema: flashcheck.engine.fuzz.FuzzResult.to_json); its folder must exist",
    )
    parser.set_defaults(run=run, on_interrupt=interrupted_before_the_run)


def worker_count(value: str, device: str) -> int:
    """``--workers``: a positive count, or ``auto`` (:func:`flashcheck.engine.fuzz_workers.default_workers`)."""
    from flashcheck.engine import fuzz_workers

    if value == "auto":
        return fuzz_workers.default_workers(device)
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"--workers: expected a positive count or auto, got {value}")
    return count


#: The local example database folder: ``--database``'s default, and the folder a shared
#: database is multiplexed with.
LOCAL_DATABASE = ".flashcheck/examples"


def _holds_examples(database: Path, shared: str | None) -> bool:
    """Whether hypothesis's example database in ``database`` (or the shared one of URL
    ``shared``) holds anything beside the crash store."""
    from flashcheck.engine import shared_database  # imports hypothesis

    if shared is not None and shared_database.holds_examples(shared, database):
        return True
    return database.is_dir() and any(path.is_file() and path.name != crash_store.FILE_NAME
                                     for path in database.rglob("*"))


def _recorded_counterexamples(args, device: str, chosen) -> tuple[list, dict] | None:
    """``--counterexamples``: the ``(property, case spec)`` pairs to run first (those recorded
    for ``device`` and for a property in ``chosen``) and the summary's record of them; None
    without the option. Raises ValueError naming the option for a file that cannot be used."""
    if args.counterexamples is None:
        return None
    from flashcheck.regress import counterexamples

    try:
        entries = counterexamples.load(args.counterexamples)
    except ValueError as error:
        raise ValueError(f"--counterexamples: {error}") from error
    pairs = [pair for pair in counterexamples.for_device(entries, device) if pair[0] in chosen]
    return pairs, {"file": str(args.counterexamples), "run_first": len(pairs), "not_run": len(entries) - len(pairs)}


def run(args, device) -> int:
    from flashcheck import autotune_pin, protocol
    from flashcheck.engine import property_cases
    from flashcheck.engine import fuzz_workers
    from flashcheck.properties import PROPERTIES

    try:
        impl, sizes = load(args)  # loaded here to reject a bad --impl before spawning, and for --repro-dir
        unknown = [name for name in args.properties or () if name not in PROPERTIES]
        if unknown:
            raise ValueError(f"--property: unknown {unknown}; known: {sorted(PROPERTIES)}")
        features = protocol.features_of(impl, device)
        chosen = args.properties or list(PROPERTIES)
        excluded = {name: property_cases.not_applicable_because(PROPERTIES[name], impl, device) for name in chosen}
        if all(excluded.values()):
            reasons = "; ".join(f"{name} {reason}" for name, reason in excluded.items())
            raise ValueError(f"--impl {args.impl}: no chosen property applies to its features {sorted(features)} "
                             f"on {device} ({reasons})")
        recorded = _recorded_counterexamples(args, device, chosen)
        domain = protocol.declared_case_domain(impl, device)
        problem = None if domain is None else domain.no_head_dim_up_to(sizes.max_head_dim)
        if problem is not None:
            raise ValueError(f"--impl {args.impl}: its case domain: {problem}, the largest head dim the sizes "
                             f"{sizes.name!r} draw")
        compile_key = protocol.compile_key_of(impl)
        autotuners = [autotune_pin.kernel_name(tuner) for tuner in protocol.autotuners_of(impl)]
        for name in ("budget", "case_timeout"):
            if not getattr(args, name) > 0:
                raise ValueError(f"--{name.replace('_', '-')}: expected a positive number of seconds, "
                                 f"got {getattr(args, name)}")
        if not args.shrink_time >= 0:  # 0: the failure is reported as drawn
            raise ValueError(f"--shrink-time: expected a non-negative number of seconds, got {args.shrink_time}")
        args.workers = worker_count(args.workers, device)
        if args.max_crashes < 1:
            raise ValueError(f"--max-crashes: expected a positive count, got {args.max_crashes}")
        # Outputs are checked before any work, so that a run never ends unable to keep its result.
        if args.json is not None:
            check_writable_file(args.json, "--json")
        if args.repro_dir is not None:
            check_writable_folder(Path(args.repro_dir), "--repro-dir")
        from flashcheck.engine import shared_database  # imports hypothesis

        root, shared = shared_database.local_and_shared(args.database, LOCAL_DATABASE, "--database")
        database = crash_store.database_folder(root, args.impl)
        check_writable_folder(database, "--database", given=root)
        # A damaged store is an error.
        replayable, stale = crash_store.CrashStore.in_database(database, shared).replayable()
        if args.replay_only and not replayable and not (recorded and recorded[0]) \
                and not _holds_examples(database, shared):
            raise ValueError(f"--replay-only: nothing stored to replay in {database}"
                             + (f" ({len(stale)} stale crash-store entries, which no longer parse)" if stale else ""))
        setup = time.monotonic() - args.started  # loading the implementation counts against the budget
        options = fuzz_workers.FuzzOptions(
            impl=args.impl, device=device, budget=max(args.budget - setup, 0.1), seed=args.seed,
            properties=tuple(args.properties) if args.properties else None, sizes=sizes.name,
            database=str(database), shared_database=shared,
            workers=args.workers, case_timeout=args.case_timeout, shrink_time=args.shrink_time,
            max_crashes=args.max_crashes, replay_only=args.replay_only, keep_going=args.keep_going,
        )
    except (ValueError, ImportError, AttributeError) as error:
        interruption.check()  # the error may be what a Ctrl-C broke
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    interruption.check()  # a Ctrl-C that something caught while the implementation was loaded
    from flashcheck.cli import fuzz_console

    # From here on Ctrl-C ends the run (the engine's own handler, while it runs), never the report.
    with interruption.deferred():
        with fuzz_console.FuzzProgress(args.impl, device, args.budget, args.workers) as progress:
            result, status = fuzz_in_workers(options, on_progress=progress.update,
                                             counterexamples=None if recorded is None else recorded[0])
        if result is None:
            return status
        result.seconds = time.monotonic() - args.started
        result.case_domain = None if domain is None else domain.as_dict()
        result.compile_key = None if compile_key is None else list(compile_key)
        result.autotuners = autotuners or None
        if recorded is not None:
            result.counterexamples = recorded[1]
        if args.repro_dir is not None:
            write_scripts(result, impl, args, device)
        written = _report(result, args, device)
    if say_flashcheck_error(result):
        return EXIT_INTERNAL
    if result.interrupted:
        return EXIT_INTERRUPTED
    if not written:
        return EXIT_USAGE
    if args.replay_only and not (result.cases or result.declined or result.failures or result.known
                                 or result.unfinished):
        # Not a confirmed fix: what the database holds was for other properties, or no longer decodes.
        print(f"flashcheck: --replay-only: nothing replayed from {options.database}", file=sys.stderr)
        return EXIT_USAGE
    return exit_status(result)


def interrupted_before_the_run(args, device) -> int:
    """Ctrl-C before any worker started (while torch was imported, say, or the implementation
    loaded): reported as any interrupted run is, with the summary of a run that checked nothing,
    ``--json`` written with ``"interrupted": true`` where its path can be written, and exit 130.
    Imports neither torch nor hypothesis: an interrupted ``import torch`` cannot be repeated."""
    from flashcheck.engine.fuzz_result import FuzzResult

    result = FuzzResult(seconds=time.monotonic() - args.started, interrupted=True)
    if args.json is not None:
        try:
            check_writable_file(args.json, "--json")
        except ValueError as error:  # not checked yet when the Ctrl-C came
            print(f"flashcheck: {error}", file=sys.stderr)
            args.json = None
    _report(result, args, device or args.device)
    return EXIT_INTERRUPTED


def _report(result, args, device) -> bool:
    """The summary, and the ``--json`` file when one was asked for; False when that file
    could not be written after all (its folder removed during the run, the disk full), said
    in one line naming it: the summary above holds what the run found."""
    from flashcheck.cli import fuzz_console

    fuzz_console.print_fuzz_result(result, args.impl, device, shrunk=args.shrink_time > 0)
    if args.json:
        text = json.dumps(result.to_json(impl_name=args.impl, device=device, budget=args.budget), indent=2)
        try:
            Path(args.json).write_text(text)
        except OSError as error:
            print(f"flashcheck: --json {args.json}: the result could not be written ({error.strerror or error}); "
                  f"the summary above is what the run found", file=sys.stderr)
            return False
    return True


def write_scripts(result, impl, args, device) -> None:
    """A standalone reproduction script in ``--repro-dir`` for every failure of the run
    (:mod:`flashcheck.repro`) of ``impl``, the implementation ``--impl`` loaded, its path in
    ``failure.script``, or why there is none. Written here, after the workers have stopped, in
    as many processes as the run had workers (a campaign's dozens of scripts, each computing
    the float64 reference and the allowances of its case on the device, would otherwise keep
    a CI job minutes past its budget); never calling the implementation."""
    from flashcheck import repro

    folder = Path(args.repro_dir)
    folder.mkdir(parents=True, exist_ok=True)
    requests, scripted = [], []
    for number, failure in enumerate(result.failures, start=1):
        if failure.case is None:
            failure.script = "none: the worker died between cases"
            continue
        path = folder / f"{number:02d}-{failure.property}-{failure.kind}.py"
        requests.append(repro.ScriptRequest(str(path), args.impl, failure.property, failure.case, device,
                                            failure.kind, failure.evidence))
        scripted.append(failure)
    if len(requests) > 1:
        print(f"writing {len(requests)} reproduction scripts into {folder}…", file=sys.stderr)
    for failure, script in zip(scripted, repro.write_all(requests, processes=args.workers, impl=impl)):
        failure.script = script


def exit_status(result) -> int:
    """1 when a counterexample (a failure, crash, hang or fatal error) was found; else 3 when
    nothing was checked (every case declined, not applicable or unfinished: not a pass);
    else 0."""
    if result.found:
        return EXIT_FOUND
    return EXIT_OK if result.checked_anything else EXIT_UNCHECKED
