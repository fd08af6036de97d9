"""Fuzzing: draw (property, case) pairs with hypothesis until a time budget is spent.

Hypothesis draws the property and the case structure; a failure is shrunk to a minimal
case and kept in an example database, so the next run replays it first. The engine runs
hypothesis in short rounds (each a fresh ``@given`` run with its own seed) so that it can
stop at the budget, and reports what it exercised.
"""

from __future__ import annotations

import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import torch
from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from flashcheck import protocol, strategies
from flashcheck.case import Case
from flashcheck.compare import PropertyFailure
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property

ROUND_EXAMPLES = 10


@dataclass
class Failure:
    """One counterexample, as plain data that crosses process boundaries.

    ``kind``: ``"property"`` (the property failed; the case is shrunk when found by
    fuzzing), ``"crash"`` (the process running the case died: a segfault, an abort, a
    fatal CUDA error) or ``"hang"`` (the case ran past its timeout). ``case`` is a case
    spec (:meth:`flashcheck.case.Case.spec`), None when the process died between cases.
    """

    kind: str
    property: str | None
    case: str | None
    evidence: str
    impl: str

    @classmethod
    def from_property_failure(cls, failure: PropertyFailure) -> "Failure":
        case = failure.case.spec() if failure.case is not None else None
        return cls("property", failure.property_name, case, failure.evidence, failure.impl_name or "flash")

    def reproduction(self) -> str | None:
        """One command line that replays exactly this case (None without a case)."""
        if self.case is None or self.property is None:
            return None
        return (
            f"flashcheck check --impl {shlex.quote(self.impl)} --property {self.property} "
            f"--case {shlex.quote(self.case)}"
        )

    def to_json(self) -> dict:
        return {"kind": self.kind, "property": self.property, "case": self.case, "evidence": self.evidence,
                "replay": self.reproduction()}

    def __str__(self) -> str:
        what = {"property": "failed", "crash": "crashed the process", "hang": "hung"}[self.kind]
        lines = [f"property {self.property} {what} for {self.impl}" if self.property else f"{self.impl}: {what}",
                 self.evidence]
        if self.case is not None:
            lines.append(f"case: {self.case}")
        if self.reproduction():
            lines.append(f"reproduce: {self.reproduction()}")
        return "\n".join(lines)


@dataclass
class FuzzResult:
    """What a fuzzing run did and the counterexamples it found."""

    cases: int = 0
    seconds: float = 0.0
    by_property: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    declined: int = 0  # cases the implementation declined with NotImplementedError
    failures: list[Failure] = field(default_factory=list)
    #: Per worker process position (isolated runs): ``{"worker", "gpu", "device", "cases",
    #: "processes"}``, where ``device`` is what the worker reported it runs on.
    workers: list[dict] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.failures)

    def count(self, prop: str, kinds) -> None:
        """Record one completed case of property ``prop`` with case kinds ``kinds``."""
        self.cases += 1
        self.by_property[prop] += 1
        self.by_kind.update(kinds)

    def to_json(self, *, impl_name: str, device: str, budget: float) -> dict:
        """The result as plain data: ``impl``, ``device``, ``budget``, ``seconds``, ``cases``,
        ``declined``, ``found``, ``by_property`` and ``by_kind`` (counts), and ``failures``:
        a list of ``{"kind", "property", "case", "evidence", "replay"}`` (see :class:`Failure`)."""
        return {
            "impl": impl_name, "device": device, "budget": budget, "seconds": round(self.seconds, 3),
            "cases": self.cases, "declined": self.declined, "found": self.found,
            "by_property": dict(self.by_property), "by_kind": dict(self.by_kind),
            "failures": [failure.to_json() for failure in self.failures], "workers": self.workers,
        }


#: ``Property.draw`` keys passed straight to :func:`flashcheck.strategies.cases`.
_DRAW_ARGUMENTS = ("empty_rows", "mask", "varlen", "key_padding")


def case_strategy(prop: Property, features, profile):
    """Cases for ``prop`` inside ``features``, drawn as the property asks (``prop.draw``):
    ``empty_rows``, ``mask``, ``varlen``, ``key_padding`` as in
    :func:`flashcheck.strategies.cases`; ``unmasked``: no band, mask or packing."""
    kwargs = {"profile": profile, "features": features}
    kwargs.update({key: prop.draw[key] for key in _DRAW_ARGUMENTS if key in prop.draw})
    if prop.draw.get("unmasked"):
        kwargs["features"] = frozenset(features) - {"causal", "window", "mask", "varlen"}
    return strategies.cases(**kwargs).filter(prop.applies)


def drawable(prop: Property, features) -> bool:
    """Whether cases for ``prop`` exist inside ``features`` (rows without keys need a band,
    a mask or packing; masked or packed draws need that feature)."""
    if not prop.requires <= features:
        return False
    if prop.draw.get("empty_rows") and not features & {"causal", "window", "mask", "varlen"}:
        return False
    if (prop.draw.get("mask") or prop.draw.get("key_padding")) and "mask" not in features:
        return False
    return not (prop.draw.get("varlen") and "varlen" not in features)


