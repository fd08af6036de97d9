"""A :class:`Case` is the complete description of one attention problem.

It holds structure only (shapes, dtype, mask, scale, memory layout, value distribution
and a seed); :meth:`Case.materialize` turns it into tensors. Tensors are drawn on the CPU
from a generator seeded by ``seed`` and then moved, so the same case gives bitwise the same
inputs on every device and in every process. :meth:`Case.spec` prints the case as one
line that :meth:`Case.from_spec` parses back, which is what reproduction commands carry.

Two modes beyond a plain dense batch:

- a boolean ``attn_mask`` (field ``mask``, a :class:`~flashcheck.cases.maskspec.MaskSpec`, in a
  spec e.g. ``mask=random:0.3,rows:1,shape:B1QK``), drawn from its own generator seeded by
  ``seed`` so that q, k and v are those of the same case without a mask;
- packed variable-length sequences (field ``seqlens``, per-sequence ``(nq, nk)`` pairs, in a
  spec e.g. ``seqlens=3:5/0:2/1:1``): q is ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)``; the case
  then has ``batch=1``, ``seqlen_q=Tq`` and ``seqlen_k=Tk`` (:meth:`Case.packed` fills them
  in), which is also how the reference sees it: a batch of one under the document mask.

The tensors an implementation receives besides q, k, v (``attn_mask``, ``cu_seqlens_*``,
``max_seqlen_*``) come from :meth:`Case.attention_kwargs` with a device.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
from typing import NamedTuple

import torch

from flashcheck.cases import masks, phases as case_phases
from flashcheck.cases.maskspec import MaskSpec

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}

#: How q, k and v sit in memory. ``contiguous``: (B, N, H, D) dense. ``heads-first``: stored
#: (B, H, N, D) and viewed as (B, N, H, D), so the sequence stride exceeds the head stride.
#: ``padded``: a view into a larger buffer padded on every dimension with NaN, so that any
#: read outside the view poisons the result. ``mixed``: q heads-first, k padded and v padded
#: by other amounts (:data:`MIXED_LAYOUTS`), so that the three never share a sequence or head
#: stride, whatever the shapes: a kernel that addresses one tensor with another's strides
#: reads the wrong elements (in every other layout k and v, of equal shapes, have equal
#: strides, and such a bug cannot show).
LAYOUTS = ("contiguous", "heads-first", "padded", "mixed")

#: The layouts of q, k and v in the ``mixed`` layout; ``padded-wide`` is ``padded`` with
#: wider pads, used there only.
MIXED_LAYOUTS = ("heads-first", "padded", "padded-wide")

#: Pads (batch, sequence, head, head dim) of the padded layouts, before and after the view.
_PADS = {"padded": ((1, 0), (2, 1), (1, 1), (3, 2)), "padded-wide": ((1, 1), (3, 2), (2, 1), (4, 3))}

#: Value distributions. ``normal``: N(0, 1). ``small``: N(0, 1e-2), tiny logits, near-uniform
#: attention. ``large-logits``: logits of several hundred, which overflow ``exp`` unless the
#: row maximum is subtracted. ``offset-logits``: every logit shifted by about -2e4, which
#: underflows a kernel that starts its running maximum at a finite sentinel. ``near-ties``:
#: keys equal up to tiny noise, so scores nearly tie. ``constant``: every key and every value
#: of a head equal, so attention is uniform and the output equals that value. ``outliers``:
#: normal with a few entries a hundred times larger. ``offset-values``: keys and values share
#: large components ("massive activations"): q × 4, k + 256 (which leaves the softmax as it
#: is but makes ‖K‖ large) and v × 4 + 1500, so that an output's rounding error times the
#: values' common offset reaches every dS of its row through ``delta = dO·O``, and K
#: amplifies it in dQ.
VALUES = ("normal", "small", "large-logits", "offset-logits", "near-ties", "constant", "outliers", "offset-values")


class Inputs(NamedTuple):
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


@dataclasses.dataclass(frozen=True)
class Case:
    """One dense attention problem: q ``(batch, seqlen_q, heads, head_dim)``, k and v
    ``(batch, seqlen_k, kv_heads, head_dim)``, with the protocol's mask arguments."""

    batch: int = 1
    seqlen_q: int = 16
    seqlen_k: int = 16
    heads: int = 1
    kv_heads: int = 1
    head_dim: int = 16
    dtype: str = "float16"
    causal: bool = False
    window: tuple[int, int] = (-1, -1)
    softmax_scale: float | None = None
    layout: str = "contiguous"
    values: str = "normal"
    seed: int = 0
    mask: MaskSpec = MaskSpec()
    seqlens: tuple[tuple[int, int], ...] | None = None

    @classmethod
    def packed(cls, seqlens, **fields) -> "Case":
        """A varlen case of per-sequence ``(nq, nk)`` lengths, batch and totals filled in."""
        seqlens = _check_seqlens(seqlens)
        return cls(batch=1, seqlen_q=sum(n for n, _ in seqlens), seqlen_k=sum(n for _, n in seqlens),
                   seqlens=seqlens, **fields)

    def __post_init__(self):
        for name in ("batch", "seqlen_q", "seqlen_k", "heads", "kv_heads", "head_dim"):
            value = getattr(self, name)
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or value < (1 if name in ("heads", "kv_heads", "head_dim") else 0)
            ):
                raise ValueError(f"{name}: expected a non-negative int (positive for heads and head_dim), got {value!r}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads: must be a multiple of kv_heads={self.kv_heads}, got {self.heads}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype: expected one of {sorted(DTYPES)}, got {self.dtype!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {self.layout!r}")
        if self.values not in VALUES:
            raise ValueError(f"values: expected one of {VALUES}, got {self.values!r}")
        if not isinstance(self.causal, bool):
            raise TypeError(f"causal: expected a bool, got {self.causal!r}")
        if self.softmax_scale is not None and (
            isinstance(self.softmax_scale, bool)
            or not isinstance(self.softmax_scale, numbers.Real)
            or not math.isfinite(self.softmax_scale)
        ):
            raise ValueError(f"softmax_scale: expected None or a finite real number, got {self.softmax_scale!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**64:
            raise ValueError(f"seed: expected an int in [0, 2**64), got {self.seed!r}")
        masks.validate_window(self.window)
        object.__setattr__(self, "window", tuple(self.window))
        masks.effective_window(self.causal, self.window)
        if isinstance(self.mask, str):
            object.__setattr__(self, "mask", MaskSpec.parse(self.mask))
        if not isinstance(self.mask, MaskSpec):
            raise TypeError(f"mask: expected a MaskSpec or its one-line text, got {self.mask!r}")
        self.mask.validate(self.batch, self.seqlen_q, self.seqlen_k)
        if self.seqlens is not None:
            object.__setattr__(self, "seqlens", _check_seqlens(self.seqlens))
            if not self.mask.is_none:
                raise ValueError("mask: the protocol's attn_mask is dense only; a case with seqlens has mask=none")
            totals = {"batch": 1, "seqlen_q": sum(n for n, _ in self.seqlens),
                      "seqlen_k": sum(n for _, n in self.seqlens)}
            for name, expected in totals.items():
                if getattr(self, name) != expected:
                    raise ValueError(
                        f"{name}: a packed case (seqlens) is a batch of one with seqlen_q, seqlen_k the token "
                        f"totals, so {name} must be {expected}, got {getattr(self, name)} (Case.packed fills them in)"
                    )

    # -- derived quantities -------------------------------------------------------------
    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def scale(self) -> float:
        """The softmax scale in effect: ``softmax_scale`` or ``1/sqrt(head_dim)``."""
        return self.softmax_scale if self.softmax_scale is not None else 1.0 / math.sqrt(self.head_dim)

    @property
    def band(self) -> tuple[int, int]:
        """``(left, right)`` of the allowed band, -1 unbounded (causal folded in)."""
        return masks.effective_window(self.causal, self.window)

    @property
    def varlen(self) -> bool:
        """True for packed variable-length sequences (q ``(Tq, H, D)``)."""
        return self.seqlens is not None

    @property
    def features_needed(self) -> frozenset:
        """The protocol features an implementation must declare to be called with this case,
        its dtype aside: ``causal``, ``window``, ``gqa``, ``mask``, ``varlen``."""
        needed = {"causal"} if self.causal else set()
        needed |= {"window"} if tuple(self.window) != (-1, -1) else set()
        needed |= {"gqa"} if self.kv_heads < self.heads else set()
        needed |= {"mask"} if not self.mask.is_none else set()
        needed |= {"varlen"} if self.varlen else set()
        return frozenset(needed)

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.varlen:
            return (self.seqlen_q, self.heads, self.head_dim)
        return (self.batch, self.seqlen_q, self.heads, self.head_dim)

    @property
    def lse_shape(self) -> tuple[int, ...]:
        return (self.heads, self.seqlen_q) if self.varlen else (self.batch, self.heads, self.seqlen_q)

    def cu_seqlens(self, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """int32 cumulative offsets ``(S + 1,)`` of the queries and the keys (varlen only)."""
        if not self.varlen:
            raise ValueError("seqlens: cu_seqlens exist only for a packed case")
        return tuple(
            torch.tensor([0, *itertools.accumulate(pair[side] for pair in self.seqlens)], dtype=torch.int32,
                         device=device)
            for side in (0, 1)
        )

    def attn_mask(self, device="cpu") -> torch.Tensor | None:
        """The case's boolean attn_mask (True = attend), drawn from ``seed``; None without one."""
        if self.mask.is_none:
            return None
        # A generator of its own, so that q, k and v stay those of the same case unmasked.
        generator = torch.Generator().manual_seed((self.seed * 0x9E3779B97F4A7C15 + 1) % 2**64)
        return self.mask.draw(self.batch, self.heads, self.seqlen_q, self.seqlen_k, generator).to(device)

    def allowed(self, device="cpu") -> torch.Tensor:
        """Boolean ``(B|1, H|1, Nq, Nk)``: which keys each query may attend (band AND mask;
        for a packed case the document mask over the packed tokens, a batch of one)."""
        return masks.allowed(self.seqlen_q, self.seqlen_k, device=device,
                             **self._mask_kwargs(device))

    def _mask_kwargs(self, device) -> dict:
        kwargs = {"causal": self.causal, "window": self.window, "attn_mask": self.attn_mask(device)}
        if self.varlen:
            kwargs["cu_seqlens_q"], kwargs["cu_seqlens_k"] = self.cu_seqlens(device)
        return kwargs

    def keys_per_row(self) -> torch.Tensor:
        """Keys each query may attend: int64 ``(B|1, H|1, Nq)`` (a batch of one when packed)."""
        if self.mask.is_none and not self.varlen:
            return masks.keys_per_row(self.seqlen_q, self.seqlen_k, *self.band)[None, None]
        return self.allowed().sum(dim=-1)

    @property
    def is_masked(self) -> bool:
        """True when some query may not attend some key."""
        if self.mask.is_none and not self.varlen:
            left, right = self.band
            return (left != -1 and left < self.seqlen_k + self.seqlen_q) or (
                right != -1 and right < self.seqlen_k + self.seqlen_q
            )
        return not bool(self.allowed().all())

    @property
    def has_empty_rows(self) -> bool:
        """True when some query has no allowed key (its output is 0 and its lse -inf)."""
        return self.seqlen_q > 0 and bool((self.keys_per_row() == 0).any())

    def attention_kwargs(self, device="cpu") -> dict:
        """The protocol keyword arguments this case passes to an implementation, tensors
        (attn_mask, cu_seqlens_*) on ``device``."""
        kwargs = {"causal": self.causal, "window": self.window, "softmax_scale": self.softmax_scale}
        if not self.mask.is_none:
            kwargs["attn_mask"] = self.attn_mask(device)
        if self.varlen:
            kwargs["cu_seqlens_q"], kwargs["cu_seqlens_k"] = self.cu_seqlens(device)
            kwargs["max_seqlen_q"] = max(n for n, _ in self.seqlens)
            kwargs["max_seqlen_k"] = max(n for _, n in self.seqlens)
        return kwargs

    def replace(self, **changes) -> "Case":
        return dataclasses.replace(self, **changes)

    # -- one-line form --------------------------------------------------------------------
    def spec(self) -> str:
        """One line, ``key=value`` pairs separated by spaces, that :meth:`from_spec` parses."""
        parts = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name in ("mask", "seqlens") and value == field.default:
                continue  # printed only when set, so that dense specs read as they always have
            if field.name == "seqlens":
                value = "/".join(f"{nq}:{nk}" for nq, nk in value)
            elif field.name == "window":
                value = f"{value[0]},{value[1]}"
            elif field.name == "softmax_scale" and value is not None:
                value = repr(float(value))
            parts.append(f"{field.name}={value}")
        return " ".join(parts)

    @classmethod
    def from_spec(cls, text: str) -> "Case":
        """Parse the output of :meth:`spec`; fields left out take their defaults."""
        kinds = {field.name: field.type for field in dataclasses.fields(cls)}
        values = {}
        for item in text.split():
            key, sep, raw = item.partition("=")
            if not sep or key not in kinds:
                raise ValueError(f"case spec: unknown or malformed item {item!r}; known keys: {sorted(kinds)}")
            try:
                values[key] = _parse_field(key, raw)
            except ValueError as error:
                raise ValueError(f"case spec: bad value {raw!r} for {key}: {error}") from None
        return cls(**values)

    # -- tensors ----------------------------------------------------------------------------
    def materialize(self, device="cpu") -> Inputs:
        """Make q, k and v for this case on ``device``, bitwise reproducible from ``seed``.

        Packed cases draw exactly the values of the dense batch of one with the same totals
        and lay them out as ``(T, H, D)``.
        """
        with case_phases.phase("inputs"):
            return self._materialize(device)

    def _materialize(self, device) -> Inputs:
        generator = torch.Generator().manual_seed(self.seed)
        q_shape = (self.batch, self.seqlen_q, self.heads, self.head_dim)
        kv_shape = (self.batch, self.seqlen_k, self.kv_heads, self.head_dim)
        q, k, v = _draw_values(self.values, q_shape, kv_shape, self.scale, generator)
        layouts = MIXED_LAYOUTS if self.layout == "mixed" else (self.layout,) * 3
        if self.varlen:
            return Inputs(*(_lay_out_packed(layout, t[0].to(self.torch_dtype), device)
                            for layout, t in zip(layouts, (q, k, v))))
        return Inputs(*(_lay_out(layout, t.to(self.torch_dtype), device) for layout, t in zip(layouts, (q, k, v))))


def other_layout(case: Case, allowed=None) -> str:
    """The layout ``layout_invariance`` compares ``case``'s own with: contiguous for any other,
    padded for a contiguous case; where the implementation's declared domain leaves that out
    (``allowed``: its layouts, None for all), the first of padded, heads-first and contiguous it
    allows beside the case's own."""
    preferred = "contiguous" if case.layout != "contiguous" else "padded"
    if allowed is None or preferred in allowed:
        return preferred
    return next((layout for layout in ("padded", "heads-first", "contiguous")
                 if layout in allowed and layout != case.layout), preferred)


def one_sequence(case: Case, nq: int, nk: int) -> Case:
    """The dense batch of one that sequence ``(nq, nk)`` of packed ``case`` is, as
    ``varlen_matches_separate_calls`` calls it alone."""
    return case.replace(seqlens=None, batch=1, seqlen_q=nq, seqlen_k=nk)


def one_group_kept(case: Case, device) -> tuple:
    """``batch_head_independence``'s two calls' inputs: ``(inputs, other, b, g, heads)``,
    ``inputs`` the case's, ``other`` fresh values (another seed) but for batch entry ``b``'s KV
    head ``g`` and its query heads ``heads`` (a slice), kept from ``inputs``. The one place that
    makes them, for the property and for the predicates that read its second call's inputs."""
    inputs = case.materialize(device)
    other = case.replace(seed=(case.seed + 7919) % 2**32).materialize(device)
    b = case.seed % case.batch
    g = (case.seed // max(case.batch, 1)) % case.kv_heads
    group = case.heads // case.kv_heads
    heads = slice(g * group, (g + 1) * group)
    dense = (lambda t: t.unsqueeze(0)) if case.varlen else (lambda t: t)  # packed: a batch of one (a view)
    with torch.no_grad():  # through the views, writing the packed tensors
        dense(other.q)[b, :, heads] = dense(inputs.q)[b, :, heads]
        dense(other.k)[b, :, g] = dense(inputs.k)[b, :, g]
        dense(other.v)[b, :, g] = dense(inputs.v)[b, :, g]
    return inputs, other, b, g, heads


def _lay_out(layout: str, tensor: torch.Tensor, device) -> torch.Tensor:
    """(B, N, H, D) in ``layout`` (one of :data:`LAYOUTS` but ``mixed``, or of :data:`MIXED_LAYOUTS`)."""
    if layout == "contiguous":
        return tensor.to(device)
    if layout == "heads-first":
        return tensor.transpose(1, 2).contiguous().to(device).transpose(1, 2)
    # padded: a view into a NaN-filled buffer; the pads differ per dimension so that a
    # kernel mixing up strides reads NaN.
    return _padded_view(tensor, _PADS[layout], device)


#: NaN tokens after the last packed token in the padded varlen layout: at least one tile of
#: the largest block size a kernel uses (128), so that reading past the last sequence by up
#: to a block reads NaN, not whatever memory follows.
TRAILING_TOKENS = 128


def _lay_out_packed(layout: str, tensor: torch.Tensor, device) -> torch.Tensor:
    """(T, H, D) in ``layout``: contiguous; heads-first (stored (H, T, D)); padded or
    padded-wide (a view into a NaN buffer, NaN around it and for :data:`TRAILING_TOKENS`
    tokens after it)."""
    if layout == "contiguous":
        return tensor.to(device)
    if layout == "heads-first":
        return tensor.transpose(0, 1).contiguous().to(device).transpose(0, 1)
    _, (before_tokens, _), *pads = _PADS[layout]  # no batch; NaN tokens after the last one
    return _padded_view(tensor, ((before_tokens, TRAILING_TOKENS), *pads), device)


def _padded_view(tensor: torch.Tensor, pads, device) -> torch.Tensor:
    """``tensor`` on ``device`` as a view into a NaN buffer with ``(before, after)`` pads per dimension."""
    buffer = torch.full([n + before + after for n, (before, after) in zip(tensor.shape, pads)], float("nan"),
                        dtype=tensor.dtype)
    view = tuple(slice(before, before + n) for n, (before, _) in zip(tensor.shape, pads))
    buffer[view].copy_(tensor)
    return buffer.to(device)[view]


def _parse_field(key: str, raw: str):
    if key == "mask":
        return MaskSpec.parse(raw)
    if key == "seqlens":
        try:
            return tuple(tuple(int(n) for n in pair.split(":", 1)) for pair in raw.split("/"))
        except ValueError:
            raise ValueError(f"seqlens: expected nq:nk pairs separated by '/', e.g. 3:5/0:2, got {raw!r}") from None
    if key == "window":
        left, right = raw.split(",")
        return (int(left), int(right))
    if key == "softmax_scale":
        return None if raw == "None" else float(raw)
    if key == "causal":
        if raw not in ("True", "False"):
            raise ValueError(f"case spec: causal must be True or False, got {raw!r}")
        return raw == "True"
    if key in ("dtype", "layout", "values"):
        return raw
    return int(raw)


def _check_seqlens(seqlens) -> tuple[tuple[int, int], ...]:
    """``seqlens`` as a non-empty tuple of ``(nq, nk)`` pairs of non-negative ints."""
    try:
        pairs = tuple(tuple(pair) for pair in seqlens)
    except TypeError:
        pairs = None
    if not pairs or not all(
        len(pair) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in pair)
        for pair in pairs
    ):
        raise ValueError(f"seqlens: expected a non-empty sequence of (nq, nk) pairs of non-negative ints, got {seqlens!r}")
    return pairs


def _draw_values(kind, q_shape, kv_shape, scale, generator):
    """Draw float32 q, k, v of the given distribution (see :data:`VALUES`)."""

    def normal(shape, std=1.0):
        return torch.randn(shape, generator=generator) * std

    head_dim = q_shape[-1]
    if kind == "normal":
        return normal(q_shape), normal(kv_shape), normal(kv_shape)
    if kind == "small":
        return normal(q_shape, 0.1), normal(kv_shape, 0.1), normal(kv_shape)
    if kind == "large-logits":
        # |scale * q.k| has typical size scale * std**2 * sqrt(D); aim for about 200.
        std = math.sqrt(200.0 / (abs(scale) * math.sqrt(head_dim) + 1e-30))
        std = min(std, 200.0)
        return normal(q_shape, std), normal(kv_shape, std), normal(kv_shape)
    if kind == "offset-logits":
        # Coordinate 0 of every query is +a and of every key -a (+a for a negative scale),
        # which adds -|scale|*a*a (about -2e4) to every logit without changing the softmax.
        q, k = normal(q_shape), normal(kv_shape)
        a = math.sqrt(2e4 / (abs(scale) + 1e-30))
        a = min(a, 2e3)
        q[..., 0] = a
        k[..., 0] = -a if scale >= 0 else a
        return q, k, normal(kv_shape)
    if kind == "near-ties":
        base = normal(kv_shape[:1] + (1,) + kv_shape[2:])
        k = base + normal(kv_shape, 1e-3)
        return normal(q_shape), k, normal(kv_shape)
    if kind == "constant":
        k = normal(kv_shape[:1] + (1,) + kv_shape[2:]).expand(kv_shape).clone()
        v = normal(kv_shape[:1] + (1,) + kv_shape[2:]).expand(kv_shape).clone()
        return normal(q_shape), k, v
    if kind == "outliers":
        tensors = [normal(q_shape), normal(kv_shape), normal(kv_shape)]
        for t in tensors:
            spikes = torch.rand(t.shape, generator=generator) < 0.01
            t[spikes] *= 100.0
        return tuple(tensors)
    if kind == "offset-values":
        return normal(q_shape, 4.0), normal(kv_shape) + 256.0, normal(kv_shape, 4.0) + 1500.0
    raise ValueError(f"values: expected one of {VALUES}, got {kind!r}")


def seeded_generator(case, salt: int) -> torch.Generator:
    """A CPU generator for random choices made on top of ``case`` (a property's own, the
    dS-range stress's upstream gradient), from the case's seed and a ``salt`` that keeps
    different uses independent."""
    return torch.Generator().manual_seed((case.seed * 1_000_003 + salt) % (2**63))
