"""``flashcheck fuzz``: run the properties on an implementation until a time budget is spent."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from flashcheck.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.commands.common import add_impl_arguments, load


def register(subparsers) -> None:
    parser = subparsers.add_parser("fuzz", help="fuzz an implementation against the properties")
    add_impl_arguments(parser)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds to fuzz (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="make the run reproducible")
    parser.add_argument("--property", action="append", dest="properties", help="only this property (repeatable)")
    parser.add_argument(
        "--database", default=".flashcheck/examples",
        help="hypothesis example database; failures found are replayed first next time",
    )
    parser.add_argument(
        "--json", default=None, metavar="PATH",
        help="also write the result as JSON (schema: flashcheck.fuzz.FuzzResult.to_json)",
    )
    parser.set_defaults(run=run)


def run(args, device) -> int:
    from flashcheck import fuzz
    from flashcheck.properties import PROPERTIES

    try:
        impl, profile = load(args)
        unknown = [name for name in args.properties or () if name not in PROPERTIES]
        if unknown:
            raise ValueError(f"--property: unknown {unknown}; known: {sorted(PROPERTIES)}")
        if args.budget <= 0:
            raise ValueError(f"--budget: expected a positive number of seconds, got {args.budget}")
    except (ValueError, ImportError, AttributeError) as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    from flashcheck import report

    database = str(Path(args.database) / re.sub(r"[^A-Za-z0-9_.-]", "_", args.impl))
    with report.FuzzProgress(args.impl, device, args.budget) as progress:
        result = fuzz.run(
            impl, impl_name=args.impl, budget=args.budget, device=device, profile=profile,
            seed=args.seed, database=database, properties=args.properties, on_case=progress.update,
        )
    report.print_fuzz_result(result, args.impl, device)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_json(impl_name=args.impl, device=device, budget=args.budget),
                                              indent=2))
    return EXIT_FOUND if result.found else EXIT_OK
