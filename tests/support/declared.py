"""Implementations that declare known divergences, for what a declaration explains and what it
does not.

Two return an output 1% too large: one only on causal cases, which its divergence covers (its
failures are expected), the other on every case while declaring the same causal-only divergence
(its failures on non-causal cases are findings); a third on every case, declared on the whole
property. Others raise on causal cases, an ordinary error or the one torch raises once the CUDA
context is lost (a fault), each with a numerical divergence that must not explain it and with
one declared to raise it (``raises``). Float32 only, to keep runs short.
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


def _raising_when_causal(message: str, declared: KnownDivergence):
    """An implementation raising ``RuntimeError(message)`` on causal cases and right on the
    others, declaring ``declared`` on out_matches_reference."""

    def attention(q, k, v, **kwargs):
        if kwargs.get("causal"):
            raise RuntimeError(message)
        return same_precision.attention(q, k, v, **kwargs)

    attention.flashcheck_features = FEATURES
    attention.flashcheck_known_divergences = {"out_matches_reference": declared}
    return attention


LAUNCH_ERROR = "planted: no kernel found to launch"
#: Raises on causal cases, where it declares the causal-only numerical divergence above: that
#: divergence must not explain the error.
raises_when_causal = _raising_when_causal(LAUNCH_ERROR, CAUSAL_ONLY)
#: The same error, declared as the divergence it is (``raises``).
refuses_when_causal = _raising_when_causal(LAUNCH_ERROR, CAUSAL_REFUSAL)

CAUSAL_FAULT = KnownDivergence("planted: an illegal memory access on causal cases", lambda case: case.causal,
                               raises=True, raising="illegal memory access")
#: What torch raises once the CUDA context is lost, as :data:`tests.support.misbehaving.fatal_cuda_error`
#: raises it without a GPU.
FAULT = "CUDA error: an illegal memory access was encountered"
#: Loses the CUDA context on causal cases, and declares that fault (:data:`CAUSAL_FAULT`).
faults_when_causal = _raising_when_causal(FAULT, CAUSAL_FAULT)
#: The same fault, where only the causal-only numerical divergence is declared: a finding.
faults_when_causal_undeclared = _raising_when_causal(FAULT, CAUSAL_ONLY)


def too_large_declared_whole(q, k, v, **kwargs):
    """Too large on every case, declared so on the whole of out_matches_reference (a reason
    string: every case)."""
    return too_large_everywhere(q, k, v, **kwargs)


too_large_declared_whole.flashcheck_features = FEATURES
too_large_declared_whole.flashcheck_known_divergences = {"out_matches_reference": "planted: 1% too large"}


class OutOfResources(RuntimeError):
    """An error known by its type's name, as Triton's is (its message does not repeat it)."""


BY_TYPE_NAME = KnownDivergence("planted: raises OutOfResources on causal cases", lambda case: case.causal,
                               raises=True, raising="OutOfResources", wrong_results=False)


def out_of_resources_when_causal(q, k, v, **kwargs):
    """Raises :class:`OutOfResources` on causal cases, and declares it by the type's name."""
    if kwargs.get("causal"):
        raise OutOfResources("out of resource: shared memory, Required: 589824, Hardware limit: 232448.")
    return same_precision.attention(q, k, v, **kwargs)


out_of_resources_when_causal.flashcheck_features = FEATURES
out_of_resources_when_causal.flashcheck_known_divergences = {"out_matches_reference": BY_TYPE_NAME}


def out_of_resources_everywhere(q, k, v, **kwargs):
    """Raises :class:`OutOfResources` on every case, and declares it on causal cases alone: a
    declaration narrower than its bug."""
    raise OutOfResources("out of resource: shared memory, Required: 294912, Hardware limit: 232448.")


out_of_resources_everywhere.flashcheck_features = FEATURES
out_of_resources_everywhere.flashcheck_known_divergences = {"out_matches_reference": BY_TYPE_NAME}
