"""Comparing an output with its expectation, and the failure that carries the evidence.

:func:`check_close` compares elementwise against an allowed absolute error and raises
:class:`Violation` with a report in the style of ``torch.testing.assert_close``:
how many elements exceed, the worst one (by error over allowed) with its named index,
observed and allowed error, how the allowance was made up, the greatest absolute and
relative differences (:func:`flashcheck.engine.verdict.decide` completes it with the
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


def replay_command(impl_name: str, property_name: str, case_spec: str, case_timeout: float | None = None) -> str:
    """The one command line that replays ``property_name`` for ``impl_name`` on one case;
    with ``case_timeout``, in a worker process watched with that per-case timeout, as the fuzz
    run that found a hang or a crash watched it (``flashcheck check --case-timeout``)."""
    command = (f"flashcheck check --impl {shlex.quote(impl_name)} --property {property_name} "
               f"--case {shlex.quote(case_spec)}")
    if case_timeout is not None:
        command += f" --case-timeout {_seconds(case_timeout)}"
    return command


def _seconds(value: float) -> str:
    """``value`` written short (``2``, ``0.5``), and as it is where short would round it."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


class Violation(AssertionError):
    """What a property's check raises when its invariant does not hold: ``evidence``, the
    human-readable report. The check knows neither the implementation's name nor which
    property or case it is run as: :func:`flashcheck.engine.verdict.decide` builds the complete
    :class:`PropertyFailure` from it."""

    def __init__(self, evidence: str):
        super().__init__(evidence)
        self.evidence = evidence


class PropertyFailure(AssertionError):
    """A property does not hold for an implementation on a case: complete where it is built.

    ``evidence`` is the human-readable report; ``property_name``, ``case`` (a
    :class:`~flashcheck.cases.case.Case`) and ``impl_name`` (a built-in name or ``module:attr``)
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
    bitwise equal, except that +0 equals -0. ``where``, a boolean mask, limits the check.

    Values that differ in their last bits print alike, so the report gives the first
    differing element's bit patterns in hex and the distance between them in units in the
    last place (:func:`ulp_distance`), and the largest such distance among the differing
    elements."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise Violation(
            f"{name} differs from {what}: shape/dtype {tuple(got.shape)}/{got.dtype} "
            f"vs {tuple(expected.shape)}/{expected.dtype}"
        )
    expected = expected.to(got.device)
    differ = ~(bitwise_equal(got, expected) | (got == expected))
    if where is not None:
        differ &= where.to(differ.device)
    if not differ.any():
        return
    index = _unravel(int(torch.argmax(differ.to(torch.uint8))), differ.shape)
    lines = [
        f"{name} is not exactly equal to {what}",
        f"Differing elements: {int(differ.sum())} / {differ.numel()}",
        f"First at {format_index(name, index)}: got {_value(got, index)}{_bits(got, index)}, "
        f"expected {_value(expected, index)}{_bits(expected, index)}{_apart(got, expected, index)}",
    ]
    distances = ulp_distance(got, expected)
    if distances is not None:
        distances = torch.where(differ, distances, torch.zeros_like(distances))
        if int(distances.max()) > 0:
            farthest = _unravel(int(torch.argmax(distances)), differ.shape)
            lines.append(f"Greatest distance: {int(distances[farthest])} ulp at {format_index(name, farthest)}")
    raise Violation("\n".join(lines))


def _float_bits(tensor: torch.Tensor) -> torch.Tensor | None:
    """The bit patterns of a float16, bfloat16, float32 or float64 tensor as signed
    integers of its width (None for other dtypes)."""
    if not tensor.dtype.is_floating_point or tensor.element_size() not in (2, 4, 8):
        return None
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.detach().contiguous().view(ints)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor | None:
    """Elementwise, how many representable numbers of their (common) floating dtype lie
    between ``a`` and ``b`` plus one: 0 for equal values (+0 and -0 included), 1 for
    neighbours, across zero as well. ``-1`` where either is NaN; None for dtypes without a
    float bit layout. Infinity counts as the number after the largest finite one."""
    bits_a, bits_b = _float_bits(a), _float_bits(b.to(a.device))
    if bits_a is None or bits_b is None or a.dtype != b.dtype:
        return None
    ordered_a, ordered_b = _ordered(bits_a), _ordered(bits_b)
    if a.element_size() == 8:  # the difference of two int64 keys can overflow: float64 is close enough here
        distance = (ordered_a.double() - ordered_b.double()).abs().clamp(max=2.0**62).long()
    else:
        distance = (ordered_a - ordered_b).abs()
    nan = torch.isnan(a.detach()) | torch.isnan(b.detach().to(a.device))
    return torch.where(nan, torch.full_like(distance, -1), distance)


def _ordered(bits: torch.Tensor) -> torch.Tensor:
    """Sign-magnitude float bits as int64 keys whose order and differences are those of the
    floats on their grid: ``m`` for a positive number of magnitude bits ``m``, ``-m`` for a
    negative one (so +0 and -0 both map to 0)."""
    width = bits.element_size() * 8
    wide = bits.long()
    if width < 64:
        magnitude = wide & ((1 << (width - 1)) - 1)
    else:
        magnitude = wide & 0x7FFF_FFFF_FFFF_FFFF
    return torch.where(wide < 0, -magnitude, magnitude)


def _bits(tensor: torch.Tensor, index) -> str:
    """`` (0x…)``: the element's bit pattern in hex, or nothing for a dtype without one."""
    bits = _float_bits(tensor)
    if bits is None:
        return ""
    digits = tensor.element_size() * 2
    return f" (0x{int(bits[index]) & ((1 << (digits * 4)) - 1):0{digits}x})"


def _apart(got: torch.Tensor, expected: torch.Tensor, index) -> str:
    """``: N ulp apart`` for two float elements, nothing where either is NaN or the dtype
    has no float bit layout."""
    distances = ulp_distance(got[index].reshape(1), expected[index].reshape(1))
    if distances is None or int(distances[0]) < 0:
        return ""
    return f": {int(distances[0])} ulp apart"


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
