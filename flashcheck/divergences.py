"""Known divergences: properties an implementation is known to break, why, and on which cases.

An implementation declares them as ``flashcheck_known_divergences``, a mapping from property
name to either a reason (a string: the divergence may show on any case) or a
:class:`KnownDivergence` whose ``covers`` predicate confines it to the cases its cause can
reach. A failure on a case the divergence covers is reported as expected, with its evidence;
a failure on any other case is a failure like any other. The predicates are the cases' own
(:mod:`flashcheck.oracle.case_predicates`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flashcheck.cases.case import Case
from flashcheck.oracle.case_predicates import either, negative_softmax_scale


@dataclass(frozen=True)
class KnownDivergence:
    """Why an implementation breaks a property, and on which cases (``covers``; every case
    when None). ``str()`` gives the reason.

    ``steer``: a predicate of the case's description alone (no tensors, no reference), true
    on the cases ``covers`` usually holds for: once the divergence has been seen, the fuzzer
    draws those cases rarely (:func:`flashcheck.engine.property_cases.case_strategy`), so that a
    campaign spends its time on what is not known. None: nothing cheap approximates ``covers``,
    and its cases are drawn as any other.

    ``raises``: the divergence is the implementation raising an error (a refusal at launch that
    its own checks did not make, say), and ``raising`` the text that error's type and message
    contain, read as ``Type: message`` (None: any error). Without ``raises`` the divergence
    explains only results the property's check rejects: an error the implementation raises on a
    covered case is another finding, never hidden by a numerical divergence whose cases it
    happens to share; with ``raising``, neither is another error raised on the same cases.
    ``wrong_results``: whether it explains results the check rejects as well (False: a divergence
    that is that error alone, on cases whose results are otherwise expected right)."""

    reason: str
    covers: Callable[[Case], bool] | None = None
    steer: Callable[[Case], bool] | None = None
    raises: bool = False
    raising: str | None = None
    wrong_results: bool = True

    def explains(self, case: Case, *, raised: bool = False, message: str = "") -> bool:
        """Whether a failure of the property on ``case`` is this divergence; ``raised``: the
        failure is an error the implementation raised, with ``message``, which only a
        divergence declared ``raises`` explains (and, with ``raising``, only that error); a
        rejected result, only one declared with ``wrong_results``."""
        if raised and not (self.raises and (self.raising is None or self.raising in message)):
            return False
        if not raised and not self.wrong_results:
            return False
        return self.covers is None or bool(self.covers(case))

    def explaining(self, case: Case, *, raised: bool = False, message: str = "") -> KnownDivergence | None:
        """The divergence that explains this failure (as :meth:`explains` decides): this one, or,
        for divergences declared together, the first of them that does; None where none does."""
        return self if self.explains(case, raised=raised, message=message) else None

    def components(self) -> tuple[KnownDivergence, ...]:
        """The single divergences this one is made of, each with its own cause (its reason) and
        steering: itself, or for divergences declared together, each of them."""
        return (self,)

    @property
    def scoped(self) -> bool:
        """True when the divergence is confined to some cases (a ``covers`` predicate)."""
        return self.covers is not None

    def __str__(self) -> str:
        return self.reason


def as_known_divergence(declared) -> KnownDivergence:
    """A declared value (a reason string or a :class:`KnownDivergence`) as a KnownDivergence."""
    return declared if isinstance(declared, KnownDivergence) else KnownDivergence(str(declared))


@dataclass(frozen=True)
class _Either(KnownDivergence):
    """Divergences declared together: a failure is explained where one of ``parts`` explains
    it, each part with its own cases and its own word on raised errors."""

    parts: tuple[KnownDivergence, ...] = ()

    def explains(self, case: Case, *, raised: bool = False, message: str = "") -> bool:
        return any(part.explains(case, raised=raised, message=message) for part in self.parts)

    def explaining(self, case: Case, *, raised: bool = False, message: str = "") -> KnownDivergence | None:
        return next((part for part in self.parts if part.explains(case, raised=raised, message=message)), None)

    def components(self) -> tuple[KnownDivergence, ...]:
        return self.parts


def combined(*divergences: KnownDivergence) -> KnownDivergence:
    """One divergence explaining a failure wherever one of ``divergences`` explains it: their
    reasons, every case where one covers every case, and a raised error where one declared to
    raise explains it on that case."""
    parts = tuple(part for divergence in divergences
                  for part in (divergence.parts if isinstance(divergence, _Either) else (divergence,)))
    covers = None if any(part.covers is None for part in parts) else either(*(part.covers for part in parts))
    steers = [part.steer for part in parts if part.steer is not None]
    return _Either("; ".join(part.reason for part in parts), covers, either(*steers) if steers else None,
                   raises=any(part.raises for part in parts), parts=parts)


#: The finding above, declared by the adapters of the kernels it was seen in so that the rest
#: of each property is still checked.
NEGATIVE_SCALE = KnownDivergence(
    "a negative softmax_scale gives NaN outputs and an infinite lse where float64 attention is finite "
    "([2.11 H100]; flashcheck.oracle.case_predicates.negative_softmax_scale, docs/findings.md)",
    negative_softmax_scale, steer=negative_softmax_scale,
)
