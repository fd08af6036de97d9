"""The ``flashcheck`` command.

``flashcheck fuzz``   run the properties on an implementation with hypothesis until a budget
                      is spent; exit 0 when nothing was found, 1 with a shrunk counterexample,
                      2 for usage or configuration errors.
``flashcheck check``  replay one property on one case (the line a failure report prints).
``flashcheck list``   the properties and the built-in implementations.

Without a usable GPU (or with ``--device cpu``) kernels run in Triton's CPU interpreter:
the command sets ``TRITON_INTERPRET=1`` before anything imports triton.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        device = _select_device(args.device)
    except ValueError as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    return args.run(args, device)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flashcheck", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")

    fuzz = commands.add_parser("fuzz", help="fuzz an implementation against the properties")
    _common(fuzz)
    fuzz.add_argument("--budget", type=float, default=60.0, help="seconds to fuzz (default 60)")
    fuzz.add_argument("--seed", type=int, default=None, help="make the run reproducible")
    fuzz.add_argument("--property", action="append", dest="properties", help="only this property (repeatable)")
    fuzz.add_argument(
        "--database", default=".flashcheck/examples",
        help="hypothesis example database; failures found are replayed first next time",
    )
    fuzz.set_defaults(run=_fuzz)

    check = commands.add_parser("check", help="run one property on one case")
    _common(check)
    check.add_argument("--property", required=True, help="property name (see 'flashcheck list')")
    check.add_argument("--case", required=True, help="case spec, as printed in failure reports")
    check.set_defaults(run=_check)

    listing = commands.add_parser("list", help="list properties and built-in implementations")
    listing.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    listing.set_defaults(run=_list)
    return parser


def _common(parser) -> None:
    parser.add_argument("--impl", default="flash", help="built-in name or module:attr (default: flash)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--profile", default=None, choices=("interpreter", "gpu"),
        help="size profile (default: gpu on CUDA, interpreter on the CPU)",
    )


def _select_device(choice: str) -> str:
    """Pick the device and, for the CPU, switch Triton to its interpreter before import."""
    if "triton" in sys.modules and choice == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("--device cpu needs TRITON_INTERPRET=1 before triton is imported")
    if choice == "auto":
        import torch

        choice = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    if choice == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("--device cuda: no CUDA device is available")
    else:
        os.environ["TRITON_INTERPRET"] = "1"
    return choice


def _load(args):
    from flashcheck import adapters, profiles

    impl = adapters.resolve(args.impl)
    profile = profiles.size_profile(args.profile)
    return impl, profile


def _fuzz(args, device) -> int:
    from flashcheck import fuzz
    from flashcheck.properties import PROPERTIES

    try:
        impl, profile = _load(args)
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
    return EXIT_FOUND if result.found else EXIT_OK


def _check(args, device) -> int:
    from flashcheck.case import Case
    from flashcheck.compare import PropertyFailure
    from flashcheck.properties import PROPERTIES

    try:
        impl, _ = _load(args)
        if args.property not in PROPERTIES:
            raise ValueError(f"--property: unknown {args.property!r}; known: {sorted(PROPERTIES)}")
        case = Case.from_spec(args.case)
    except (ValueError, ImportError, AttributeError, TypeError) as error:
        print(f"flashcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    prop = PROPERTIES[args.property]
    from flashcheck import protocol

    if not prop.runnable(protocol.features_of(impl, device), case):
        print(f"flashcheck: {prop.name} does not apply to this case for {args.impl}", file=sys.stderr)
        return EXIT_USAGE
    try:
        prop.check(impl, case, device=device)
    except PropertyFailure as failure:
        failure.property_name, failure.case, failure.impl_name = prop.name, case, args.impl
        print(failure)
        return EXIT_FOUND
    print(f"{prop.name} holds for {args.impl} on {device}: {case.spec()}")
    return EXIT_OK


def _list(args, device) -> int:
    from flashcheck import adapters
    from flashcheck.properties import PROPERTIES

    print("properties:")
    for prop in PROPERTIES.values():
        needs = f" [needs {', '.join(sorted(prop.requires))}]" if prop.requires else ""
        print(f"  {prop.name}: {prop.summary}{needs}")
    print("implementations: " + ", ".join(adapters.REGISTRY))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
