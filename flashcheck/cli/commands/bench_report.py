"""``flashcheck bench-report JSON... --out DIR``: the speed benchmark's report from the JSON
that ``pytest tests/benchmarks -m speed --benchmark-json JSON`` wrote (or several such files,
parts of one run, reported together).

Writes ``DIR/bench.md`` (headline, ratios against each peer, TFLOP/s and memory tables) and
``DIR/bench.png`` (see :mod:`flashcheck.bench.report`) and prints the headline. Exit 0, or
2 when the JSON cannot be read or the directory cannot be written.
"""

from __future__ import annotations

import sys

from flashcheck.cli.commands import EXIT_OK, EXIT_USAGE


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench-report", help="report (markdown and plot) of a speed benchmark's JSON")
    parser.add_argument("json", metavar="JSON", nargs="+",
                        help="the file pytest --benchmark-json wrote (several: parts of one run)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for bench.md and bench.png")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck.bench import report as bench_report

    try:
        results = bench_report.load(*args.json)
    except ValueError as error:
        print(f"flashcheck bench-report: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        report, _ = bench_report.write(results, args.out)
    except OSError as error:
        print(f"flashcheck bench-report: --out: cannot write to {args.out!r}: {error.strerror or error}",
              file=sys.stderr)
        return EXIT_USAGE
    print(bench_report.headline(results))
    print(f"report: {report}")
    return EXIT_OK
