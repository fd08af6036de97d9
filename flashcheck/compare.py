"""Comparing an output with its expectation, and the failure that carries the evidence.

:func:`check_close` compares elementwise against an allowed absolute error and raises
:class:`Violation` with a report in the style of ``torch.testing.assert_close``:
how many elements exceed, the worst one (by error over allowed) with its named index,
observed and allowed error, how the allowance was made up, the greatest absolute and
relative differences (:func:`flashcheck.verdict.decide` completes it with the
implementation, the property, the case and the one command that replays it).

Non-finite values: where the expectation is not finite (lse ``-inf`` on a row with no
allowed key) the output must equal it exactly; a NaN or infinity where the expectation is
finite is an infinite error.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import torch

#: Index names of each output's dimensions, used in reports: the dense layout and the
#: packed (varlen) one, told apart by the number of dimensions (``t`` a packed token).
INDEX_NAMES = {
    "out": (("b", "i", "h", "d"), ("t", "h", "d")),
    "lse": (("b", "h", "i"), ("h", "t")),
    "q": (("b", "i", "h", "d"), ("t", "h", "d")),
    "k": (("b", "j", "h", "d"), ("t", "h", "d")),
    "v": (("b", "j", "h", "d"), ("t", "h", "d")),
}
for _name, _source in (("dq", "q"), ("dk", "k"), ("dv", "v")):
    INDEX_NAMES[_name] = INDEX_NAMES[_source]


def replay_command(impl_name: str, property_name: str, case_spec: str) -> str:
    """The one command line that replays ``property_name`` for ``impl_name`` on one case."""
    return (f"flashcheck check --impl {shlex.quote(impl_name)} --property {property_name} "
            f"--case {shlex.quote(case_spec)}")


class Violation(AssertionError):
    """What a property's check raises when its invariant does not hold: ``evidence``, the
    human-readable report. The check knows neither the implementation's name nor which
    property or case it is run as: :func:`flashcheck.verdict.decide` builds the complete
    :class:`PropertyFailure` from it."""

    def __init__(self, evidence: str):
        super().__init__(evidence)
        self.evidence = evidence


class PropertyFailure(AssertionError):
    """A property does not hold for an implementation on a case: complete where it is built.

    ``evidence`` is the human-readable report; ``property_name``, ``case`` (a
    :class:`~flashcheck.case.Case`) and ``impl_name`` (a built-in name or ``module:attr``)
    are required, so that ``replay``, the command line that reproduces exactly this
    failure, always names the implementation that failed.
    """

    def __init__(self, evidence: str, *, property_name: str, case, impl_name: str):
        for name, value in (("property_name", property_name), ("impl_name", impl_name)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name}: expected a non-empty string, got {value!r}")
        if not callable(getattr(case, "spec", None)):
            raise ValueError(f"case: expected a Case, got {case!r}")
        self.evidence = evidence
        self.property_name = property_name
        self.case = case
        self.impl_name = impl_name
        self.replay = replay_command(impl_name, property_name, case.spec())
        super().__init__(str(self))

    def reproduction(self) -> str:
        """The command line that replays this failure (``replay``)."""
        return self.replay

    def __str__(self) -> str:
        return "\n".join([f"property {self.property_name} failed for {self.impl_name}", self.evidence,
                          f"case: {self.case.spec()}", f"reproduce: {self.replay}"])


@dataclass
class Metrics:
    """Summary of one comparison (all errors absolute, float64)."""

    total: int
    exceeding: int
    worst_index: tuple | None = None
    worst_ratio: float = 0.0
    worst_error: float = 0.0
    worst_allowed: float = 0.0
    max_abs: float = 0.0
    max_abs_index: tuple | None = None
    max_rel: float = 0.0
    max_rel_index: tuple | None = None
    extra: dict = field(default_factory=dict)


def errors(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Absolute error in float64; exact agreement of non-finite values counts as 0."""
    got = got.to(torch.float64)
    expected = expected.to(torch.float64).to(got.device)
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    error = (got - expected).abs()
    error = torch.where(same, torch.zeros_like(error), error)
    return torch.nan_to_num(error, nan=float("inf"))


