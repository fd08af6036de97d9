"""Implementations that declare a known divergence confined to some cases.

Both return an output 1% too large; one only on causal cases, which its divergence covers
(its failures are expected), the other on every case, while declaring the same causal-only
divergence (its failures on non-causal cases are findings). Float32 only, to keep runs short.
"""

from __future__ import annotations

from flashcheck.divergences import KnownDivergence
from flashcheck.oracle import same_precision

FEATURES = frozenset({"float32", "lse", "causal"})
CAUSAL_ONLY = KnownDivergence("planted: the output is 1% too large on causal cases", lambda case: case.causal)


def too_large_when_causal(q, k, v, **kwargs):
    out, lse = same_precision.attention(q, k, v, **kwargs)
    return (out * 1.01 if kwargs.get("causal") else out), lse


def too_large_everywhere(q, k, v, **kwargs):
    out, lse = same_precision.attention(q, k, v, **kwargs)
    return out * 1.01, lse


for _impl in (too_large_when_causal, too_large_everywhere):
    _impl.flashcheck_features = FEATURES
    _impl.flashcheck_known_divergences = {"out_matches_reference": CAUSAL_ONLY}


CAUSAL_REFUSAL = KnownDivergence("planted: refuses causal cases at call time", lambda case: case.causal, raises=True)


def raises_when_causal(q, k, v, **kwargs):
    """Raises on causal cases, where it declares the causal-only numerical divergence above:
    that divergence must not explain the error."""
    if kwargs.get("causal"):
        raise RuntimeError("planted: no kernel found to launch")
    return same_precision.attention(q, k, v, **kwargs)


def refuses_when_causal(q, k, v, **kwargs):
    """The same error, declared as the divergence it is (``raises``)."""
    return raises_when_causal(q, k, v, **kwargs)


raises_when_causal.flashcheck_features = refuses_when_causal.flashcheck_features = FEATURES
raises_when_causal.flashcheck_known_divergences = {"out_matches_reference": CAUSAL_ONLY}
refuses_when_causal.flashcheck_known_divergences = {"out_matches_reference": CAUSAL_REFUSAL}
