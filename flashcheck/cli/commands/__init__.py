"""The subcommands of ``flashcheck``: one module each, with ``register(subparsers)`` adding
its parser (whose default ``run(args, device) -> exit status`` runs it)."""

from __future__ import annotations

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2
#: Nothing was checked, and nothing found: every case was declined by the implementation,
#: or none finished. Not a pass.
EXIT_UNCHECKED = 3
#: flashcheck's own code failed (a bug in flashcheck, its traceback printed): not a finding
#: about the implementation, and not a pass.
EXIT_INTERNAL = 4
#: Interrupted (SIGINT, Ctrl-C; or SIGTERM, a job's time limit): 128 + SIGINT's number, as shells
#: report a Ctrl-C.
EXIT_INTERRUPTED = 130

from flashcheck.cli.commands import (  # noqa: E402  (they import the exit codes)
    baseline, bench_report, check, fuzz, listing, mutate, report, repro, triage,
)

COMMANDS = (fuzz, check, repro, triage, listing, baseline, mutate, report, bench_report)
