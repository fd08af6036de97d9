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


CAUSAL_FAULT = KnownDivergence("planted: an illegal memory access on causal cases", lambda case: case.causal,
                               raises=True, raising="illegal memory access")


def faults_when_causal(q, k, v, **kwargs):
    """Loses the CUDA context on causal cases, as :data:`tests.support.misbehaving.fatal_cuda_error`
    does (what torch raises then, without a GPU), and declares that fault (:data:`CAUSAL_FAULT`)."""
    if kwargs.get("causal"):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return same_precision.attention(q, k, v, **kwargs)


def faults_when_causal_undeclared(q, k, v, **kwargs):
    """The same fault, where only the causal-only numerical divergence is declared: a finding."""
    return faults_when_causal(q, k, v, **kwargs)


faults_when_causal.flashcheck_features = faults_when_causal_undeclared.flashcheck_features = FEATURES
faults_when_causal.flashcheck_known_divergences = {"out_matches_reference": CAUSAL_FAULT}
faults_when_causal_undeclared.flashcheck_known_divergences = {"out_matches_reference": CAUSAL_ONLY}


def too_large_declared_whole(q, k, v, **kwargs):
    """Too large on every case, declared so on the whole of out_matches_reference (a reason
    string: every case)."""
    return too_large_everywhere(q, k, v, **kwargs)


too_large_declared_whole.flashcheck_features = FEATURES
too_large_declared_whole.flashcheck_known_divergences = {"out_matches_reference": "planted: 1% too large"}
