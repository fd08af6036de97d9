"""The full kill matrix (``flashcheck mutate --per-property``): every property fuzzed on its
own against every mutant, the budget per mutant split evenly among the properties.

A plain ``mutate`` run stops each mutant at its first kill, so it says which property got
there first, not which properties can see the bug at all; this mode answers the latter,
and gives every property its share of the budget instead of whatever share random
property draws leave it. It costs one fuzz subprocess per (mutant, property) pair.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from flashcheck.mutation import mutants
from flashcheck.mutation.mutants import Entry, Outcome, MutantFuzzSettings


@dataclass
class PropertyMatrix:
    """Outcomes per mutant (``mutants.ORIGINAL`` included) and property."""

    properties: list[str]
    cells: dict[str, dict[str, Outcome]]

    def summary(self, entry: Entry) -> Outcome:
        """One outcome for ``entry``: its fastest kill; else an error if any cell failed to
        run; else an unconfirmed cell (a crash or hang the original shows too) if any; else
        survived, with the cases and seconds of all its cells."""
        cells = list(self.cells[entry.name].values())
        killed = [cell for cell in cells if cell.killed]
        if killed:
            return min(killed, key=lambda cell: cell.seconds)
        for verdict in ("error", "unconfirmed"):
            chosen = [cell for cell in cells if cell.verdict == verdict]
            if chosen:
                return chosen[0]
        return Outcome.of(entry, verdict="survived", seconds=sum(cell.seconds for cell in cells),
                          cases=sum(cell.cases or 0 for cell in cells))

    def to_json(self) -> dict:
        """``{mutant: {property: kill-matrix cell}}`` (see :attr:`Outcome.result`)."""
        return {name: {prop: cell.result for prop, cell in row.items()} for name, row in self.cells.items()}


def property_settings(settings: MutantFuzzSettings, prop: str, count: int) -> MutantFuzzSettings:
    """``settings`` for fuzzing property ``prop`` alone: ``1/count`` of the budget and an
    example database of its own."""
    return replace(settings, budget=settings.budget / count, properties=(prop,),
                   database=str(Path(settings.database) / prop))


def fuzz_each_property(catalogue: str, entries: list[Entry], settings: MutantFuzzSettings, properties: list[str], *,
                       jobs: int = 1, on_cell: Callable[[str, Outcome], None] | None = None) -> PropertyMatrix:
    """Fuzz each of ``properties`` alone on each of ``entries``, ``jobs`` at a time;
    ``on_cell(property, outcome)`` is called as each pair finishes."""
    if jobs < 1:
        raise ValueError(f"jobs: expected at least 1, got {jobs}")
    if not properties:
        raise ValueError("properties: expected at least one property")
    environment = mutants.subprocess_environment(catalogue)
    pairs = [(entry, prop) for entry in entries for prop in properties]

    def one(pair) -> Outcome:
        entry, prop = pair
        cell = mutants.fuzz_one(catalogue, entry, property_settings(settings, prop, len(properties)),
                               environment=environment)
        if on_cell is not None:
            on_cell(prop, cell)
        return cell

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        outcomes = list(pool.map(one, pairs))
    cells: dict[str, dict[str, Outcome]] = {entry.name: {} for entry in entries}
    for (entry, prop), outcome in zip(pairs, outcomes):
        cells[entry.name][prop] = outcome
    return PropertyMatrix(list(properties), cells)
