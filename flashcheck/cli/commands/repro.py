"""``flashcheck repro``: write the standalone script that reproduces one property on one case
(:mod:`flashcheck.repro`), for a maintainer to run without flashcheck.

Exit status: 0 the script was written (whatever it will find: it does not call the kernel
here); 2 a usage error, before anything is written: an unknown property, a case spec that does
not parse, a property that does not apply to the case for the implementation, a property no
script decides on its own (``--kind property``), an output that cannot be written; 130
interrupted.
"""

from __future__ import annotations

import sys

from flashcheck.cli.commands import EXIT_OK, EXIT_USAGE
from flashcheck.cli.commands.common import (
    add_impl_arguments, add_one_case_arguments, check_writable_file, load_one_case,
)
from flashcheck.engine import interruption


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "repro", help="write a standalone script (torch and the kernel, no flashcheck) that reproduces one failure")
    add_impl_arguments(parser)
    add_one_case_arguments(parser)
    parser.add_argument("-o", "--output", required=True, metavar="FILE.py", help="where to write the script")
    parser.add_argument(
        "--kind", choices=("property", "crash", "hang", "fatal"), default="property",
        help="what the failure was (default property): for a crash, a hang or a fatal error, the script makes the "
             "case's own call (and its backward for a gradient property) and says DID NOT REPRODUCE "
             "where it runs clean",
    )
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck import protocol, repro

    try:
        impl, prop, case = load_one_case(args)
        reason = prop.not_runnable_because(protocol.features_of(impl, device), case, device=device)
        if reason is not None:
            raise ValueError(f"--property {prop.name} does not apply to this case for {args.impl}: {reason}")
        repro.scripted(args.property, args.kind)  # NoScript, a ValueError, before anything is computed
        check_writable_file(args.output, "--output")
        path = repro.write(args.output, impl=impl, impl_name=args.impl, property_name=args.property, case=case,
                           device=device, kind=args.kind)
    except ValueError as error:
        interruption.check()
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {path}: python {path} exits 1 where {args.property} fails for {args.impl}, 0 where it holds")
    return EXIT_OK