def measure(got: torch.Tensor, expected: torch.Tensor, allowed: torch.Tensor) -> Metrics:
    """Error statistics of ``got`` against ``expected`` under elementwise ``allowed``."""
    if got.shape != expected.shape:
        raise ValueError(f"got: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
    error = errors(got, expected)
    allowed = allowed.to(torch.float64).to(error.device).expand_as(error)
    total = error.numel()
    if total == 0:
        return Metrics(total=0, exceeding=0)
    exceed = (error > allowed) | torch.isinf(error)  # a non-finite result is never allowed
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = _unravel(int(torch.argmax(ratio)), error.shape)
    biggest = _unravel(int(torch.argmax(error)), error.shape)
    relative = error / expected.to(torch.float64).to(error.device).abs()
    relative = torch.where(error == 0, torch.zeros_like(relative), relative).nan_to_num(nan=float("inf"))
    rel_index = _unravel(int(torch.argmax(relative)), error.shape)
    return Metrics(
        total=total,
        exceeding=int(exceed.sum()),
        worst_index=worst,
        worst_ratio=float(ratio[worst]),
        worst_error=float(error[worst]),
        worst_allowed=float(allowed[worst]),
        max_abs=float(error[biggest]),
        max_abs_index=biggest,
        max_rel=float(relative[rel_index]),
        max_rel_index=rel_index,
    )


def check_close(name, got, expected, allowed, *, what="the float64 reference", explain=None, locate=None) -> Metrics:
    """Raise :class:`Violation` unless ``|got - expected| <= allowed`` everywhere.

    ``name`` is the output's name (its index names come from :data:`INDEX_NAMES`);
    ``explain(index) -> str`` may describe how the allowance at an index was made up;
    ``locate(index) -> str`` may say more about where an index lies (for packed
    sequences: which sequence and position), appended to each index in the report.
    """
    metrics = measure(got, expected, allowed)
    if metrics.exceeding == 0:
        return metrics
    index = metrics.worst_index
    lines = [
        f"{name} differs from {what}",
        f"Mismatched elements: {metrics.exceeding} / {metrics.total} "
        f"({100.0 * metrics.exceeding / metrics.total:.3g}%) exceed the allowed error",
        f"Worst element {format_index(name, index, locate)}: got {_value(got, index)}, "
        f"expected {_value(expected, index)}",
        f"  error {metrics.worst_error:.3e} > allowed {metrics.worst_allowed:.3e} "
        f"(error/allowed = {metrics.worst_ratio:.3g})",
    ]
    if explain is not None:
        lines.append(f"  allowed here = {explain(index)}")
    lines.append(
        f"Greatest absolute difference: {metrics.max_abs:.3e} at {format_index(name, metrics.max_abs_index, locate)}"
    )
    lines.append(
        f"Greatest relative difference: {metrics.max_rel:.3e} at {format_index(name, metrics.max_rel_index, locate)}"
    )
    raise Violation("\n".join(lines))


def check_equal(name, got, expected, *, what, where=None) -> None:
    """Raise :class:`Violation` unless ``got`` and ``expected`` hold the same values:
    bitwise equal, except that +0 equals -0. ``where``, a boolean mask, limits the check."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise Violation(
            f"{name} differs from {what}: shape/dtype {tuple(got.shape)}/{got.dtype} "
            f"vs {tuple(expected.shape)}/{expected.dtype}"
        )
    differ = ~(bitwise_equal(got, expected) | (got == expected.to(got.device)))
    if where is not None:
        differ &= where.to(differ.device)
    if not differ.any():
        return
    index = _unravel(int(torch.argmax(differ.to(torch.uint8))), differ.shape)
    raise Violation(
        f"{name} is not exactly equal to {what}\n"
        f"Differing elements: {int(differ.sum())} / {differ.numel()}\n"
        f"First at {format_index(name, index)}: got {_value(got, index)}, expected {_value(expected, index)}"
    )


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise: the two tensors hold the same bits (NaN equals NaN of the same bits)."""
    a, b = a.detach().contiguous(), b.detach().to(a.device).contiguous()
    if a.dtype.is_floating_point and a.element_size() in (2, 4, 8):
        ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return a.view(ints) == b.view(ints)
    return a == b


def format_index(name: str, index, locate=None) -> str:
    """``index`` of output ``name`` with its dimension names; ``locate(index) -> str``, when
    given, adds where it lies (for packed sequences: the sequence and position)."""
    if index is None:
        return "()"
    names = next((n for n in INDEX_NAMES.get(name, ()) if len(n) == len(index)), None)
    text = str(tuple(index)) if names is None else "(" + ", ".join(f"{n}={i}" for n, i in zip(names, index)) + ")"
    return text if locate is None else f"{text} [{locate(index)}]"


def _value(tensor: torch.Tensor, index) -> str:
    return f"{float(tensor[index]):.6g}"


def _unravel(flat: int, shape) -> tuple:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))
