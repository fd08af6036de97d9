"""The property registry: every invariant an implementation must satisfy, by name."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable

import torch

from flashcheck.cases.case import DTYPES, Case

PROPERTIES: dict[str, "Property"] = {}


class NotRunnableHere(NotImplementedError):
    """A property was asked to run on a device kind it cannot be measured on (see
    ``Property.devices``). Runners leave such properties out beforehand as not applicable
    (:func:`flashcheck.engine.property_cases.not_drawable_because` with the device); reaching this is a
    runner's mistake, which the verdict reports as flashcheck's own error, never a pass."""


@dataclass(frozen=True)
class Property:
    """``check(impl, case, *, device)`` raises Violation when the invariant fails.

    ``requires``: features the implementation must declare for the property to apply.
    ``applies(case)``: whether the property says anything about ``case``.
    ``draw``: how cases for it should be drawn, so that few are filtered away:
    ``{"empty_rows": True}`` (only cases with rows without keys), ``{"unmasked": True}``,
    ``{"hides_keys": True}`` (the property applies only where some query may not see some
    key, which needs a band, a mask or packing: without any of them it is not applicable,
    known before drawing instead of after hundreds of rejected draws).
    ``devices``: the device kinds (``"cuda"``, ``"cpu"``) on which the property can be
    measured, empty for every kind; on any other, ``check`` raises :class:`NotRunnableHere`.
    ``uses``: features the property exercises where the implementation declares them, without
    requiring them (a packed property comparing gradients too where "backward" is declared).
    """

    name: str
    check: Callable
    summary: str
    requires: frozenset = field(default_factory=frozenset)
    applies: Callable[[Case], bool] = lambda case: True
    draw: dict = field(default_factory=dict)
    devices: frozenset = field(default_factory=frozenset)
    uses: frozenset = field(default_factory=frozenset)

    def exercises(self, feature: str) -> bool:
        """Whether the property runs ``feature`` of an implementation that declares it."""
        return feature in self.requires or feature in self.uses

    def runnable(self, features, case: Case, device=None) -> bool:
        """Whether the property applies to ``case`` for an implementation with ``features``
        (and, when ``device`` is given, can be measured there)."""
        return self.not_runnable_because(features, case, device) is None

    def not_runnable_because(self, features, case: Case, device=None) -> str | None:
        """Why the property does not apply to ``case`` for an implementation with
        ``features`` (on ``device``, when given), or None when it does: it cannot be measured
        on that device kind, needs a feature not declared, or the case does (a band, GQA, a
        mask, packing or a dtype the implementation does not declare: calling it with such a
        case would test what it never claimed), or says nothing about the case."""
        if device is not None and not self.runs_on(device):
            return f"can be measured on {', '.join(sorted(self.devices))} only, not on {torch.device(device).type}"
        features = set(features)
        missing = self.requires - features
        if missing:
            return f"needs the feature{'s' if len(missing) > 1 else ''} {', '.join(sorted(missing))}"
        missing = case.features_needed - features
        if missing:
            return f"the case needs the feature{'s' if len(missing) > 1 else ''} {', '.join(sorted(missing))}"
        dtypes = features & set(DTYPES)  # none named: every dtype
        if dtypes and case.dtype not in dtypes:
            return f"the case's dtype {case.dtype} is not among the declared {', '.join(sorted(dtypes))}"
        if not self.applies(case):
            return "it says nothing about this case"
        return None

    def runs_on(self, device) -> bool:
        """Whether the property can be measured on ``device`` (a torch.device or string)."""
        return not self.devices or torch.device(device).type in self.devices


def prop(*, requires=(), applies=None, draw=None, devices=(), uses=()):
    """Register the decorated ``check(impl, case, *, device)`` under its function name.

    The first paragraph of its docstring, on one line, is the property's summary. With ``devices``, the
    registered check raises :class:`NotRunnableHere` on any other device kind (the device
    it is given, else :func:`flashcheck.protocol.default_device`) before running anything.
    """

    def register(check):
        name = check.__name__
        if name in PROPERTIES:
            raise ValueError(f"property {name!r} registered twice")
        summary = " ".join(re.split(r"\n\s*\n", (check.__doc__ or name).strip())[0].split())
        kinds = frozenset(devices)
        if kinds:
            check = _confined(check, name, kinds)
        PROPERTIES[name] = Property(
            name, check, summary, frozenset(requires),
            applies if applies is not None else (lambda case: True), dict(draw or {}), kinds, frozenset(uses),
        )
        return check

    return register


def _confined(check, name: str, kinds: frozenset):
    """``check`` raising :class:`NotRunnableHere` on device kinds outside ``kinds``."""
    from flashcheck import protocol

    @functools.wraps(check)
    def confined(impl, case, *, device=None):
        kind = torch.device(device or protocol.default_device()).type
        if kind not in kinds:
            raise NotRunnableHere(f"{name} can be measured on {', '.join(sorted(kinds))} only, not on {kind}: "
                                  f"not run")
        return check(impl, case, device=device)

    return confined


def applicable(features, case: Case, device=None) -> list[Property]:
    """The properties that apply to ``case`` for an implementation with ``features`` (and,
    when ``device`` is given, can be measured there)."""
    return [p for p in PROPERTIES.values() if p.runnable(features, case, device)]
