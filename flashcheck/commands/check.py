"""``flashcheck check``: replay one property on one case (the line a failure report prints)."""

from __future__ import annotations

import sys

from flashcheck.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.commands.common import add_impl_arguments, load


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="run one property on one case")
    add_impl_arguments(parser)
    parser.add_argument("--property", required=True, help="property name (see 'flashcheck list')")
    parser.add_argument("--case", required=True, help="case spec, as printed in failure reports")
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
    except (ValueError, ImportError, AttributeError, TypeError) as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    prop = PROPERTIES[args.property]
    if not prop.runnable(protocol.features_of(impl, device), case):
        print(f"flashcheck: {prop.name} does not apply to this case for {args.impl}", file=sys.stderr)
        return EXIT_USAGE
    try:
        # As the fuzzer runs a case, so that its replay line reproduces what it reported
        # (an implementation that raises fails the property, with the error as evidence).
        check_once(prop, impl, case, device=device, impl_name=args.impl)
    except NotImplementedError as error:
        print(f"flashcheck: {args.impl} declines this case: {error}", file=sys.stderr)
        return EXIT_USAGE
    except PropertyFailure as failure:
        print(failure)
        known = protocol.known_divergences(impl).get(prop.name)
        if known is not None and known.explains(case):
            # Still a failure of the property: the replay says what happened, and why it is expected.
            print(f"(a known divergence of {args.impl}, which fuzzing and the pytest suite report as expected: {known})")
        return EXIT_FOUND
    print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
    return EXIT_OK
