"""The campaigns of a run, one markdown table row each, from their ``--json`` results.

``python -m flashcheck.devtools.campaign_table RESULT.json [RESULT.json ...]``

Each row: the implementation (the file's name, as ``ci/campaigns.sh`` names a repeated one),
seconds, cases passed, cases/s in the first minute and after it, the share of case time
compiling, cases declined (and their share of the cases drawn), cases that failed as a declared
known divergence (and their share of the cases checked: passed, failing and known), distinct
failures (with the cases that met them) and cases left unfinished. Read from the results
alone, as the summaries compute them (:class:`flashcheck.engine.fuzz_result.FuzzResult`), so
that a measurement's table says what its files say.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from flashcheck.engine.fuzz_result import FuzzResult

HEADER = ("| impl | seconds | passed | cases/s, first minute / after | compiling | declined of drawn "
          "| known of checked | distinct failures (cases) | unfinished |\n"
          "|---|---|---|---|---|---|---|---|---|")


def row(name: str, result: FuzzResult, *, known_counted: bool = True) -> str:
    """One table row for the campaign ``name`` whose result is ``result``; ``known_counted``:
    whether the result counts its known-divergence cases (results written before it did say
    "not counted" there, not 0)."""
    def rate(value) -> str:
        return "-" if value is None else f"{value:.2f}"

    drawn = result.checked + result.declined
    declined = f"{result.declined} ({result.declined / drawn:.1%})" if drawn else "0"
    known_cases = sum(result.known_cases.values())
    known = f"{known_cases} ({result.known_share():.1%})" if known_counted else "not counted"
    distinct = result.distinct()
    failing = sum(count for _, count in distinct)
    compiling = "-" if result.compile_share is None else f"{result.compile_share:.0%}"
    return (f"| `{name}` | {result.seconds:.0f} | {result.cases} | {rate(result.rate(0, 60))} / "
            f"{rate(result.rate(60))} | {compiling} | {declined} | {known} | {len(distinct)} ({failing}) "
            f"| {len(result.unfinished)} |")


def table(paths) -> str:
    """The table of the results at ``paths``."""
    rows = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        rows.append(row(Path(path).name.removesuffix(".json"), FuzzResult.from_json(data),
                        known_counted="known_cases" in data))
    return "\n".join([HEADER, *rows])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flashcheck.devtools.campaign_table",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="flashcheck fuzz --json results")
    print(table(parser.parse_args(argv).results))


if __name__ == "__main__":
    main()
