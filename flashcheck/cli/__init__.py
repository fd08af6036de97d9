"""The flashcheck command: checks a flash attention implementation against float64 attention.

``flashcheck fuzz``          run the properties on an implementation with hypothesis until a
                             budget is spent.
``flashcheck check``         replay one property on one case (the line a failure report prints);
                             with --case-timeout in a worker process, as fuzz runs it, so that a
                             crash or hang is reported.
``flashcheck repro``         write a standalone script (torch and the kernel, no flashcheck)
                             that reproduces one failure.
``flashcheck triage``        which failures of an earlier fuzz result the implementation's
                             declarations explain now (no kernel runs).
``flashcheck list``          the properties and the built-in implementations.
``flashcheck baseline``      record or check regression tolerances (error/allowed per bucket).
``flashcheck mutate``        fuzz every mutant of a kernel's mutation catalogue: kill matrix, score.
``flashcheck report``        an error report (markdown and plots) on a fixed sweep.
``flashcheck bench-report``  the report of a speed benchmark's JSON.

Every command exits 0 when nothing was found, 1 when something was (a counterexample, a
worsened bucket, a surviving mutant), 2 for usage or configuration errors (for fuzz also an
output that cannot be written or a damaged crash store, found before any work, and
--replay-only with nothing to replay), 130 when interrupted (Ctrl-C, or SIGTERM), once it has reported
what it found, without a traceback. fuzz and check also exit 3 when nothing was checked
(every case declined or unfinished: not a pass) and 4 when flashcheck's own code failed (a
bug in flashcheck, its traceback printed: not a finding). docs/cli.md documents them all.

Each subcommand lives in a module of :mod:`flashcheck.cli.commands` that adds its parser and
runs it. Without a usable GPU (or with ``--device cpu``) kernels run in Triton's CPU
interpreter: the command sets ``TRITON_INTERPRET=1`` before anything imports triton.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# Nothing here imports torch: Ctrl-C is handled from main's first instruction on, and torch
# takes the command's first second to import (flashcheck.engine.interruption).
from flashcheck.engine import interruption


def main(argv=None) -> int:
    started = time.monotonic()
    args = device = None
    with interruption.installed():
        try:
            from flashcheck.cli.commands import EXIT_USAGE

            parser = _parser()
            args = parser.parse_args(argv)
            args.started = started  # time budgets count from here, the command's own setup included
            if args.command is None:
                parser.print_help()
                return EXIT_USAGE
            interruption.arm()  # a Ctrl-C during the parsing ends the command here
            try:
                # Commands that run no kernel (list, bench-report) take no --device.
                device = select_device(args.device) if hasattr(args, "device") else None
            except ValueError as error:
                interruption.check()  # the error may be what a Ctrl-C broke
                print(f"flashcheck: {error}", file=sys.stderr)
                return EXIT_USAGE
            interruption.check()  # one that a library caught while torch or triton was imported
            return args.run(args, device)
        except KeyboardInterrupt:
            return _interrupted(args, device)
        except Exception:
            if not interruption.requested():
                raise
            # What a Ctrl-C broke on its way: a library that caught the KeyboardInterrupt in
            # an import (numpy's, inside torch's) fails otherwise when it is imported again.
            return _interrupted(args, device)


def _interrupted(args, device) -> int:
    """Ctrl-C before the command could report it itself: the command's report of an
    interrupted start (``args.on_interrupt(args, device)``, fuzz's empty summary), or one line."""
    from flashcheck.cli.commands import EXIT_INTERRUPTED

    with interruption.deferred():  # a second Ctrl-C does not cut the report short
        report = getattr(args, "on_interrupt", None)
        if report is not None:
            return report(args, device)
        print("flashcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _parser() -> argparse.ArgumentParser:
    from flashcheck.cli.commands import COMMANDS

    parser = argparse.ArgumentParser(prog="flashcheck", description=__doc__.split("\n\n")[0])
    subparsers = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def select_device(choice: str) -> str:
    """Pick the device and, for the CPU, switch Triton to its interpreter before import.

    Asks torch whether CUDA is available, which does not create a CUDA context: processes
    spawned later may still use the GPU.
    """
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
        from flashcheck.cli import interpreter_check

        problem = interpreter_check.problem()
        if problem is not None:
            raise ValueError(f"--device cpu: {problem}")
    return choice