def case_kinds(case) -> list[str]:
    """Labels that say which regions of the case space a case exercises."""
    kinds = [case.dtype, case.layout, case.values]
    banded = case.band != (-1, -1)
    kinds.append("causal" if case.causal else ("window" if banded else "no band"))
    if not case.mask.is_none:
        kinds.append(f"mask {case.mask.kind}")
        if case.mask.shape not in ("BHQK", "B11K"):
            kinds.append("broadcast mask")
    if case.varlen:
        kinds.append("varlen")
        if any(0 in pair for pair in case.seqlens):
            kinds.append("empty sequence")
    if not case.is_masked:
        kinds.append("unmasked")
    if case.kv_heads < case.heads:
        kinds.append("gqa" if case.kv_heads > 1 else "mqa")
    if case.seqlen_q != case.seqlen_k:
        kinds.append("Nq<Nk" if case.seqlen_q < case.seqlen_k else "Nq>Nk")
    if case.has_empty_rows:
        kinds.append("empty rows")
    return kinds


def run(
    impl,
    *,
    impl_name: str,
    budget: float,
    device: str,
    profile,
    seed: int | None = None,
    database: str | None = None,
    properties: list[str] | None = None,
    on_case: Callable[[str, Case], None] | None = None,
    before_case: Callable[[str, Case], None] | None = None,
    on_declined: Callable[[str, Case], None] | None = None,
    on_found: Callable[[PropertyFailure], None] | None = None,
    on_fatal: Callable[[BaseException], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    shrink_time: float | None = None,
) -> FuzzResult:
    """Fuzz ``impl`` in this process for ``budget`` seconds; stop at the first failure,
    shrunk to a minimal case.

    Hooks: ``before_case(property, case)`` just before each call (the isolated fuzzer
    writes the case to disk there), ``on_case(property, case)`` after each completed case, ``on_declined(property,
    case)`` after each case the implementation declined,
    ``on_found(failure)`` at the first failure, before shrinking, ``on_fatal(error)`` for
    an error after which the process cannot run further cases (:func:`is_fatal`; it
    should end the process: the isolated fuzzer's worker reports the case as a crash),
    and ``should_stop()`` polled before each case. Shrinking stops at the budget's end or ``shrink_time``
    seconds after the first failure, whichever comes first; the smallest failing case
    found by then is the counterexample.
    """
    features = protocol.features_of(impl, device)
    chosen = [PROPERTIES[name] for name in properties] if properties else list(PROPERTIES.values())
    chosen = [p for p in chosen if drawable(p, features)]
    if not chosen:
        raise ValueError(f"no property applies to {impl_name} with features {sorted(features)}")
    pairs = st.sampled_from(chosen).flatmap(
        lambda prop: st.tuples(st.just(prop), case_strategy(prop, features, profile))
    )
    result = FuzzResult()
    start = time.monotonic()
    deadline = start + budget
    # Failures seen so far, by (property, case): once time is up, these fail again at once
    # and every other case passes, so hypothesis ends its shrink on the smallest failure
    # seen and its final replay of it reproduces without running anything.
    seen: dict[tuple[str, str], PropertyFailure] = {}
    stop_shrinking = [deadline]

    def out_of_time() -> bool:
        return time.monotonic() > stop_shrinking[0] or should_stop()

    def one_case(pair):
        prop, case = pair
        if out_of_time():
            if (prop.name, case.spec()) in seen:
                raise seen[prop.name, case.spec()]
            return
        if before_case is not None:
            before_case(prop.name, case)
        try:
            prop.check(impl, case, device=device)
        except NotImplementedError:
            # The adapter's documented way to decline a case inside its declared features
            # that it cannot express (e.g. causal with Nq != Nk for SDPA's flash backend).
            result.declined += 1
            if on_declined is not None:
                on_declined(prop.name, case)
            return
        except PropertyFailure as failure:
            failure.property_name, failure.case, failure.impl_name = prop.name, case, impl_name
            _first_failure(failure)
            raise
        except Exception as error:
            if is_fatal(error):
                # The process cannot go on (a CUDA error poisons its context), so neither
                # can shrinking: hand the error over before hypothesis sees it.
                if on_fatal is not None:
                    on_fatal(error)
                raise
            failure = PropertyFailure(
                f"the implementation raised {type(error).__name__}: {error}",
                property_name=prop.name, case=case, impl_name=impl_name,
            )
            _first_failure(failure)
            raise failure from error
        result.count(prop.name, case_kinds(case))
        result.seconds = time.monotonic() - start
        if on_case is not None:
            on_case(prop.name, case)

    def _first_failure(failure):
        if not seen:
            if shrink_time is not None:
                stop_shrinking[0] = min(deadline, time.monotonic() + shrink_time)
            if on_found is not None:
                on_found(failure)
        seen[failure.property_name, failure.case.spec()] = failure

    config = settings(
        max_examples=ROUND_EXAMPLES,
        deadline=None,
        database=DirectoryBasedExampleDatabase(database) if database else None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        print_blob=False,
        report_multiple_bugs=False,
    )
    round_number = 0
    while not out_of_time():
        test = given(pairs)(one_case)
        if seed is not None:
            test = hypothesis_seed(seed + round_number)(test)
        try:
            config(test)()
        except Exception as error:
            if not seen:
                raise
            # Hypothesis re-raises the smallest failure; anything else (a FlakyFailure when
            # a racy implementation passed on replay) reports the last failure seen.
            failure = error if isinstance(error, PropertyFailure) else list(seen.values())[-1]
            result.failures.append(Failure.from_property_failure(failure))
            break
        round_number += 1
    result.seconds = time.monotonic() - start
    return result


def is_fatal(error: BaseException) -> bool:
    """Whether ``error`` leaves the process unable to run further cases: a CUDA error
    (an illegal address, a launch failure) poisons the CUDA context for good."""
    fatal_type = getattr(torch, "AcceleratorError", None)
    if fatal_type is not None and isinstance(error, fatal_type):
        return True
    return isinstance(error, RuntimeError) and "CUDA error" in str(error)
