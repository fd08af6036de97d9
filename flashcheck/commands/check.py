"""``flashcheck check``: replay one property on one case (the line a failure report prints).

Exit status: 0 the property holds, 1 it fails (or, with ``--case-timeout``, the case crashed
or hung its worker), 2 a usage error or a case the implementation declines, 130 interrupted.
"""

from __future__ import annotations

import math
import sys

from flashcheck.commands import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from flashcheck.commands.common import add_impl_arguments, load


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="run one property on one case")
    add_impl_arguments(parser)
    parser.add_argument("--property", required=True, help="property name (see 'flashcheck list')")
    parser.add_argument("--case", required=True, help="case spec, as printed in failure reports")
    parser.add_argument(
        "--case-timeout", type=float, default=None, metavar="SECONDS",
        help="run the case in a worker process, watched as flashcheck fuzz watches its workers: a crash is "
             "reported, and a case running longer than this, not counting its Triton compilations, counts as "
             "a hang (fuzz's --case-timeout); without it the case runs in this process, without a limit",
    )
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck import protocol
    from flashcheck.case import Case
    from flashcheck.compare import PropertyFailure
    from flashcheck.fuzz import check_once
    from flashcheck.properties import PROPERTIES

    try:
        impl, _ = load(args)
        if args.property not in PROPERTIES:
            raise ValueError(f"--property: unknown {args.property!r}; known: {sorted(PROPERTIES)}")
        case = Case.from_spec(args.case)
        if args.case_timeout is not None and not args.case_timeout > 0:
            raise ValueError(f"--case-timeout: expected a positive number of seconds, got {args.case_timeout}")
    except (ValueError, ImportError, AttributeError, TypeError) as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    prop = PROPERTIES[args.property]
    if not prop.runnable(protocol.features_of(impl, device), case):
        print(f"flashcheck: {prop.name} does not apply to this case for {args.impl}", file=sys.stderr)
        return EXIT_USAGE
    if args.case_timeout is not None:
        return _run_in_a_worker(args, device, impl, prop, case)
    try:
        # As the fuzzer runs a case, so that its replay line reproduces what it reported
        # (an implementation that raises fails the property, with the error as evidence).
        check_once(prop, impl, case, device=device, impl_name=args.impl)
    except NotImplementedError as error:
        print(f"flashcheck: {args.impl} declines this case: {error}", file=sys.stderr)
        return EXIT_USAGE
    except PropertyFailure as failure:
        print(failure)
        _say_if_known(args, impl, prop, case)
        return EXIT_FOUND
    print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
    return EXIT_OK


def _say_if_known(args, impl, prop, case) -> None:
    from flashcheck import protocol

    known = protocol.known_divergences(impl).get(prop.name)
    if known is not None and known.explains(case):
        # Still a failure of the property: the replay says what happened, and why it is expected.
        print(f"(a known divergence of {args.impl}, which fuzzing and the pytest suite report as expected: {known})")


def _run_in_a_worker(args, device, impl, prop, case) -> int:
    """``check --case-timeout``: the case alone in one of fuzz's worker processes
    (:func:`flashcheck.isolation.fuzz` replaying just this case, with no budget but the
    per-case timeout), reported as fuzz reports it."""
    from flashcheck import isolation

    options = isolation.FuzzOptions(
        impl=args.impl, device=device, budget=math.inf, properties=(prop.name,), profile=args.profile,
        database=None, workers=1, case_timeout=args.case_timeout, shrink_time=0, max_crashes=1, replay_only=True,
    )
    try:
        result = isolation.fuzz(options, replay=[(prop.name, case.spec())])
    except isolation.WorkerError as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    for failure in result.failures[:1]:  # the run ends at its first failure, crash or hang
        print(failure)
        if failure.kind == "property":
            _say_if_known(args, impl, prop, case)
    if result.interrupted:
        print("flashcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.failures:
        return EXIT_FOUND
    if result.declined:
        print(f"flashcheck: {args.impl} declines this case", file=sys.stderr)
        return EXIT_USAGE
    print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
    return EXIT_OK
