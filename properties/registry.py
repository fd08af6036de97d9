"""The property registry: every invariant an implementation must satisfy, by name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from flashcheck.case import Case

PROPERTIES: dict[str, "Property"] = {}


@dataclass(frozen=True)
class Property:
    """``check(impl, case, *, device)`` raises Violation when the invariant fails.

    ``requires``: features the implementation must declare for the property to apply.
    ``applies(case)``: whether the property says anything about ``case``.
    ``draw``: how cases for it should be drawn, so that few are filtered away:
    ``{"empty_rows": True}`` (only cases with rows without keys), ``{"unmasked": True}``.
    """

    name: str
    check: Callable
    summary: str
    requires: frozenset = field(default_factory=frozenset)
    applies: Callable[[Case], bool] = lambda case: True
    draw: dict = field(default_factory=dict)

    def runnable(self, features, case: Case) -> bool:
        return self.requires <= set(features) and self.applies(case)


def prop(*, requires=(), applies=None, draw=None):
    """Register the decorated ``check(impl, case, *, device)`` under its function name.

    The first paragraph of its docstring, on one line, is the property's summary.
    """

    def register(check):
        name = check.__name__
        if name in PROPERTIES:
            raise ValueError(f"property {name!r} registered twice")
        summary = " ".join(re.split(r"\n\s*\n", (check.__doc__ or name).strip())[0].split())
        PROPERTIES[name] = Property(
            name, check, summary, frozenset(requires),
            applies if applies is not None else (lambda case: True), dict(draw or {}),
        )
        return check

    return register


def applicable(features, case: Case) -> list[Property]:
    """The properties that apply to ``case`` for an implementation with ``features``."""
    return [p for p in PROPERTIES.values() if p.runnable(features, case)]
