"""What a correct implementation must return for given inputs, with its allowed error.

:func:`expect` runs the float64 reference and the same-precision attention on the
inputs and derives the tolerance of each output; :meth:`Expectation.check` compares an
implementation's ``(out, lse)`` with it and raises :class:`~flashcheck.oracle.compare.Violation`
with the evidence.

Both take the protocol's keyword arguments. A packed (varlen) problem is checked as the
dense batch of one under its document mask (:mod:`flashcheck.cases.packing`); the comparisons
then take and report the implementation's packed layout (out ``(Tq, H, D)``, lse
``(H, Tq)``, dk ``(Tk, Hkv, D)``), each index with its sequence and position.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass

import torch
from hypothesis import target
from hypothesis.control import currently_in_test_context

from flashcheck.cases import packing, phases as case_phases
from flashcheck.oracle import compare, reference, same_precision, tolerance


#: The observers of the comparisons made in this context (see :func:`observing`).
_observers: contextvars.ContextVar[tuple] = contextvars.ContextVar("flashcheck_observers", default=())


@contextlib.contextmanager
def observing(observer):
    """Within the ``with`` block, call ``observer(output_name, metrics)`` for every comparison
    that passes its elementwise check (the property suite logs error/allowed ratios this way).

    Observers nest: each block adds one for its duration, in this thread or task only."""
    token = _observers.set((*_observers.get(), observer))
    try:
        yield observer
    finally:
        _observers.reset(token)


def _tell_observers(name: str, metrics: compare.Metrics) -> None:
    for observer in _observers.get():
        observer(name, metrics)


class _Layout:
    """The implementation's layout: dense, or packed (``packing`` set). ``view`` takes a
    dense batch-of-one tensor to the packed layout; ``dense_index`` maps back."""

    packing: packing.Packing | None = None

    def view(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.packing is None else packing.to_packed(name, tensor)

    def dense_index(self, index) -> tuple:
        return tuple(index) if self.packing is None else (0, *index)

    def locate(self, name: str):
        return None if self.packing is None else (lambda index: self.packing.describe(name, index))


@dataclass
class Expectation(_Layout):
    ref: reference.Reference = None  # dense: a packed problem's as a batch of one
    out: tolerance.Bound = None
    lse: tolerance.Bound = None
    limits: dict = None  # output name -> largest error allowed anywhere (the aggregate rule)
    packing: packing.Packing | None = None

    @property
    def expected_out(self) -> torch.Tensor:
        """The float64 output in the implementation's layout."""
        return self.view("out", self.ref.out)

    @property
    def expected_lse(self) -> torch.Tensor:
        return self.view("lse", self.ref.lse)

    def allowed(self, name: str) -> torch.Tensor:
        """The allowed error of ``"out"`` or ``"lse"`` in the implementation's layout."""
        return self.view(name, getattr(self, name).allowed)

    def check_out(self, got: torch.Tensor) -> compare.Metrics:
        """Both rules of :mod:`flashcheck.oracle.tolerance` for the output."""
        allowed = self.allowed("out")
        metrics = compare.check_close("out", got, held_to(self.expected_out, got, allowed), allowed,
                                      explain=self.explain_out, locate=self.locate("out"))
        return self._check_aggregate("out", metrics)

    def check_lse(self, got: torch.Tensor) -> compare.Metrics:
        metrics = compare.check_close("lse", got, self.expected_lse, self.allowed("lse"), explain=self.explain_lse,
                                      locate=self.locate("lse"))
        return self._check_aggregate("lse", metrics)

    def _check_aggregate(self, name: str, metrics: compare.Metrics) -> compare.Metrics:
        limit = self.limits[name]
        _tell_observers(name, metrics)
        _steer(name, metrics)
        if metrics.max_abs > limit:
            where = compare.format_index(name, metrics.max_abs_index, self.locate(name))
            raise compare.Violation(
                f"{name}: largest error {metrics.max_abs:.3e} at {where} "
                f"exceeds {tolerance.SAME_PRECISION_FACTOR:g} × the plain same-precision attention's largest error "
                f"plus an ulp-scale floor: {limit:.3e} (every element is within its worst-case bound; "
                f"the implementation is uniformly less accurate than its precision promises)"
            )
        return metrics

    def explain_out(self, index) -> str:
        index = self.dense_index(index)
        return _explain(self.out, index, "2·[" + _terms(self.out, index) + "]")

    def explain_lse(self, index) -> str:
        index = self.dense_index(index)
        return _explain(self.lse, index, "2·[" + _terms(self.lse, index) + "]")


@case_phases.phase("reference")
def expect(q, k, v, *, tf32=False, **kwargs) -> Expectation:
    """Reference outputs of ``q, k, v`` and the allowed error of each.

    ``kwargs`` are the protocol's (causal, window, softmax_scale, attn_mask, cu_seqlens_q,
    cu_seqlens_k, max_seqlen_q, max_seqlen_k); ``tf32``: the implementation multiplies
    float32 operands as TF32."""
    q, k, v, kwargs, packed = packing.as_dense(q, k, v, kwargs)
    ref = reference.evaluate(q, k, v, **kwargs)
    same_precision_outputs = same_precision.attention(q, k, v, **kwargs)
    bounds = {
        name: tolerance.bound_for(name, ref, dtype=q.dtype, head_dim=q.shape[-1],
                                  same_precision=same_precision_outputs, tf32=tf32)
        for name in ("out", "lse")
    }
    limits = {
        name: tolerance.aggregate_limit(name, ref, same_precision_outputs, dtype=q.dtype, head_dim=q.shape[-1])
        for name in ("out", "lse")
    }
    return Expectation(ref=ref, out=bounds["out"], lse=bounds["lse"], limits=limits, packing=packed)


