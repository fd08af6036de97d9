"""``flashcheck check``: replay one property on one case (the line a failure report prints).

Exit status: 0 the property holds; 1 it fails, the implementation raises, a known divergence
shows (still a failure, said to be expected), the error is fatal, or (with ``--case-timeout``)
the case crashed or hung its worker; 2 a usage error; 3 nothing was checked (the
implementation declines the case, or declares the property not applicable,
``flashcheck_not_applicable``); 4 flashcheck's own code failed (its traceback printed);
130 interrupted. The verdict is :func:`flashcheck.engine.verdict.decide`'s, as in fuzzing and the
pytest suite, so that a replay line reproduces what was reported.
"""

from __future__ import annotations

import math
import sys

from flashcheck.cli.commands import EXIT_FOUND, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNCHECKED, EXIT_USAGE
from flashcheck.cli.commands.common import (
    add_impl_arguments, add_one_case_arguments, fuzz_in_workers, load_one_case, prepare, say_flashcheck_error,
)
from flashcheck.engine import interruption


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="run one property on one case")
    add_impl_arguments(parser)
    add_one_case_arguments(parser)
    parser.add_argument(
        "--case-timeout", type=float, default=None, metavar="SECONDS",
        help="run the case in a worker process, watched as flashcheck fuzz watches its workers: a crash is "
             "reported, and a case running longer than this, not counting its Triton compilations, counts as "
             "a hang (fuzz's --case-timeout); without it the case runs in this process, without a limit",
    )
    parser.set_defaults(run=run)


def run(args, device) -> int:
    """Report the case's verdict; the exit statuses are the module's docstring's."""
    from flashcheck import protocol
    from flashcheck.engine import property_cases
    from flashcheck.engine.verdict import Outcome, decide

    try:
        impl, prop, case = load_one_case(args)
        if args.case_timeout is not None and not args.case_timeout > 0:
            raise ValueError(f"--case-timeout: expected a positive number of seconds, got {args.case_timeout}")
        prepare(args, impl)
    except (ValueError, ImportError, AttributeError, TypeError) as error:
        interruption.check()  # the error may be what a Ctrl-C broke
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    reason = prop.not_runnable_because(protocol.features_of(impl, device), case, device=device)
    if reason is not None:
        why = (f"can be measured on {', '.join(sorted(prop.devices))} only: not run" if not prop.runs_on(device)
               else f"does not apply to this case for {args.impl}: {reason}")
        print(f"flashcheck: {prop.name} {why}", file=sys.stderr)
        return EXIT_USAGE
    declared = property_cases.declared_not_applicable(prop, impl)
    if declared is not None:
        # Not run, as fuzzing and the pytest suite leave it out: nothing was checked, not a pass.
        print(f"flashcheck: {prop.name} is not applicable to {args.impl}, {declared} (nothing was checked)",
              file=sys.stderr)
        return EXIT_UNCHECKED
    if args.case_timeout is not None:
        return _run_in_a_worker(args, device, impl, prop, case)
    verdict = decide(prop, impl, case, device=device, impl_name=args.impl)
    if verdict.outcome is Outcome.PASSED:
        print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
        for what in verdict.unchecked:
            print(f"not checked: {what}")
        return EXIT_OK
    if verdict.outcome is Outcome.DECLINED:
        print(f"flashcheck: {args.impl} declines this case: {verdict.reason} (nothing was checked)", file=sys.stderr)
        return EXIT_UNCHECKED
    if verdict.outcome is Outcome.FLASHCHECK_ERROR:
        print(f"flashcheck: {verdict.error}", file=sys.stderr)
        return EXIT_INTERNAL
    print(verdict.failure)
    if verdict.reason is not None:  # KNOWN, or a declared fault
        _say_known(args, verdict.reason)
    return EXIT_FOUND


def _say_known(args, divergence) -> None:
    # Still a failure of the property: the replay says what happened, and why it is expected.
    print(f"(a known divergence of {args.impl}, which fuzzing and the pytest suite report as expected: {divergence})")


def _run_in_a_worker(args, device, impl, prop, case) -> int:
    """``check --case-timeout``: the case alone in one of fuzz's worker processes
    (:func:`flashcheck.engine.fuzz_workers.fuzz` replaying just this case, with no budget but the
    per-case timeout), decided there as everywhere (:func:`flashcheck.engine.verdict.decide`) and
    reported as fuzz reports it."""
    from flashcheck.engine import fuzz_workers

    options = fuzz_workers.FuzzOptions(
        impl=args.impl, device=device, budget=math.inf, properties=(prop.name,), sizes=args.size,
        database=None, workers=1, case_timeout=args.case_timeout, shrink_time=0, max_crashes=1, replay_only=True,
    )
    result, status = fuzz_in_workers(options, replay=[(prop.name, case.spec())])
    if result is None:
        return status
    if say_flashcheck_error(result):
        return EXIT_INTERNAL
    for failure in (result.failures + result.known)[:1]:  # the run ends at its first failure, crash or hang
        print(failure)
        if failure.kind == "known":  # its evidence ends with the declaration that explains it
            _say_known(args, "the one declared above")
    if result.interrupted:
        print("flashcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.failures or result.known:
        return EXIT_FOUND
    if result.declined:
        reasons = "; ".join(reason for reasons in result.declined_by_property.values() for reason in reasons)
        print(f"flashcheck: {args.impl} declines this case: {reasons} (nothing was checked)", file=sys.stderr)
        return EXIT_UNCHECKED
    if not result.cases:
        print("flashcheck: the case did not finish (nothing was checked)", file=sys.stderr)
        return EXIT_UNCHECKED
    print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
    return EXIT_OK
