"""The subcommands of ``flashcheck``: one module each, with ``register(subparsers)`` adding
its parser (whose default ``run(args, device) -> exit status`` runs it)."""

from __future__ import annotations

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2
#: Interrupted (SIGINT, Ctrl-C): 128 + the signal's number, as shells report it.
EXIT_INTERRUPTED = 130

from flashcheck.commands import baseline, bench_report, check, fuzz, listing, mutate, report  # noqa: E402  (they import the exit codes)

COMMANDS = (fuzz, check, listing, baseline, mutate, report, bench_report)
