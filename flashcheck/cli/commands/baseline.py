"""``flashcheck baseline record|check``: regression tolerances (see :mod:`flashcheck.regress.baseline`).

``record`` measures an implementation on a fixed corpus and writes the worst error/allowed
ratio per bucket to a file (default ``ci/baselines/<impl>-<device kind>.json``); it refuses,
exit 1, when some comparison exceeds its allowance. ``check`` measures again and compares
bucket by bucket: exit 1 when a bucket worsened beyond the file's margin, exceeds 1 or is
missing, 0 otherwise. Cases run ``--jobs`` at a time in worker processes
(:mod:`flashcheck.regress.corpus_workers`); a worker that dies is exit 1 with the cases it may have
been measuring. Both exit 2 on usage errors (unknown implementation or corpus, a
missing, unreadable or other-version file, a corpus that changed since recording).
"""

from __future__ import annotations

import sys

from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.cli.commands.common import (
    add_device_argument, add_impl_argument, add_jobs_argument, jobs_for, load_implementation,
)

#: The property that fails when an output exceeds its allowance (for replay lines).
PROPERTY_OF = {"out": "out_matches_reference", "lse": "lse_matches_reference",
               "dq": "grads_match_reference", "dk": "grads_match_reference", "dv": "grads_match_reference"}

_STYLE = {"exceeds": "bold red", "worse": "bold red", "missing": "bold red", "better": "green", "new": "cyan",
          "ok": ""}


