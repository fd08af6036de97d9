"""The values of a case an implementation runs: its declared case domain.

Features (:mod:`flashcheck.protocol`) say which *kinds* of case an implementation supports
(causal, GQA, packed, a dtype). Many kernels also restrict the *values*: FlashAttention-4 on
an H100 runs head dims that are multiples of 8 up to 256, FlagGems' flash kernel a list of
seven head dims, some kernels only equal query and key lengths or lengths that are a
multiple of a block. An implementation declares those as ``flashcheck_case_domain``, a
mapping of the keys in :data:`KEYS` (or ``flashcheck_case_domain_by_device``, a mapping from
device kind to such a mapping, like the features), and the strategies then draw cases inside
it (all but one in :data:`flashcheck.cases.strategies.OUTSIDE_DOMAIN_ODDS`, which checks that the
implementation still declines what lies outside). A decline of a case inside the declared
domain is the declaration being wrong, and every summary shows it.

"Lengths" are a dense case's ``seqlen_q`` and ``seqlen_k``, and each packed sequence's own
pair: what a kernel's ``max_seqlen`` and its tiles see.

Imports neither torch nor hypothesis.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

#: The largest head dim the protocol asks a kernel to run; a domain must allow one at or below it.
PROTOCOL_MAX_HEAD_DIM = 256

#: The case layouts (:data:`flashcheck.cases.case.LAYOUTS`; repeated here so that this module imports no torch).
_LAYOUTS = ("contiguous", "heads-first", "padded", "mixed")
#: The dtype names (:data:`flashcheck.protocol.DTYPE_NAMES`, repeated for the same reason).
_DTYPES = ("float16", "bfloat16", "float32")

#: The keys a declared domain may have, each with what it expects.
KEYS = {
    "head_dims": "a non-empty collection of head dims (positive ints) the kernel runs, exactly",
    "head_dim_multiple": "a positive int: head dims must be multiples of it",
    "min_head_dim": "a positive int: the smallest head dim",
    "max_head_dim": "a positive int: the largest head dim",
    "max_head_dim_by_dtype": f"a mapping from dtypes {_DTYPES} to positive ints: the largest head dim in that dtype",
    "equal_lengths": "True or False: query and key lengths equal",
    "causal_equal_lengths": "True or False: a causal case's query and key lengths equal (a causal mask aligned "
                            "at the top left, where the protocol's is at the bottom right)",
    "length_multiple": "a positive int: every length a multiple of it",
    "min_seqlen_q": "a positive int: the shortest query length",
    "min_seqlen_k": "a positive int: the shortest key length",
    "max_seqlen": "a positive int: the longest length",
    "positive_scale": "True or False: only a positive softmax_scale (or the default)",
    "layouts": f"a non-empty collection of layouts from {_LAYOUTS}",
}


@dataclasses.dataclass(frozen=True)
class CaseDomain:
    """A declared case domain (module docstring); the default allows every case."""

    head_dims: frozenset[int] | None = None
    head_dim_multiple: int = 1
    min_head_dim: int = 1
    max_head_dim: int | None = None
    #: ``(dtype, largest head dim)`` pairs, sorted: a mapping kept hashable.
    max_head_dim_by_dtype: tuple[tuple[str, int], ...] = ()
    equal_lengths: bool = False
    causal_equal_lengths: bool = False
    length_multiple: int = 1
    min_seqlen_q: int = 0
    min_seqlen_k: int = 0
    max_seqlen: int | None = None
    positive_scale: bool = False
    layouts: frozenset[str] | None = None

    @property
    def restricts(self) -> bool:
        """Whether the domain excludes any case (False for the default)."""
        return self != CaseDomain()

    @property
    def restricts_lengths(self) -> bool:
        """Whether the domain excludes any pair of lengths (:meth:`lengths_outside_because`)."""
        return any(getattr(self, name) != getattr(_ANY_CASE, name) for name in _LENGTH_FIELDS)

    def allows_head_dim(self, head_dim: int, dtype: str | None = None) -> bool:
        """Whether the domain allows ``head_dim``; in ``dtype`` where one is given, in some dtype
        where none is."""
        cap = dict(self.max_head_dim_by_dtype).get(dtype) if dtype is not None else None
        return ((self.head_dims is None or head_dim in self.head_dims)
                and head_dim % self.head_dim_multiple == 0 and head_dim >= self.min_head_dim
                and (self.max_head_dim is None or head_dim <= self.max_head_dim)
                and (cap is None or head_dim <= cap))

    def head_dims_up_to(self, limit: int, dtype: str | None = None) -> tuple[int, ...]:
        """The head dims in ``[1, limit]`` the domain allows (in ``dtype``, where given), ascending."""
        return tuple(d for d in range(1, limit + 1) if self.allows_head_dim(d, dtype))

    def no_head_dim_up_to(self, limit: int) -> str | None:
        """Why no case can be drawn inside the domain where head dims go up to ``limit``, or None."""
        if self.head_dims_up_to(limit):
            return None
        return f"{self.describe_head_dims()} allows no head dim up to {limit}"

    def allows_length(self, length: int) -> bool:
        return length % self.length_multiple == 0 and (self.max_seqlen is None or length <= self.max_seqlen)

    def outside_because(self, case) -> str | None:
        """Why ``case`` (a :class:`flashcheck.cases.case.Case`) lies outside the domain, or None
        when it lies inside."""
        if not self.allows_head_dim(case.head_dim, case.dtype):
            return f"head dim {case.head_dim} in {case.dtype} is outside {self.describe_head_dims()}"
        pairs = case.seqlens if case.varlen else ((case.seqlen_q, case.seqlen_k),)
        for nq, nk in pairs:
            why = self.lengths_outside_because(nq, nk, causal=case.causal)
            if why is not None:
                return why
        if self.positive_scale and case.softmax_scale is not None and case.softmax_scale <= 0:
            return f"softmax_scale {case.softmax_scale} is not positive"
        if self.layouts is not None and case.layout not in self.layouts:
            return f"layout {case.layout} is not one of {', '.join(sorted(self.layouts))}"
        return None

    def lengths_outside_because(self, nq: int, nk: int, *, causal: bool = False) -> str | None:
        """Why a call of ``nq`` queries and ``nk`` keys (causal or not) lies outside the domain's
        lengths, or None when it lies inside."""
        if self.equal_lengths and nq != nk:
            return f"lengths {nq} and {nk} differ, and the domain has equal lengths"
        if self.causal_equal_lengths and causal and nq != nk:
            return f"causal lengths {nq} and {nk} differ, and the domain has causal equal lengths"
        for length in (nq, nk):
            if not self.allows_length(length):
                return f"length {length} is outside {self.describe_lengths()}"
        if nq < self.min_seqlen_q:
            return f"query length {nq} is below {self.min_seqlen_q}"
        if nk < self.min_seqlen_k:
            return f"key length {nk} is below {self.min_seqlen_k}"
        return None

    def describe_head_dims(self) -> str:
        parts = []
        if self.head_dims is not None:
            parts.append("head dims " + ", ".join(map(str, sorted(self.head_dims))))
        if self.head_dim_multiple > 1:
            parts.append(f"head dims multiple of {self.head_dim_multiple}")
        if self.min_head_dim > 1 and self.max_head_dim is not None:
            parts.append(f"head dims {self.min_head_dim} to {self.max_head_dim}")
        elif self.min_head_dim > 1:
            parts.append(f"head dims from {self.min_head_dim}")
        elif self.max_head_dim is not None:
            parts.append(f"head dims up to {self.max_head_dim}")
        parts.extend(f"{dtype} head dims up to {cap}" for dtype, cap in self.max_head_dim_by_dtype)
        return "; ".join(parts) or "any head dim"

    def describe_lengths(self) -> str:
        parts = []
        if self.equal_lengths:
            parts.append("equal lengths")
        if self.causal_equal_lengths:
            parts.append("causal lengths equal")
        if self.length_multiple > 1:
            parts.append(f"lengths multiple of {self.length_multiple}")
        if self.max_seqlen is not None:
            parts.append(f"lengths up to {self.max_seqlen}")
        if self.min_seqlen_q:
            parts.append(f"query lengths from {self.min_seqlen_q}")
        if self.min_seqlen_k:
            parts.append(f"key lengths from {self.min_seqlen_k}")
        return "; ".join(parts) or "any length"

    def describe(self) -> str:
        """One line, as the summaries print it: ``"any case"`` for the default."""
        if not self.restricts:
            return "any case"
        parts = [text for text in (self.describe_head_dims(), self.describe_lengths())
                 if text not in ("any head dim", "any length")]
        if self.positive_scale:
            parts.append("positive softmax_scale")
        if self.layouts is not None:
            parts.append("layouts " + ", ".join(sorted(self.layouts)))
        return "; ".join(parts)

    def as_dict(self) -> dict:
        """The declared keys only, JSON-ready (sorted collections)."""
        default = CaseDomain()
        out = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value == getattr(default, field.name):
                continue
            if field.name == "max_head_dim_by_dtype":
                out[field.name] = dict(value)
            else:
                out[field.name] = sorted(value) if isinstance(value, frozenset) else value
        return out


#: The domain that allows every case, and the fields that restrict lengths.
_ANY_CASE = CaseDomain()
_LENGTH_FIELDS = ("equal_lengths", "causal_equal_lengths", "length_multiple", "min_seqlen_q", "min_seqlen_k",
                  "max_seqlen")


def parse(declared, attribute: str = "flashcheck_case_domain") -> CaseDomain:
    """``declared`` (a mapping of :data:`KEYS`) as a :class:`CaseDomain`. ValueError, one line
    naming ``attribute``, the key and what was expected, for anything else: not a mapping, an
    unknown key, a value of the wrong type, or a domain that allows no head dim up to
    :data:`PROTOCOL_MAX_HEAD_DIM`."""
    if not isinstance(declared, Mapping):
        raise ValueError(f"{attribute} must be a mapping of {', '.join(KEYS)}; got {type(declared).__name__} "
                         f"{declared!r}")
    fields = {}
    for key, value in declared.items():
        if key not in KEYS:
            raise ValueError(f"{attribute} has the unknown key {key!r}; expected keys: {', '.join(KEYS)}")
        fields[key] = _value(attribute, key, value)
    domain = CaseDomain(**fields)
    if not domain.head_dims_up_to(PROTOCOL_MAX_HEAD_DIM):
        raise ValueError(f"{attribute} allows no head dim from 1 to {PROTOCOL_MAX_HEAD_DIM} "
                         f"({domain.describe_head_dims()}): an empty domain")
    for dtype, _ in domain.max_head_dim_by_dtype:
        if not domain.head_dims_up_to(PROTOCOL_MAX_HEAD_DIM, dtype):
            raise ValueError(f"{attribute}['max_head_dim_by_dtype'] leaves {dtype} no head dim from 1 to "
                             f"{PROTOCOL_MAX_HEAD_DIM} ({domain.describe_head_dims()}): an empty domain in {dtype}")
    if domain.max_seqlen is not None:
        for key in ("length_multiple", "min_seqlen_q", "min_seqlen_k"):
            if domain.max_seqlen < getattr(domain, key):
                raise ValueError(f"{attribute}['max_seqlen'] = {domain.max_seqlen} is below {key} = "
                                 f"{getattr(domain, key)}: an empty domain")
    return domain


def _value(attribute: str, key: str, value):
    where = f"{attribute}[{key!r}]"
    expected = KEYS[key]
    if key in ("equal_lengths", "causal_equal_lengths", "positive_scale"):
        if not isinstance(value, bool):
            raise ValueError(f"{where} must be {expected}; got {value!r}")
        return value
    if key == "head_dims":
        if isinstance(value, (str, bytes)) or not isinstance(value, Collection) or not value:
            raise ValueError(f"{where} must be {expected}; got {value!r}")
        for item in value:
            _positive_int(where, expected, item)
        return frozenset(value)
    if key == "max_head_dim_by_dtype":
        if not isinstance(value, Mapping) or not value:
            raise ValueError(f"{where} must be {expected}; got {value!r}")
        unknown = sorted(str(dtype) for dtype in value if dtype not in _DTYPES)
        if unknown:
            raise ValueError(f"{where} names unknown dtypes {', '.join(map(repr, unknown))}; expected {expected}")
        return tuple(sorted((dtype, _positive_int(f"{where}[{dtype!r}]", "a positive int", cap))
                            for dtype, cap in value.items()))
    if key == "layouts":
        if isinstance(value, (str, bytes)) or not isinstance(value, Collection) or not value:
            raise ValueError(f"{where} must be {expected}; got {value!r}")
        unknown = sorted(str(v) for v in value if v not in _LAYOUTS)
        if unknown:
            raise ValueError(f"{where} names unknown layouts {', '.join(map(repr, unknown))}; expected {expected}")
        return frozenset(value)
    return _positive_int(where, expected, value)


def _positive_int(where: str, expected: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{where} must be {expected}; got {value!r}")
    return value
