"""``flashcheck mutate``: fuzz every mutant of a kernel's mutation catalogue and report the
kill matrix and the mutation score (the engine is :mod:`flashcheck.mutation.mutants`).

Exit 0 when every mutant not declared equivalent or beyond the suite's standard was killed;
1 when one survived or its only kill was unconfirmed (a crash or hang the unmutated implementation shows too), when a
declared-equivalent mutant was killed (the declaration is wrong), or when the suite
flags the unmutated implementation (nothing is scored then); 2 on usage errors and on
fuzz runs that failed to set up.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.cli.commands.common import add_device_argument

DEFAULT_CATALOGUE = "flashcheck.kernels.mutations"


def register(subparsers) -> None:
    parser = subparsers.add_parser("mutate", help="measure which planted kernel bugs the properties kill")
    parser.add_argument("--catalogue", default=DEFAULT_CATALOGUE,
                        help=f"module holding MUTATIONS and the mutants (default {DEFAULT_CATALOGUE})")
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of fuzzing per mutant (default 30)")
    parser.add_argument("--seed", type=int, default=None, help="make the fuzz runs reproducible")
    parser.add_argument("--jobs", type=int, default=1, help="mutants fuzzed at once (default 1)")
    parser.add_argument("--workers", type=int, default=None,
                        help="fuzz worker processes per mutant (default: the CPU cores divided among the jobs, "
                             "1 to 8): jobs × workers processes in all; more workers per mutant find its bug sooner")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these mutants")
    add_device_argument(parser)
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the kill matrix as JSON")
    parser.add_argument("--properties", nargs="+", metavar="NAME", help="only these properties (default: all)")
    parser.add_argument("--grace", type=float, default=60.0,
                        help="seconds past the budget before a fuzz run counts as hung (default 60)")
    parser.add_argument("--case-timeout", type=float, default=None,
                        help="seconds one case may run before it counts as a hang (default: half the budget, "
                             "10 to 120 s)")
    parser.add_argument("--shrink-time", type=float, default=0.0,
                        help="seconds spent shrinking each mutant's first failure (default 0: reported as drawn; "
                             "the score needs only which property killed it)")
    parser.add_argument("--per-property", action="store_true",
                        help="fill the full kill matrix: fuzz each property alone on each mutant, the budget split "
                             "evenly among the properties")
    parser.add_argument("--counterexamples", default=None, metavar="FILE",
                        help="recorded counterexamples every fuzz run checks before drawing (a TOML file: "
                             "flashcheck fuzz --counterexamples); default: the catalogue's COUNTEREXAMPLES, if any; "
                             "none: no recorded case")
    parser.add_argument("--database", default=".flashcheck/mutants",
                        help="root of the per-mutant example databases (earlier kills are replayed first)")
    parser.set_defaults(run=run)


def default_workers(jobs: int) -> int:
    """Fuzz workers per mutant when ``--workers`` is not given: the usable CPU cores shared
    among ``jobs`` mutants at once, at least 1 and at most ``fuzz_workers.MAX_AUTO_WORKERS``
    (:func:`flashcheck.engine.placement.default_worker_count`)."""
    from flashcheck.engine import fuzz_workers, placement

    return placement.default_worker_count(fuzz_workers.MAX_AUTO_WORKERS, cores=placement.usable_cores() // max(jobs, 1))


def run(args, device) -> int:
    from flashcheck.mutation import mutants
    from flashcheck.properties import PROPERTIES

    try:
        entries = mutants.load_catalogue(args.catalogue)
        unknown = [name for name in args.only or () if name not in entries]
        if unknown:
            raise ValueError(f"--only: unknown mutants {unknown} in {args.catalogue}; known: {sorted(entries)}")
        unknown = [name for name in args.properties or () if name not in PROPERTIES]
        if unknown:
            raise ValueError(f"--properties: unknown {unknown}; known: {sorted(PROPERTIES)}")
        if args.workers is None:
            args.workers = default_workers(args.jobs)
        if args.jobs < 1:
            raise ValueError(f"--jobs: expected at least 1, got {args.jobs}")
        recorded = _counterexamples_file(args)
        settings = mutants.MutantFuzzSettings(budget=args.budget, device=device, seed=args.seed, grace=args.grace,
                                   database=args.database, workers=args.workers, shrink_time=args.shrink_time,
                                   properties=tuple(args.properties) if args.properties else None,
                                   counterexamples=recorded,
                                   case_timeout=args.case_timeout if args.case_timeout is not None
                                   else mutants.default_case_timeout(max(args.budget, 0)))
    except ValueError as error:
        message = str(error)
        # MutantFuzzSettings names its field; the user typed an option.
        for field in ("budget", "grace", "case_timeout", "workers", "shrink_time"):
            if message.startswith(f"{field}:"):
                message = f"--{field.replace('_', '-')}" + message[len(field):]
        print(f"flashcheck: {message}", file=sys.stderr)
        return EXIT_USAGE
    chosen = [entries[name] for name in args.only] if args.only else list(entries.values())

    from flashcheck.mutation import report as mutation_report

    console = mutation_report.make_console()
    fuzz = _per_property if args.per_property else _whole_suite
    console.print(f"fuzzing the unmutated implementation {args.catalogue}:{mutants.ORIGINAL} "
                  f"for {settings.budget:g} s on {device}", highlight=False)
    (original,), _ = fuzz(args, settings, [mutants.original_entry()], console, lambda outcome: None)
    if original.verdict == "error":
        mutation_report.print_error(console, original)
        return EXIT_USAGE
    if original.killed:
        mutation_report.print_original_flagged(console, original)
        _write_json(args.json, mutants.MutationRun(args.catalogue, settings, original), None)
        return EXIT_FOUND
    if settings.counterexamples is not None:
        console.print(f"every run checks the recorded counterexamples of {settings.counterexamples} first",
                      highlight=False)
    console.print(f"{len(chosen)} mutant{'s' * (len(chosen) != 1)}, {settings.budget:g} s each, "
                  f"{args.jobs} at a time, {settings.workers} fuzz worker{'s' * (settings.workers != 1)} each",
                  highlight=False)
    outcomes, matrix = fuzz(args, settings, chosen, console, _checkpoint(args, settings, original, chosen))
    result = mutants.MutationRun(args.catalogue, settings, original, outcomes)
    mutation_report.print_run(console, result)
    if matrix is not None:
        mutation_report.print_property_matrix(console, matrix)
    _write_json(args.json, result, matrix)
    if result.errors:
        return EXIT_USAGE
    return EXIT_FOUND if result.survivors or result.unconfirmed or result.wrongly_equivalent else EXIT_OK


def _counterexamples_file(args) -> str | None:
    """``--counterexamples`` as the fuzz runs take it: the file given, or the catalogue's own,
    checked here (ValueError naming the option) so that a bad file stops the run before any
    mutant is fuzzed; None for "none" or where the catalogue records none."""
    from flashcheck.mutation import mutants
    from flashcheck.regress import counterexamples

    if args.counterexamples == "none":
        return None
    path = args.counterexamples or mutants.catalogue_counterexamples(args.catalogue)
    if path is not None:
        try:
            counterexamples.load(path)
        except ValueError as error:
            raise ValueError(f"--counterexamples: {error}") from error
    return path


def _checkpoint(args, settings, original, entries):
    """A callback for each mutant's outcome that rewrites ``--json`` with the kill matrix so
    far and the mutants still pending, so that a run stopped early (a CI job's time limit)
    keeps what it found."""
    from flashcheck.mutation import mutants

    done: dict[str, mutants.Outcome] = {}
    lock = threading.Lock()  # outcomes arrive from the jobs' threads

    def record(outcome) -> None:
        with lock:
            done[outcome.name] = outcome
            result = mutants.MutationRun(args.catalogue, settings, original,
                                        [done[e.name] for e in entries if e.name in done],
                                        pending=[e.name for e in entries if e.name not in done])
            _write_json(args.json, result, None)

    return record


def _whole_suite(args, settings, entries, console, on_outcome):
    """One fuzz run per entry over all chosen properties: (outcomes, None)."""
    from flashcheck.mutation import mutants, report as mutation_report

    def report(outcome):
        mutation_report.print_progress(console, outcome)
        on_outcome(outcome)

    outcomes = mutants.fuzz_all(args.catalogue, entries, settings, jobs=args.jobs, on_outcome=report)
    return outcomes, None


def _per_property(args, settings, entries, console, on_outcome):
    """One fuzz run per entry and property, the budget split: (summary outcomes, matrix). The
    JSON is written at the end only (``on_outcome`` is not called)."""
    from flashcheck.mutation import matrix as mutation_matrix, report as mutation_report
    from flashcheck.properties import PROPERTIES

    properties = list(settings.properties or PROPERTIES)
    matrix = mutation_matrix.fuzz_each_property(args.catalogue, entries, settings, properties, jobs=args.jobs,
                                 on_cell=lambda prop, cell: mutation_report.print_progress(console, cell, prop))
    return [matrix.summary(entry) for entry in entries], matrix


def _write_json(path, result, matrix) -> None:
    if path:
        data = result.to_json()
        if matrix is not None:
            data["per_property"] = matrix.to_json()
        # Written beside and renamed into place: a run killed mid-write leaves the last whole file.
        partial = Path(f"{path}.partial")
        partial.write_text(json.dumps(data, indent=2))
        os.replace(partial, path)
