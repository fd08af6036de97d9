"""What the processes of one run tell each other: the failures already reported, the case
classes to avoid, and the known divergences already seen.

A campaign (``flashcheck fuzz --keep-going``) reports each distinct failure once, by its
signature (:attr:`flashcheck.engine.fuzz_result.Failure.signature`): a worker that meets a
failure whose signature another worker has already reported counts it as a repeat instead of
shrinking it again, and a case class whose cases keep crashing workers is drawn rarely from
then on. Any run's workers draw the cases of a known divergence rarely, in every property that
declares it, once any of them has seen it in any property (:attr:`CampaignState.causes`). The
parent process is the one writer: it publishes what it has heard on a :class:`Board`, one small JSON file in the run's folder, replaced atomically; the workers read
it before each turn and each failure, and read the file again only when it has changed.

Imports neither torch nor hypothesis.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CampaignState:
    """``reported``: signatures of the failures reported so far; ``avoided``: case classes
    (:func:`flashcheck.engine.fuzz_result.case_class`) drawn rarely from now on; ``known``: the
    properties whose declared known divergence some worker has seen, whose cases of it every
    worker draws rarely from now on (:attr:`flashcheck.divergences.KnownDivergence.steer`); ``causes``:
    the reasons of the single known divergences some worker has seen (of those declared together,
    each one by itself), whose cases every worker draws rarely in every property declaring them."""

    reported: frozenset = frozenset()
    avoided: frozenset = frozenset()
    known: frozenset = frozenset()
    causes: frozenset = frozenset()


class Board:
    """The campaign's state in the file ``path``: :meth:`publish` (the parent) writes it,
    :meth:`read` (a worker) reads it, cached until the file changes. A missing or unreadable
    file reads as an empty state: a worker then shrinks a failure another has reported, which
    costs time and loses nothing (the parent counts it once)."""

    def __init__(self, path):
        self.path = Path(path)
        self._stamp = None
        self._state = CampaignState()

    def publish(self, state: CampaignState) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"reported": sorted(state.reported), "avoided": sorted(state.avoided),
                                         "known": sorted(state.known), "causes": sorted(state.causes)}))
        os.replace(temporary, self.path)

    def read(self) -> CampaignState:
        try:
            stat = self.path.stat()
        except OSError:
            return self._state
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text())
                self._state = CampaignState(frozenset(data["reported"]), frozenset(data["avoided"]),
                                            frozenset(data.get("known", ())), frozenset(data.get("causes", ())))
                self._stamp = stamp
            except (OSError, ValueError, KeyError, TypeError):
                pass  # being replaced: the next read sees the new file
        return self._state
