"""Fuzzing: draw (property, case) pairs with hypothesis until a time budget is spent.

Hypothesis draws the property and the case structure; a failure is shrunk to a minimal
case and kept in an example database, so the next run replays it first. The engine runs
hypothesis in short rounds (each a fresh ``@given`` run with its own seed) so that it can
stop at the budget, and reports what it exercised.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from flashcheck import protocol, strategies
from flashcheck.compare import PropertyFailure
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property

ROUND_EXAMPLES = 10


@dataclass
class FuzzResult:
    """What a fuzzing run did and, if it found one, its shrunk counterexample."""

    cases: int = 0
    seconds: float = 0.0
    by_property: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    declined: int = 0  # cases the implementation declined with NotImplementedError
    failure: BaseException | None = None

    @property
    def found(self) -> bool:
        return self.failure is not None

    def to_json(self, *, impl_name: str, device: str, budget: float) -> dict:
        """The result as plain data: ``impl``, ``device``, ``budget``, ``seconds``, ``cases``,
        ``declined``, ``found``, ``by_property`` and ``by_kind`` (counts), and ``failures``:
        a list of ``{"kind", "property", "case", "evidence", "replay"}`` where ``kind`` is
        ``"property"`` (the property failed), ``"crash"`` (the process running the case died)
        or ``"hang"`` (the case ran past its timeout), ``case`` a case spec or None."""
        failures = []
        if self.failure is not None:
            failure = self.failure
            case = getattr(failure, "case", None)
            failures.append({
                "kind": "property",
                "property": getattr(failure, "property_name", None),
                "case": case.spec() if case is not None else None,
                "evidence": getattr(failure, "evidence", str(failure)),
                "replay": failure.reproduction() if hasattr(failure, "reproduction") else None,
            })
        return {
            "impl": impl_name, "device": device, "budget": budget, "seconds": round(self.seconds, 3),
            "cases": self.cases, "declined": self.declined, "found": self.found,
            "by_property": dict(self.by_property), "by_kind": dict(self.by_kind), "failures": failures,
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
    on_case: Callable[[FuzzResult], None] | None = None,
) -> FuzzResult:
    """Fuzz ``impl`` for ``budget`` seconds; stop at the first (shrunk) failure."""
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

    def one_case(pair):
        prop, case = pair
        if time.monotonic() > deadline:
            return  # the budget is spent: let the round finish without work
        try:
            prop.check(impl, case, device=device)
        except NotImplementedError:
            # The adapter's documented way to decline a case inside its declared features
            # that it cannot express (e.g. causal with Nq != Nk for SDPA's flash backend).
            result.declined += 1
            return
        except PropertyFailure as failure:
            failure.property_name, failure.case, failure.impl_name = prop.name, case, impl_name
            raise
        except Exception as error:
            raise PropertyFailure(
                f"the implementation raised {type(error).__name__}: {error}",
                property_name=prop.name, case=case, impl_name=impl_name,
            ) from error
        result.cases += 1
        result.by_property[prop.name] += 1
        result.by_kind.update(case_kinds(case))
        result.seconds = time.monotonic() - start
        if on_case is not None:
            on_case(result)

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
    while time.monotonic() < deadline:
        test = given(pairs)(one_case)
        if seed is not None:
            test = hypothesis_seed(seed + round_number)(test)
        try:
            config(test)()
        except PropertyFailure as failure:
            result.failure = failure
            break
        round_number += 1
    result.seconds = time.monotonic() - start
    return result
