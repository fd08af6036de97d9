"""``flashcheck report``: an error report (markdown and plots) of an implementation on a fixed sweep.

Writes ``DIR/report.md`` with PNG figures (see :mod:`flashcheck.regress.error_report`). Exit 0 when
every comparison is within its allowance, 1 when some exceed it (the report is still
written and says so) or a worker process measuring cases ``--jobs`` at a time died, 2 on
usage errors (unknown implementation or corpus, an output
directory that cannot be written).
"""

from __future__ import annotations

import sys

from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.cli.commands.common import (
    add_device_argument, add_impl_argument, add_jobs_argument, jobs_for, load_implementation,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help="write an error report (markdown and plots) of an implementation")
    add_impl_argument(parser)
    add_device_argument(parser)
    add_jobs_argument(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for report.md and its figures")
    parser.add_argument("--corpus", default=None,
                        help="sweep name (default: sweep-cpu or sweep-cuda, by device kind)")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from flashcheck.regress import corpus, corpus_workers, error_report

    try:
        impl = load_implementation(args.impl)  # a bad --impl is a usage error before anything runs
        chosen = corpus.get(args.corpus or f"sweep-{corpus.device_kind(device)}", corpus.SWEEPS)
        _writable(args.out)  # before measuring, so that a bad --out costs nothing
    except ValueError as error:
        print(f"flashcheck report: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task(f"{args.impl} on {chosen.name}", total=len(chosen.cases))
            report = error_report.build(args.impl, chosen, device, jobs=jobs_for(args, device),
                                        on_case=lambda index, result: progress.advance(task))
    except corpus_workers.WorkerDied as error:
        print(f"FAILED: {error}")
        return EXIT_FOUND
    try:
        path = error_report.write(report, args.out)
    except OSError as error:
        print(f"flashcheck report: --out: cannot write the report to {args.out!r}: {error.strerror or error}",
              file=sys.stderr)
        return EXIT_USAGE
    if report.exceeded:
        print(f"FAILED: {len(report.exceeded)} comparisons of {args.impl} exceed their allowance; report: {path}")
        for case, output, error in report.exceeded:
            print(f"  {output}: error/allowed {error.worst_ratio:.3g} on {case.spec()}")
    if report.raised:
        print(f"FAILED: {args.impl} raised on {len(report.raised)} cases; report: {path}")
        for line in corpus.raised_lines(args.impl, impl, report.raised, device):
            print(line)
    if report.exceeded or report.raised:
        return EXIT_FOUND
    print(f"report of {args.impl} on {chosen.name} ({len(report.results)} cases): {path}")
    return EXIT_OK


def _writable(directory) -> None:
    from pathlib import Path

    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out: cannot create the report directory {directory!r}: {error.strerror or error}") \
            from error
