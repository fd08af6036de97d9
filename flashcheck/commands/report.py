"""``flashcheck report``: placeholder, replaced by its implementation."""

from __future__ import annotations

import sys

from flashcheck.commands import EXIT_USAGE


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help="(not implemented yet)")
    parser.add_argument("--device", default="cpu")
    parser.set_defaults(run=run)


def run(args, device) -> int:
    print("flashcheck report: not implemented yet", file=sys.stderr)
    return EXIT_USAGE