def overflow_threshold(dtype: torch.dtype) -> float:
    """The smallest magnitude that rounds to infinity in ``dtype`` (round to nearest even):
    its largest finite number plus half a unit in the last place there."""
    info = torch.finfo(dtype)
    ulp_at_max = 2.0 ** math.floor(math.log2(info.max)) * info.eps
    return float(info.max) + ulp_at_max / 2


def held_to(exact: torch.Tensor, got: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """What each element of ``got`` is compared with: the float64 ``exact`` value, except
    where ``got`` is an infinity that a value within ``allowed`` of the exact one rounds to
    in ``got``'s dtype (the same sign, and ``|exact| + allowed`` at least the dtype's
    :func:`overflow_threshold`); there that infinity itself, matched exactly.

    So near the top of the dtype's range a result may overflow or stay finite, as the
    allowed error permits either; an exact value far beyond the range must come back as
    infinity, since every finite number is then farther from it than the allowed error."""
    threshold = overflow_threshold(got.dtype)
    exact = exact.to(torch.float64)
    got = got.to(torch.float64).to(exact.device)
    allowed = allowed.to(torch.float64).to(exact.device).expand_as(exact)
    reach = exact.abs() + allowed >= threshold
    overflowed = torch.isinf(got) & (torch.sign(got) == torch.sign(exact)) & reach
    return torch.where(overflowed, got, exact)


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
    if bound.same_precision is None:
        return f"model {model:.3e} = {model_text}"
    doubled = float(bound.same_precision.expand_as(bound.model)[index])
    governs = "model" if model >= doubled else "same-precision error"
    return (
        f"max(model {model:.3e}, {tolerance.SAME_PRECISION_FACTOR:g} × plain same-precision error "
        f"{doubled / tolerance.SAME_PRECISION_FACTOR:.3e}); {governs} governs; model = {model_text}"
    )


@dataclass
class GradientExpectation(_Layout):
    """Float64 gradients for given upstream gradients, with the allowed error of each."""

    grads: object = None  # reference.Gradients (dense: a packed problem's as a batch of one)
    bounds: dict = None  # "dq" | "dk" | "dv" -> tolerance.Bound
    packing: packing.Packing | None = None

    def expected(self, name: str) -> torch.Tensor:
        """The float64 gradient ``name`` in the implementation's layout."""
        return self.view(name, getattr(self.grads, name))

    def allowed(self, name: str) -> torch.Tensor:
        return self.view(name, self.bounds[name].allowed)

    def check(self, name: str, got: torch.Tensor) -> compare.Metrics:
        bound = self.bounds[name]
        allowed = self.allowed(name)
        metrics = compare.check_close(
            name, got, held_to(self.expected(name), got, allowed), allowed,
            explain=lambda index: _explain_gradient(bound, self.dense_index(index)), locate=self.locate(name),
        )
        _tell_observers(name, metrics)
        _steer(name, metrics)
        return metrics


@case_phases.phase("reference")
def expect_gradients(q, k, v, grad_out, grad_lse=None, *, tf32=False, **kwargs) -> GradientExpectation:
    """Reference gradients of ``q, k, v`` for upstream ``grad_out`` (and ``grad_lse``) and
    the allowed error of each (see :func:`flashcheck.oracle.tolerance.gradient_bounds`).
    ``kwargs``: the protocol's, as for :func:`expect`; upstream gradients in the
    implementation's layout (packed: grad_out ``(Tq, H, D)``, grad_lse ``(H, Tq)``)."""
    q, k, v, kwargs, packed = packing.as_dense(q, k, v, kwargs)
    if packed is not None:
        grad_out, grad_lse = packing.to_dense(grad_out), packing.to_dense(grad_lse)
    forward = expect(q, k, v, tf32=tf32, **kwargs)
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    same_precision_grads = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    softmax_scale = kwargs.get("softmax_scale")
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    bounds = tolerance.gradient_bounds(
        grads, forward.ref, forward.out, forward.lse, grad_out,
        dtype=q.dtype, head_dim=q.shape[-1], scale=scale, same_precision=same_precision_grads, q=q, k=k,
        grad_lse=grad_lse,
    )
    return GradientExpectation(grads=grads, bounds=bounds, packing=packed)


def _explain_gradient(bound: tolerance.Bound, index) -> str:
    model = float(bound.model[index])
    if bound.same_precision is None:
        return f"model {model:.3e} (tolerance.gradient_bounds)"
    doubled = float(bound.same_precision.expand_as(bound.model)[index])
    return (
        f"max(model {model:.3e} (tolerance.gradient_bounds), {tolerance.SAME_PRECISION_FACTOR:g} × plain "
        f"same-precision backward error {doubled / tolerance.SAME_PRECISION_FACTOR:.3e})"
    )
