"""``flashcheck check``: replay one property on one case (the line a failure report prints)."""

from __future__ import annotations

import sys

from flashcheck.commands import EXIT_FOUND, EXIT_INTERNAL, EXIT_OK, EXIT_UNCHECKED, EXIT_USAGE
from flashcheck.commands.common import add_impl_arguments, load


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="run one property on one case")
    add_impl_arguments(parser)
    parser.add_argument("--property", required=True, help="property name (see 'flashcheck list')")
    parser.add_argument("--case", required=True, help="case spec, as printed in failure reports")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    """The case's verdict (:func:`flashcheck.verdict.decide`, as fuzzing and the pytest
    suite reach theirs, so that a replay line reproduces what was reported): exit 0 when
    the property holds; 1 when it fails, the implementation raises, a known divergence
    shows (still a failure, said to be expected) or the error is fatal; 3 when the
    implementation declines the case (nothing was checked); 4 when flashcheck's own code
    fails (its traceback printed); 2 for usage errors."""
    from flashcheck import protocol
    from flashcheck.case import Case
    from flashcheck.properties import PROPERTIES
    from flashcheck.verdict import Outcome, decide

    try:
        impl, _ = load(args)
        if args.property not in PROPERTIES:
            raise ValueError(f"--property: unknown {args.property!r}; known: {sorted(PROPERTIES)}")
        case = Case.from_spec(args.case)
    except (ValueError, ImportError, AttributeError, TypeError) as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    prop = PROPERTIES[args.property]
    if not prop.runnable(protocol.features_of(impl, device), case):
        print(f"flashcheck: {prop.name} does not apply to this case for {args.impl}", file=sys.stderr)
        return EXIT_USAGE
    verdict = decide(prop, impl, case, device=device, impl_name=args.impl)
    if verdict.outcome is Outcome.PASSED:
        print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
        return EXIT_OK
    if verdict.outcome is Outcome.DECLINED:
        print(f"flashcheck: {args.impl} declines this case: {verdict.reason} (nothing was checked)", file=sys.stderr)
        return EXIT_UNCHECKED
    if verdict.outcome is Outcome.FLASHCHECK_ERROR:
        print(f"flashcheck: {verdict.error}", file=sys.stderr)
        return EXIT_INTERNAL
    print(verdict.failure)
    if verdict.outcome is Outcome.KNOWN:
        # Still a failure of the property: the replay says what happened, and why it is expected.
        print(f"(a known divergence of {args.impl}, which fuzzing and the pytest suite report as expected: "
              f"{verdict.reason})")
    return EXIT_FOUND
