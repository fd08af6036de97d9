"""Recorded counterexamples: cases that once broke a kernel, checked first on every later run.

Fuzzing draws new cases; a bug it found once may need a rare draw to be found again, and some
classes show only on one device (the interpreter computes float32 dots exactly, a GPU in its
own summation order). A file of recorded counterexamples keeps those cases: ``flashcheck fuzz
--counterexamples FILE`` checks each of them (for the run's device) before it draws anything,
and ``flashcheck mutate`` hands a catalogue's file (its ``COUNTEREXAMPLES``) to every mutant's
run, so that a mutant planting a bug that was once found is killed by the case that found it.

The file is TOML, one table per case::

    [[counterexample]]
    property = "grads_match_reference"          # a property name (flashcheck.properties)
    case = "batch=1 seqlen_q=16 ... seed=4697"  # a case spec, as a replay line prints it
    devices = ["cuda"]                          # optional: where it is checked (default: everywhere)
    found = "float16 dQ -inf where 452.9 is exact (docs/findings.md)"  # optional: what it found

:func:`load` checks the whole file before any work and names the entry and key of the first
problem.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

#: The devices an entry may name.
DEVICES = ("cpu", "cuda")
#: The keys of an entry, with whether each is required.
KEYS = {"property": True, "case": True, "devices": False, "found": False}


@dataclass(frozen=True)
class Counterexample:
    """One recorded case: ``property`` checked on the case of spec ``case``, on ``devices``."""

    property: str
    case: str
    devices: tuple[str, ...] = DEVICES
    found: str = ""

    def applies_on(self, device: str) -> bool:
        """Whether the case is checked on ``device`` ("cpu" or "cuda", or a torch device string)."""
        return device.split(":")[0] in self.devices


def load(path: str | Path) -> tuple[Counterexample, ...]:
    """Every counterexample of the file at ``path``, in file order. Raises ValueError naming
    the file, the entry (counting from 1) and the key when the file cannot be read, is not
    TOML, or an entry has an unknown or missing key, a value of the wrong type, an unknown
    property or device, or a case spec that does not parse."""
    from flashcheck.cases.case import Case
    from flashcheck.properties import PROPERTIES

    path = Path(path)
    try:
        document = tomllib.loads(path.read_text())
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not TOML ({error})") from error
    unknown = sorted(set(document) - {"counterexample"})
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {unknown}; expected [[counterexample]] tables only")
    tables = document.get("counterexample", [])
    if not isinstance(tables, list):
        raise ValueError(f"{path}: counterexample: expected [[counterexample]] tables")
    entries = []
    for number, table in enumerate(tables, start=1):
        where = f"{path}: counterexample {number}"
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown keys {unknown}; expected {sorted(KEYS)}")
        for key, required in KEYS.items():
            if required and key not in table:
                raise ValueError(f"{where}: {key}: missing")
        for key in ("property", "case", "found"):
            if key in table and not isinstance(table[key], str):
                raise ValueError(f"{where}: {key}: expected a string, got {table[key]!r}")
        if table["property"] not in PROPERTIES:
            raise ValueError(f"{where}: property: unknown {table['property']!r}; known: {sorted(PROPERTIES)}")
        try:
            spec = Case.from_spec(table["case"]).spec()
        except ValueError as error:
            raise ValueError(f"{where}: case: {error}") from error
        devices = table.get("devices", list(DEVICES))
        if not (isinstance(devices, list) and devices and all(device in DEVICES for device in devices)):
            raise ValueError(f"{where}: devices: expected a non-empty list of {list(DEVICES)}, got {devices!r}")
        entries.append(Counterexample(table["property"], spec, tuple(devices), table.get("found", "")))
    return tuple(entries)


def for_device(entries, device: str) -> list[tuple[str, str]]:
    """The ``(property, case spec)`` pairs of ``entries`` that are checked on ``device``."""
    return [(entry.property, entry.case) for entry in entries if entry.applies_on(device)]
