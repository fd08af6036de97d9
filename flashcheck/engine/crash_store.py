"""Where a fuzzing run keeps what it found between runs: one hypothesis example database
folder per implementation (:func:`database_folder`, :func:`example_database`), and in it the
crash store (:class:`CrashStore`), the cases that crashed or hung a worker. With a shared
database (a Redis server, :mod:`flashcheck.engine.shared_database`), both are multiplexed
with it: read from either, written to both.

Crashes and hangs cannot enter hypothesis's example database: the process that would save
them is gone. So the parent keeps them in ``crashes.json`` inside the database folder, and
the next run replays them first; one that no longer fails leaves the file. A file that is
not such a store is an error (:class:`CrashStoreError`), never overwritten; an entry whose
property or case spec no longer parses is stale: reported, kept, not run.

Imports neither torch nor hypothesis at the top.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

#: The crash store's file name inside an example database folder.
FILE_NAME = "crashes.json"


def database_folder(root, impl: str) -> Path:
    """The example database folder of implementation ``impl`` (a name or ``module:attr``)
    under the database root ``root`` (``flashcheck fuzz --database``): one per implementation."""
    return Path(root) / re.sub(r"[^A-Za-z0-9_.-]", "_", impl)


class CrashStoreError(ValueError):
    """The crash store's file is not one (truncated, not a list of entries, unreadable).
    It is left as it is: the user decides what it held."""


def example_database(folder, shared: str | None = None):
    """Hypothesis's example database of the folder ``folder`` (:func:`database_folder`),
    multiplexed with the shared database of URL ``shared`` when one is given."""
    from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase

    local = DirectoryBasedExampleDatabase(str(folder))
    if shared is None:
        return local
    from flashcheck.engine import shared_database

    return MultiplexedDatabase(local, shared_database.examples(shared, folder))


class CrashStore:
    """Cases that crashed or hung a worker, kept as JSON (a list of ``{"property",
    "case", "kind"}``) so that the next run replays them first. ``path`` None keeps nothing.
    ``shared``: the same entries on a shared database
    (:class:`flashcheck.engine.shared_database.SharedCrashes`), or None; its entries are read
    after the file's, and every write goes to both.

    Every read checks the file: one that is not such a list raises :class:`CrashStoreError`
    naming it, and is never overwritten. Writes keep every entry they do not remove,
    stale ones included."""

    def __init__(self, path: Path | None, shared=None):
        self.path = path
        self.shared = shared

    @classmethod
    def in_database(cls, folder, shared: str | None = None) -> "CrashStore":
        """The crash store of the example database folder ``folder`` (None: one that keeps
        nothing), with that of the shared database of URL ``shared`` when one is given."""
        if shared is not None and folder is not None:
            from flashcheck.engine.shared_database import SharedCrashes

            return cls(Path(folder) / FILE_NAME, SharedCrashes(shared, folder))
        return cls(Path(folder) / FILE_NAME if folder is not None else None)

    def _load(self) -> list[dict]:
        if self.path is None or not self.path.exists():
            return []
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError) as error:
            raise CrashStoreError(f"crash store {self.path}: cannot be read ({error}); fix or remove it "
                                  f"(it is never overwritten)") from None
        if not isinstance(entries, list) or not all(
                isinstance(entry, dict) and isinstance(entry.get("property"), str) and isinstance(entry.get("case"), str)
                for entry in entries):
            raise CrashStoreError(f"crash store {self.path}: expected a JSON list of {{\"property\", \"case\", "
                                  f"\"kind\"}} objects; fix or remove it (it is never overwritten)")
        return entries

    def entries(self) -> list[tuple[str, str]]:
        found = [(entry["property"], entry["case"]) for entry in self._load()]
        if self.shared is not None:
            found += [pair for pair in ((e["property"], e["case"]) for e in self.shared.entries()) if pair not in found]
        return found

    def replayable(self) -> tuple[list[tuple[str, str]], list[dict]]:
        """The entries to replay, as ``(property, case spec)``, and the stale ones, as
        ``{"property", "case", "problem", "store"}``: a property no longer registered, or a
        spec that no longer parses (a renamed field, say). Stale entries stay in the file."""
        from flashcheck.cases.case import Case
        from flashcheck.properties import PROPERTIES

        replay, stale = [], []
        for prop, spec in self.entries():
            problem = None if prop in PROPERTIES else f"no property {prop!r}"
            if problem is None:
                try:
                    Case.from_spec(spec)
                except (ValueError, TypeError) as error:
                    problem = str(error)
            if problem is None:
                replay.append((prop, spec))
            else:
                stale.append({"property": prop, "case": spec, "problem": problem, "store": str(self.path)})
        return replay, stale

    def add(self, prop: str, spec: str, kind: str) -> None:
        entries = [e for e in self._load() if (e["property"], e["case"]) != (prop, spec)]
        self._save(entries + [{"property": prop, "case": spec, "kind": kind}])
        if self.shared is not None:
            self.shared.add(prop, spec, kind)

    def remove(self, prop: str, spec: str) -> None:
        entries = self._load()
        kept = [e for e in entries if (e["property"], e["case"]) != (prop, spec)]
        if kept != entries:
            self._save(kept)
        if self.shared is not None:
            self.shared.remove(prop, spec)

    def _save(self, entries: list[dict]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(entries, indent=1) + "\n")