def register(subparsers) -> None:
    parser = subparsers.add_parser("baseline", help="record or check regression tolerances (error/allowed per bucket)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="{record,check}")
    for name, help_text in (("record", "measure the corpus and write the baseline file"),
                            ("check", "measure the corpus again and compare with the baseline file")):
        action = actions.add_parser(name, help=help_text)
        add_impl_argument(action)
        add_device_argument(action)
        add_jobs_argument(action)
        action.add_argument("--file", default=None, metavar="PATH",
                            help="baseline file (default: ci/baselines/<impl>-<device kind>.json)")
        action.add_argument("--corpus", default=None,
                            help="corpus name (default: record: the device kind's, cpu or cuda; check: the file's)")
        action.set_defaults(run=record if name == "record" else check)


def record(args, device) -> int:
    from flashcheck.regress import baseline, corpus, environment

    kind = corpus.device_kind(device)
    try:
        impl = load_implementation(args.impl)  # a bad --impl is a usage error before anything runs
        chosen = corpus.get(args.corpus or kind, corpus.BASELINE_CORPORA)
    except ValueError as error:
        return _usage(error)
    path = args.file or baseline.default_path(args.impl, kind)
    results = _run(args, chosen, device)
    if results is None:
        return EXIT_FOUND
    beyond = baseline.exceeded(results)
    raised = corpus.raised_lines(args.impl, impl, results, device)
    if beyond or raised:
        what = [f"exceeds its allowance in {len(beyond)} comparisons"] if beyond else []
        what += [f"raised on {len(raised)} cases"] if raised else []
        print(f"refusing to record: {args.impl} {' and '.join(what)} of corpus {chosen.name!r}:")
        for case, output, error in beyond:
            print(_beyond_line(args.impl, case, output, error))
        for line in raised:
            print(line)
        return EXIT_FOUND
    buckets = baseline.buckets(results)
    if not buckets:
        return _usage(f"--impl: {args.impl} ran no case of corpus {chosen.name!r} (its declared features exclude all)")
    recorded = baseline.Baseline(
        impl=args.impl, device_kind=kind, device=environment.device_name(device), corpus=chosen.name,
        corpus_digest=chosen.digest(), versions=environment.versions(), buckets=buckets,
    )
    try:
        baseline.write(recorded, path)
    except OSError as error:
        return _usage(f"--file: cannot write {str(path)!r}: {error.strerror or error}")
    _print_skipped(results)
    print(f"recorded {len(buckets)} buckets of {args.impl} on {recorded.device} (corpus {chosen.name}, "
          f"digest {recorded.corpus_digest}) to {path}; worst ratio {max(b.ratio for b in buckets.values()):.3g}")
    return EXIT_OK


def check(args, device) -> int:
    from flashcheck.regress import baseline, corpus

    kind = corpus.device_kind(device)
    path = args.file or baseline.default_path(args.impl, kind)
    try:
        impl = load_implementation(args.impl)  # a bad --impl is a usage error before anything runs
        recorded = baseline.read(path)
        if recorded.device_kind != kind:
            raise baseline.BaselineError(
                f"--device: {path} was recorded on {recorded.device_kind} ({recorded.device}); this run is on "
                f"{kind}: check it with --device {recorded.device_kind}, or record a {kind} baseline"
            )
        chosen = corpus.get(args.corpus or recorded.corpus, corpus.BASELINE_CORPORA)
        baseline.check_corpus(recorded, chosen, f"--file {path}")
    except ValueError as error:  # BaselineError included
        return _usage(error)
    results = _run(args, chosen, device)
    if results is None:
        return EXIT_FOUND
    rows = baseline.compare(recorded, baseline.buckets(results))
    _print_rows(rows, recorded, args.impl, path)
    _print_skipped(results)
    failed = [row for row in rows if row.failed]
    for row in failed:
        print(f"{row.verdict}: {row.key}: " + (
            f"not measured now (recorded from: {row.worst})" if row.after is None
            else f"{_number(row.before)} -> {row.after:.4g} (largest allowed {_number(row.limit)}); "
                 f"worst case: {row.worst}"))
    beyond = baseline.exceeded(results)
    for case, output, error in beyond:
        print(_beyond_line(args.impl, case, output, error))
    raised = corpus.raised_lines(args.impl, impl, results, device)
    for line in raised:
        print(line)
    if failed or beyond or raised:
        counts = {verdict: sum(row.verdict == verdict for row in failed) for verdict in baseline.FAILING}
        parts = [f"{n} {verdict}" for verdict, n in sorted(counts.items()) if n] or (
            [f"{len(beyond)} comparisons beyond their allowance"] if beyond else [])
        if raised:
            parts.append(f"raised on {len(raised)} cases")
        print(f"FAILED: {args.impl} against {path}: {', '.join(parts)}")
        return EXIT_FOUND
    print(f"passed: {args.impl} against {path}: no bucket of {len(rows)} worsened beyond the margin")
    return EXIT_OK


def _usage(error) -> int:
    print(f"flashcheck baseline: {error}", file=sys.stderr)
    return EXIT_USAGE


def _run(args, chosen, device):
    """The corpus results, or None (reported) when a worker process died."""
    from rich.console import Console
    from rich.progress import Progress

    from flashcheck.regress import corpus_workers

    try:
        with Progress(console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task(f"{args.impl} on {chosen.name}", total=len(chosen.cases))
            return corpus_workers.measure_corpus(args.impl, chosen, device, jobs=jobs_for(args, device),
                                   on_case=lambda index, result: progress.advance(task))
    except corpus_workers.WorkerDied as error:
        print(f"FAILED: {error}")
        return None


def _beyond_line(impl_name, case, output, error) -> str:
    from flashcheck.oracle.compare import replay_command

    metrics = error.metrics
    if metrics.exceeding:
        what = f"error/allowed {metrics.worst_ratio:.3g} ({metrics.exceeding} of {metrics.total} elements beyond)"
    else:
        what = f"largest error {metrics.max_abs:.3e} beyond the aggregate limit {error.limit:.3e}"
    replay = replay_command(impl_name, PROPERTY_OF[output], case.spec())
    return f"  case {case.spec()}\n    output {output}: {what}\n    replay: {replay}"


def _print_skipped(results) -> None:
    skipped = [r for r in results if r.skipped]
    if skipped:
        print(f"{len(skipped)} cases skipped (the implementation does not run them):")
        for result in skipped:
            print(f"  {result.skipped}: {result.case.spec()}")


def _number(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def _print_rows(rows, recorded, impl_name, path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{impl_name} against {path} (recorded {recorded.recorded} for {recorded.impl} on "
                        f"{recorded.device}); margin: {recorded.margin.rule}")
    for name, justify in (("bucket", "left"), ("before", "right"), ("after", "right"), ("limit", "right"),
                          ("verdict", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    for row in rows:
        style = _STYLE[row.verdict]
        table.add_row(row.key, _number(row.before), _number(row.after), _number(row.limit),
                      f"[{style}]{row.verdict}[/]" if style else row.verdict)
    # A fixed width when not on a terminal, so that logs and captured output keep whole rows.
    Console(width=None if sys.stdout.isatty() else 120).print(table)
