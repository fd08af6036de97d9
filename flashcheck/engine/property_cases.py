"""Which cases a property draws for an implementation, and why a property is not run on one.

The one home of applicability: fuzzing, the pytest suite and ``flashcheck check`` ask here
whether a property applies to an implementation (its features, its declared case domain,
what it declares not applicable) and draw its cases here (:func:`cases_for`), inside the
implementation's features and case domain, in its compile classes on the GPU, and with the
cases of known findings drawn rarely.
"""

from __future__ import annotations

from typing import Callable

from hypothesis import strategies as st

from flashcheck import protocol
from flashcheck.cases import case as case_module
from flashcheck.cases import strategies
from flashcheck.cases.case import Case
from flashcheck.cases.domain import CaseDomain
from flashcheck.properties.registry import Property

#: ``Property.draw`` keys passed straight to :func:`flashcheck.cases.strategies.cases`.
_DRAW_ARGUMENTS = ("empty_rows", "mask", "varlen", "key_padding", "gqa", "dtypes", "values")


#: The features that can hide a key from a query: a band (causal, window), a mask, packing.
HIDING_FEATURES = frozenset({"causal", "window", "mask", "varlen"})


def case_strategy(prop: Property, features, sizes, *, domain: CaseDomain | None = None,
                  compile_key: tuple[str, ...] | None = None, avoid: tuple[Callable[[Case], bool], ...] = ()):
    """Cases for ``prop`` inside ``features``, drawn as the property asks (``prop.draw``):
    ``empty_rows``, ``mask``, ``varlen``, ``key_padding``, ``gqa``, ``dtypes``, ``values`` as in
    :func:`flashcheck.cases.strategies.cases`; ``unmasked``: no band, mask or packing. ``domain`` and
    ``compile_key``: the implementation's, as :func:`flashcheck.cases.strategies.cases` takes them.

    ``avoid``: predicates of cases not to draw, none of them holding for a case drawn: a fuzz
    turn steered off a known divergence already seen or a campaign's crashing case classes. The
    fuzzer leaves one turn in :data:`flashcheck.engine.fuzz.RARE_ODDS` unsteered, so that those
    cases are drawn rarely, never excluded; where every case is one of them, hypothesis finds none
    (``Unsatisfiable``), which the fuzzer acts on."""
    kwargs = {"sizes": sizes, "features": features, "domain": domain, "compile_key": compile_key}
    kwargs.update({key: prop.draw[key] for key in _DRAW_ARGUMENTS if key in prop.draw})
    if prop.draw.get("unmasked"):
        kwargs["features"] = frozenset(features) - HIDING_FEATURES
    cases = strategies.cases(**kwargs).filter(prop.applies)
    if not avoid:
        return cases
    return cases.filter(lambda case: not any(predicate(case) for predicate in avoid))


def cases_for(prop: Property, impl, device, sizes, *, avoid: tuple[Callable[[Case], bool], ...] = ()):
    """:func:`case_strategy` for ``impl`` on ``device``: its features, case domain and compile key."""
    return case_strategy(prop, protocol.features_of(impl, device), sizes,
                         domain=protocol.case_domain_of(impl, device), compile_key=protocol.compile_key_of(impl),
                         avoid=avoid)


def drawable(prop: Property, features, device=None, domain: CaseDomain | None = None) -> bool:
    """Whether cases for ``prop`` exist inside ``features`` (see :func:`not_drawable_because`)."""
    return not_drawable_because(prop, features, device, domain) is None


def not_drawable_because(prop: Property, features, device=None, domain: CaseDomain | None = None) -> str | None:
    """Why no case for ``prop`` exists inside ``features`` (on ``device``, when given), or
    None when cases can be drawn: the property cannot be measured on that device kind; a
    feature it requires is not declared; rows without keys need a band, a mask or packing;
    masked or packed draws need that feature; a property drawing some dtypes only needs one
    of them declared; a property about hidden keys or rows without keys needs a feature
    that can hide keys (a band, a mask, packing); inside a ``domain`` of equal lengths, rows
    without keys need a mask."""
    if device is not None and not prop.runs_on(device):
        return f"can be measured on {', '.join(sorted(prop.devices))} only, not on {torch_device_kind(device)}"
    missing = prop.requires - features
    if missing:
        return f"needs the feature{'s' if len(missing) > 1 else ''} {', '.join(sorted(missing))}"
    hiding = ", ".join(sorted(HIDING_FEATURES - {"varlen"})) + " or varlen"
    if prop.draw.get("empty_rows") and not features & HIDING_FEATURES:
        return f"draws rows without keys, which need one of the features {hiding}"
    if prop.draw.get("hides_keys") and not features & HIDING_FEATURES:
        return f"draws cases that hide keys from queries, which need one of the features {hiding}"
    named_dtypes = features & set(case_module.DTYPES)  # none named: every dtype
    if "dtypes" in prop.draw and named_dtypes and not named_dtypes & set(prop.draw["dtypes"]):
        return f"draws only {', '.join(prop.draw['dtypes'])}, none of them declared"
    if (prop.draw.get("mask") or prop.draw.get("key_padding")) and "mask" not in features:
        return "draws masked cases, which need the feature mask"
    if prop.draw.get("varlen") and "varlen" not in features:
        return "draws packed cases, which need the feature varlen"
    if domain is not None and domain.equal_lengths and prop.draw.get("empty_rows") and "mask" not in features:
        return ("draws rows without keys, which the declared case domain (equal lengths) leaves only under a mask, "
                "and the feature mask is not declared")
    return None


#: How a property the implementation declares not applicable (``flashcheck_not_applicable``,
#: :func:`flashcheck.protocol.not_applicable`) is reported, before the declared reason.
DECLARED = "declared not applicable by the implementation"


def declared_not_applicable(prop: Property, impl) -> str | None:
    """Why ``impl`` declares ``prop`` not applicable, as reported (``"declared not applicable by
    the implementation: REASON"``), or None when it does not declare it so."""
    reason = protocol.not_applicable(impl).get(prop.name)
    return None if reason is None else f"{DECLARED}: {reason}"


def not_applicable_because(prop: Property, impl, device=None) -> str | None:
    """Why ``prop`` is not run on ``impl`` (on ``device``, when given), or None when it is:
    no case for it exists inside the implementation's features and case domain there
    (:func:`not_drawable_because`), or the implementation declares it not applicable
    (:func:`declared_not_applicable`). What fuzzing and the pytest suite leave out, each
    shown with this reason as not applicable, never as passed."""
    reason = not_drawable_because(prop, protocol.features_of(impl, device), device,
                                  protocol.case_domain_of(impl, device))
    return reason if reason is not None else declared_not_applicable(prop, impl)


def torch_device_kind(device) -> str:
    """``"cpu"``, ``"cuda"``...: the kind of a device given as a string or torch.device."""
    import torch

    return torch.device(device).type


#: Why a property whose every drawn case its ``applies`` rejected is not applicable.
UNSATISFIABLE = "no case drawn inside the declared features is one it applies to"
