"""What a correct implementation must return for given inputs, with its allowed error.

:func:`expect` runs the float64 reference and the plain same-precision baseline on the
inputs and derives the tolerance of each output; :meth:`Expectation.check` compares an
implementation's ``(out, lse)`` with it and raises :class:`~flashcheck.compare.PropertyFailure`
with the evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import target
from hypothesis.control import currently_in_test_context

from flashcheck import compare, plain, reference, tolerance


#: Callables ``observer(output_name, metrics)`` told of every comparison that passed its
#: elementwise check (the test suite uses this to log error/allowed ratios).
OBSERVERS: list = []


@dataclass
class Expectation:
    ref: reference.Reference
    out: tolerance.Bound
    lse: tolerance.Bound
    limits: dict  # output name -> largest error allowed anywhere (the aggregate rule)

    def check_out(self, got: torch.Tensor) -> compare.Metrics:
        """Both rules of :mod:`flashcheck.tolerance` for the output."""
        expected = representable(self.ref.out, got.dtype)
        metrics = compare.check_close("out", got, expected, self.out.allowed, explain=self.explain_out)
        return self._check_aggregate("out", metrics)

    def check_lse(self, got: torch.Tensor) -> compare.Metrics:
        metrics = compare.check_close("lse", got, self.ref.lse, self.lse.allowed, explain=self.explain_lse)
        return self._check_aggregate("lse", metrics)

    def _check_aggregate(self, name: str, metrics: compare.Metrics) -> compare.Metrics:
        limit = self.limits[name]
        for observer in OBSERVERS:
            observer(name, metrics)
        _steer(name, metrics)
        if metrics.max_abs > limit:
            raise compare.PropertyFailure(
                f"{name}: largest error {metrics.max_abs:.3e} at {compare.format_index(name, metrics.max_abs_index)} "
                f"exceeds {tolerance.BASELINE_FACTOR:g} × the plain same-precision attention's largest error "
                f"plus an ulp-scale floor: {limit:.3e} (every element is within its worst-case bound; "
                f"the implementation is uniformly less accurate than its precision promises)"
            )
        return metrics

    def explain_out(self, index) -> str:
        return _explain(self.out, index, "2·[" + _terms(self.out, index) + "]")

    def explain_lse(self, index) -> str:
        return _explain(self.lse, index, "2·[" + _terms(self.lse, index) + "]")


def expect(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, tf32=False) -> Expectation:
    """Reference outputs of ``q, k, v`` and the allowed error of each."""
    kwargs = {"causal": causal, "window": window, "softmax_scale": softmax_scale}
    ref = reference.evaluate(q, k, v, **kwargs)
    baseline = plain.attention(q, k, v, **kwargs)
    bounds = {
        name: tolerance.bound_for(name, ref, dtype=q.dtype, head_dim=q.shape[-1], plain=baseline, tf32=tf32)
        for name in ("out", "lse")
    }
    limits = {
        name: tolerance.aggregate_limit(name, ref, baseline, dtype=q.dtype, head_dim=q.shape[-1])
        for name in ("out", "lse")
    }
    return Expectation(ref, bounds["out"], bounds["lse"], limits)


def representable(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The float64 expectation as the output dtype can hold it: where the exact value
    rounds to ±inf in ``dtype`` (beyond its largest finite number), the correctly rounded
    result is that infinity, and an implementation must return it exactly."""
    rounded = exact.to(dtype)
    return torch.where(torch.isinf(rounded) & torch.isfinite(exact), rounded.to(exact.dtype), exact)


def _steer(name: str, metrics: compare.Metrics) -> None:
    """Steer hypothesis towards cases where the error comes closest to its bound."""
    if currently_in_test_context() and metrics.total and math.isfinite(metrics.worst_ratio):
        target(metrics.worst_ratio, label=f"{name} error/allowed")


def _terms(bound: tolerance.Bound, index) -> str:
    parts = []
    for name, tensor in bound.terms.items():
        value = tensor.expand_as(bound.model)[index]
        parts.append(f"{name} {float(value):.2e}")
    return " + ".join(parts)


def _explain(bound: tolerance.Bound, index, model_text: str) -> str:
    model = float(bound.model[index])
    if bound.baseline is None:
        return f"model {model:.3e} = {model_text}"
    baseline = float(bound.baseline.expand_as(bound.model)[index])
    governs = "model" if model >= baseline else "plain baseline"
    return (
        f"max(model {model:.3e}, {tolerance.BASELINE_FACTOR:g} × plain same-precision error "
        f"{baseline / tolerance.BASELINE_FACTOR:.3e}); {governs} governs; model = {model_text}"
    )


@dataclass
class GradientExpectation:
    """Float64 gradients for given upstream gradients, with the allowed error of each."""

    grads: object  # reference.Gradients
    bounds: dict  # "dq" | "dk" | "dv" -> tolerance.Bound

    def check(self, name: str, got: torch.Tensor) -> compare.Metrics:
        bound = self.bounds[name]
        expected = representable(getattr(self.grads, name), got.dtype)
        metrics = compare.check_close(
            name, got, expected, bound.allowed, explain=lambda index: _explain_gradient(bound, index)
        )
        for observer in OBSERVERS:
            observer(name, metrics)
        _steer(name, metrics)
        return metrics


def expect_gradients(q, k, v, grad_out, grad_lse=None, *, causal=False, window=(-1, -1), softmax_scale=None,
                     tf32=False) -> GradientExpectation:
    """Reference gradients of ``q, k, v`` for upstream ``grad_out`` (and ``grad_lse``) and
    the allowed error of each (see :func:`flashcheck.tolerance.gradient_bounds`)."""
    forward = expect(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, tf32=tf32)
    kwargs = {"causal": causal, "window": window, "softmax_scale": softmax_scale, "grad_lse": grad_lse}
    grads = reference.gradients(q, k, v, grad_out, **kwargs)
    baseline = plain.gradients(q, k, v, grad_out, **kwargs)
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    bounds = tolerance.gradient_bounds(
        grads, forward.ref, forward.out, forward.lse, grad_out,
        dtype=q.dtype, head_dim=q.shape[-1], scale=scale, plain=baseline, q=q, k=k, grad_lse=grad_lse,
    )
    return GradientExpectation(grads, bounds)


def _explain_gradient(bound: tolerance.Bound, index) -> str:
    model = float(bound.model[index])
    if bound.baseline is None:
        return f"model {model:.3e} (tolerance.gradient_bounds)"
    baseline = float(bound.baseline.expand_as(bound.model)[index])
    return (
        f"max(model {model:.3e} (tolerance.gradient_bounds), {tolerance.BASELINE_FACTOR:g} × plain "
        f"same-precision backward error {baseline / tolerance.BASELINE_FACTOR:.3e})"
    )
