"""Parts of a check a case could not make, said out loud instead of passed over.

A property may find, on a case, that part of what it checks does not exist there by the
implementation's own choice, not by its declaration: an lse that autograd does not track, from
an implementation that does not claim ``lse_grad``, leaves its gradient unchecked. The property
then calls :func:`note` with what was not checked and why; the verdict of the case carries the
notes (:attr:`flashcheck.engine.verdict.Verdict.unchecked`), and every summary counts them ("not
checked: ...") beside the passes, so that a pass never stands for a check that was not made.

Imports nothing of flashcheck.
"""

from __future__ import annotations

_notes: list[str] = []


def note(what: str) -> None:
    """Record that ``what`` (one line: what was not checked, and why) was not checked on this case."""
    if what not in _notes:
        _notes.append(what)


def take() -> tuple[str, ...]:
    """The notes recorded since the last call, and start afresh."""
    taken = tuple(_notes)
    _notes.clear()
    return taken
