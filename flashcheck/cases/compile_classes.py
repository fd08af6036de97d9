"""Compile classes: the parts of a case that decide which compiled variant of a kernel runs it.

A GPU kernel written in a JIT (Triton, the CuTe DSL, torch.compile) compiles a variant per
combination of what it specialises on, and a case whose variant is new spends seconds
compiling where a warm one runs in milliseconds. So on the GPU, :func:`flashcheck.cases.strategies.cases`
draws most cases inside a few compile classes, each a set of cases that compile once, and a
fuzz worker widens its set of classes as its compilations pay off
(:mod:`flashcheck.engine.focus`). Two kinds of class:

- :class:`KeyedClass`, for an implementation that names its compile key
  (``flashcheck_compile_key``, :func:`flashcheck.protocol.compile_key_of`): the case
  attributes of :data:`KEY_ATTRIBUTES` that select a variant (FlashAttention-4: dtype, head
  dim, GQA ratio, band; FlagGems' flash kernel: also the softmax scale, a ``tl.constexpr``).
  A class pins one value of each (:func:`keyed_classes`); everything else is drawn freely.
- :class:`CompileClass`, Triton's specialisation, assumed for an implementation that names no
  key (the project's kernel, and a user's Triton kernel): dtype, mode, the head dim's tile
  and residue, the scale's sign, and the residues mod 16 of the lengths and strides
  (:func:`compile_classes`).

One case in :data:`FOCUS_ESCAPE` is drawn outside any class, so that every case stays
drawable. Imports torch only through :mod:`flashcheck.cases.case`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random

from flashcheck.cases import case as case_module
from flashcheck.cases.domain import PROTOCOL_MAX_HEAD_DIM, CaseDomain
from flashcheck.cases.sizes import CaseSizes

#: Head dims drawn often: the block-aligned ones first (simplest), then sizes that leave a
#: partial head-dim tile (1, 8, 40, 59, 72, 96, 111, 160) and the largest (256).
HEAD_DIMS = (16, 32, 64, 128, 8, 1, 40, 59, 72, 96, 111, 160, 256)

#: GQA ratios (heads // kv_heads) drawn often; 7 is a ratio that no power-of-two
#: shortcut in a kernel's head indexing can get right by accident.
GQA_RATIOS = (1, 2, 4, 7)

#: Mask shapes drawn: full first, then each way of broadcasting (see flashcheck.cases.maskspec).
MASK_SHAPES = ("BHQK", "B1QK", "1HQK", "11QK", "QK", "BH1K", "1K")
#: The mask shapes with a query axis: the only ones that can leave a row without keys.
ROW_MASK_SHAPES = tuple(s for s in MASK_SHAPES if "Q" in s)

#: One case in this many is drawn outside the compile classes of sizes with ``focus``, so
#: that every case the sizes allow stays drawable (and hypothesis can find it).
FOCUS_ESCAPE = 64

#: A length "residue" meaning the length is exactly 1, which Triton specialises apart (a
#: runtime integer equal to 1 is compiled in as a constant).
EXACTLY_ONE = -1

#: Triton's value specialisation of runtime integers: divisible by this (and equal to 1).
_DIVISOR = 16

#: The classes a run of few workers starts in (each worker starts in one and may stay there for
#: its budget, :mod:`flashcheck.engine.focus`): the catalogue deals into these what a short run
#: must reach.
_FIRST_CLASSES = 3


@dataclasses.dataclass(frozen=True)
class CompileClass:
    """The part of a case that decides which compilation a Triton kernel needs for it.

    Triton compiles a kernel per *specialisation*: its constexprs, the dtype and 16-byte
    alignment of each pointer, and for each integer argument whether it equals 1 or is
    divisible by 16. For an attention kernel those come from the dtype, the mode (dense,
    masked or packed), the head dim (its padded tile, whether it fills it, its residue mod
    16), the sign of the softmax scale, and the strides and offsets of the inputs, which
    are polynomials in the head counts, the lengths and the head dim with the layout's
    pads: their residues mod 16 decide them. A class pins all of that and nothing else,
    so the cases drawn in it (:func:`cases` with ``focus`` sizes) vary the lengths
    within their residues, the windows, the masks' contents, the batch, the values and
    the seed, and compile once.

    ``seqlen_q``/``seqlen_k``: residues mod 16 of the lengths, of a length other than 1, or
    :data:`EXACTLY_ONE`; packed, of the longest sequence on each side. ``tokens_q``/
    ``tokens_k``: packed, residues of the total tokens where the layout makes them part of
    a stride (heads-first), else None. ``mask_shape``: the broadcast shape of a drawn
    mask, ``"B11K"`` for key-padding masks (None: no mask, or only key-padding masks).
    ``batch_one``: with a mask, whether the batch is 1 (a mask's batch stride is its own
    with one entry, whatever its shape, and 0 or its own with more); None: any batch.
    """
    dtype: str
    mode: str
    head_dims: tuple[int, ...]
    negative_scale: bool
    layout: str
    heads: int
    kv_heads: int
    seqlen_q: int
    seqlen_k: int
    tokens_q: int | None = None
    tokens_k: int | None = None
    mask_shape: str | None = None
    batch_one: bool | None = None

    def label(self) -> str:
        """The class in a few words, as a run's summary names it (the class as the catalogue
        draws it, before a property's request fits it)."""
        dims = ",".join(str(d) for d in self.head_dims[:3]) + (",..." if len(self.head_dims) > 3 else "")
        details = [f"head dims {dims}", self.layout, f"{self.heads}:{self.kv_heads} heads",
                   f"Nq {_length_label(self.seqlen_q)}, Nk {_length_label(self.seqlen_k)}",
                   "negative scale" if self.negative_scale else "positive scale"]
        if self.mode == "mask" and self.mask_shape is not None:
            details.append(f"mask {self.mask_shape}")
        return f"{self.dtype} {self.mode}, " + ", ".join(details)


def _head_dim_buckets(max_head_dim: int) -> list[tuple[int, bool, int, int]]:
    """``(tile, full, low, high)``: the head dims ``low..high`` whose padded tile (the next
    power of two, at least 16) is ``tile``, filling it (``full``: only ``tile`` itself) or
    not, for head dims up to ``max_head_dim``."""
    buckets, tile = [], 16
    while tile // 2 < max_head_dim or tile == 16:
        low = 1 if tile == 16 else tile // 2 + 1
        if low <= min(tile - 1, max_head_dim):
            buckets.append((tile, False, low, min(tile - 1, max_head_dim)))
        if tile <= max_head_dim:
            buckets.append((tile, True, tile, tile))
        tile *= 2
    return buckets


def _covering_rows(factors: dict, rng: random.Random, dealt: int = 0, restarts: int = 8,
                   candidates: int = 48) -> list[dict]:
    """Few rows (one value per factor) that together contain every pair of values of two
    factors (a pairwise covering array), greedily: each row is the best of ``candidates``
    random rows built around a pair still missing; the smallest of ``restarts`` tries.

    The first ``dealt`` rows deal each factor's values in turn (row i takes the i-th of a
    shuffled order of each, round again where a factor has fewer): so those rows hold every
    value of each factor of at most ``dealt`` values, and ``dealt`` of each other's."""
    names = list(factors)
    pairs_of = list(itertools.combinations(names, 2))
    wanted = {((a, x), (b, y)) for a, b in pairs_of for x in factors[a] for y in factors[b]}
    in_order = sorted(wanted, key=repr)
    best = None
    for _ in range(restarts):
        shuffled = {name: rng.sample(values, len(values)) for name, values in factors.items()}
        rows = [{name: shuffled[name][i % len(shuffled[name])] for name in names} for i in range(dealt)]
        missing = set(wanted) - {((a, row[a]), (b, row[b])) for row in rows for a, b in pairs_of}
        # The missing pairs in a fixed order, so that the rows depend on the seed alone; sorted
        # once and filtered as pairs are covered (sorting per draw cost minutes on wide keys).
        ordered = [pair for pair in in_order if pair in missing]
        while missing:
            def gain(row):
                return sum(((a, row[a]), (b, row[b])) in missing for a, b in pairs_of)
            options = []
            for _ in range(candidates):
                (a, x), (b, y) = rng.choice(ordered)
                row = {name: rng.choice(factors[name]) for name in names}
                row[a], row[b] = x, y
                options.append(row)
            row = max(options, key=gain)
            rows.append(row)
            missing -= {((a, row[a]), (b, row[b])) for a, b in pairs_of}
            ordered = [pair for pair in ordered if pair in missing]
        if best is None or len(rows) < len(best):
            best = rows
    return best


def _residue(rng: random.Random) -> int:
    """A length residue: block-size neighbours (0, 15, 1 mod 16) and length 1 often."""
    roll = rng.random()
    if roll < 0.1:
        return EXACTLY_ONE
    if roll < 0.5:
        return rng.choice((0, 15, 1))
    return rng.randint(2, 14)


#: The modes a compile class may pin, in the order a request lists them.
_MODES = ("dense", "mask", "varlen")


@functools.lru_cache(maxsize=256)
def compile_classes(sizes: CaseSizes, dtypes: tuple[str, ...], modes: tuple[str, ...], layouts: tuple[str, ...],
                    allow_gqa: bool = True, empty_rows: bool | None = None,
                    key_padding: bool = False, gqa: bool | None = None) -> tuple[CompileClass, ...]:
    """The compile classes (:class:`CompileClass`) that :func:`cases` draws in under
    sizes with ``focus``, picked by ``sizes.focus_seed``, for cases of these dtypes,
    modes (``"dense"``, ``"mask"``, ``"varlen"``), layouts, with GQA or not, and the
    ``empty_rows``/``key_padding``/``gqa`` requests of :func:`cases`.

    Together the classes contain every pair of values of the choices that select kernel
    code: dtype, head-dim tile (16 to 256), whether the head dim fills its tile, mode and
    sign of the softmax scale (a pairwise covering array, 15 or 16 classes when everything is
    allowed); each layout is in some class. The first three classes, those a run of three
    workers starts in, hold every dtype, mode and scale sign, GQA over several KV heads
    and over one, and the mixed layout with more than one key. The rest of each class (the head dim's residue
    within its tile, head counts, the lengths' residues, a mask's broadcast shape) is drawn
    from the seed, favouring what :func:`cases` favours: listed head dims, lengths next to
    block sizes and 1, equal lengths; the head counts are dealt so that the classes reach
    each GQA ratio 1, 2, 4, 7 and one other, with one kv head (MQA) and with several.

    One catalogue serves every request: it is drawn once per seed over everything the
    sizes allow, and each class is then fitted to the request (a dtype, mode or layout
    outside it replaced by one inside, the head counts made equal without GQA or grouped
    where only GQA is drawn, a mask shape that can empty rows where rows must be empty).
    So class ``i`` of one property and class ``i`` of another keep the same head dims,
    head counts, scale sign and lengths' residues wherever both allow them, and a worker
    drawing every property in one class compiles the kernels of one class, not of one
    class per property. A pair of choices that the request allows stays covered: fitting
    changes only values the request excludes.
    """
    catalogue = _catalogue(dataclasses.replace(sizes, focus_classes=None, focus_start=0))
    fitted = []
    for index, drawn in enumerate(catalogue):
        mode = drawn.mode if drawn.mode in modes else modes[index % len(modes)]
        layout = drawn.layout if drawn.layout in layouts else layouts[index % len(layouts)]
        heads, kv_heads = drawn.heads, drawn.kv_heads
        if not allow_gqa:
            kv_heads = heads
        elif gqa and heads == kv_heads and sizes.max_heads >= 2:
            kv_heads = kv_heads if 2 * kv_heads <= sizes.max_heads else 1
            heads = 2 * kv_heads
        seqlen_q = drawn.seqlen_q
        if seqlen_q == EXACTLY_ONE and empty_rows and mode == "dense":  # rows are emptied by Nq > Nk
            seqlen_q = 1
        packed = mode == "varlen"
        mask_shape = None
        if mode == "mask" and not key_padding:
            # B11K: key-padding masks (whose shape that is); they empty no row.
            mask_shape = drawn.mask_shape
            if empty_rows and mask_shape not in ROW_MASK_SHAPES:
                mask_shape = ROW_MASK_SHAPES[index % len(ROW_MASK_SHAPES)]
        fitted.append(dataclasses.replace(
            drawn, dtype=drawn.dtype if drawn.dtype in dtypes else dtypes[index % len(dtypes)], mode=mode,
            layout=layout, heads=heads, kv_heads=kv_heads, seqlen_q=seqlen_q,
            tokens_q=drawn.tokens_q if packed and layout in ("heads-first", "mixed") else None,
            tokens_k=drawn.tokens_k if packed and layout == "heads-first" else None,
            mask_shape=mask_shape, batch_one=drawn.batch_one if mode == "mask" else None,
        ))
    return tuple(fitted)


@functools.lru_cache(maxsize=64)
def _catalogue(sizes: CaseSizes) -> tuple[CompileClass, ...]:
    """The classes of ``sizes.focus_seed`` over everything ``sizes`` allows, before
    :func:`compile_classes` fits them to a request; every optional field drawn."""
    rng = random.Random(f"flashcheck compile classes {sizes.focus_seed}")
    buckets = _head_dim_buckets(sizes.max_head_dim)
    factors = {
        "dtype": list(sizes.dtypes),
        "tile": sorted({tile for tile, *_ in buckets}),
        "full": sorted({full for _, full, *_ in buckets}),
        "mode": list(_MODES),
        "negative": [False, True],
    }
    # The first classes (_FIRST_CLASSES) are dealt so that they hold every dtype and mode.
    rows = _covering_rows(factors, rng, dealt=max(len(factors["dtype"]), len(factors["mode"])))
    order = list(case_module.LAYOUTS)
    rng.shuffle(order)
    # The mixed layout (q, k and v each laid out its own way) is the only one in which a kernel that
    # addresses one tensor with another's strides reads wrong elements: dealt into the first classes.
    mixed = order.index("mixed")
    if mixed >= _FIRST_CLASSES:
        order[mixed], order[mixed % _FIRST_CLASSES] = order[mixed % _FIRST_CLASSES], order[mixed]
    listed = [d for d in HEAD_DIMS if d & (d - 1)]  # the listed head dims that leave a partial tile
    max_heads = max(1, min(sizes.max_heads, sizes.max_elements))
    max_ratio = min(max_heads, sizes.max_kv_ratio)
    # Head counts dealt round the classes: every listed GQA ratio (and an unlisted one) with
    # one kv head and with several, where the heads allow several.
    groupings = [(ratio, several) for ratio in [r for r in GQA_RATIOS if r <= max_ratio] + [None]
                 for several in (False, True)]
    rng.shuffle(groupings)
    # Dealt in turns from three kinds, so that the first classes, those a short run reaches,
    # hold each: groups over several KV heads (only these tell a kernel's head-to-group mapping,
    # h // group, from a wrong one such as h % kv_heads), groups over one (MQA), and the rest.
    kinds = [[g for g in groupings if g[0] not in (1, None) and g[1]],
             [g for g in groupings if g[0] not in (1, None) and not g[1]],
             [g for g in groupings if g[0] in (1, None)]]
    groupings = [g for turn in itertools.zip_longest(*kinds) for g in turn if g is not None]
    classes = []
    for index, row in enumerate(rows):
        bucket = [b for b in buckets if b[0] == row["tile"] and b[1] == row["full"]]
        if not bucket:  # a tile without that choice: the other one
            bucket = [b for b in buckets if b[0] == row["tile"]]
        tile, full, low, high = bucket[0]
        anchors = [d for d in listed if low <= d <= high]
        anchor = rng.choice(anchors) if anchors and rng.random() < 0.5 else rng.randint(low, high)
        head_dims = tuple(sorted((d for d in range(low, high + 1)
                                  if d % _DIVISOR == anchor % _DIVISOR and (d == 1) == (anchor == 1)),
                                 key=lambda d: d != anchor))
        ratio, several = groupings[index % len(groupings)]
        ratio = ratio or rng.randint(1, max_ratio)
        kv_heads = rng.randint(2, max_heads // ratio) if several and max_heads // ratio >= 2 else 1
        seqlen_q = _residue(rng)
        seqlen_k = seqlen_q if rng.random() < 0.5 else _residue(rng)
        layout = order[index % len(order)]
        if layout == "mixed" and index < _FIRST_CLASSES and seqlen_k == EXACTLY_ONE:
            # One key per sequence is row 0 of K and V alone, where every sequence stride
            # multiplies 0: strides mixed up between the tensors show only with more keys.
            seqlen_k = 1
        classes.append(CompileClass(
            dtype=row["dtype"], mode=row["mode"], head_dims=head_dims, negative_scale=row["negative"],
            layout=layout, heads=ratio * kv_heads, kv_heads=kv_heads,
            seqlen_q=seqlen_q, seqlen_k=seqlen_k, tokens_q=rng.randrange(_DIVISOR), tokens_k=rng.randrange(_DIVISOR),
            mask_shape=rng.choice(MASK_SHAPES + ("B11K",)), batch_one=rng.random() < 0.5,
        ))
    return tuple(classes)


def _length_label(residue: int) -> str:
    return "1" if residue == EXACTLY_ONE else f"{residue} mod 16"


def classes_in_use(sizes: CaseSizes) -> tuple[CompileClass, ...]:
    """The classes of the catalogue of ``sizes.focus_seed`` that drawing with ``sizes`` (with
    ``focus``) keeps to: ``sizes.focus_classes`` of them from ``sizes.focus_start`` on, as the
    catalogue draws them (:func:`compile_classes` fits each to a property's request)."""
    return focus_window(_catalogue(dataclasses.replace(sizes, focus_classes=None, focus_start=0)), sizes)


def focus_window(whole: tuple, sizes: CaseSizes) -> tuple:
    """The classes of the whole catalogue ``whole`` that ``sizes`` keeps the draws to:
    ``sizes.focus_classes`` (None: all) from ``sizes.focus_start`` on, wrapping round."""
    count = len(whole) if sizes.focus_classes is None else min(sizes.focus_classes, len(whole))
    return tuple(whole[(sizes.focus_start + i) % len(whole)] for i in range(count))


def snap(n: int, residue: int, low: int, high: int) -> int | None:
    """The length of ``residue``'s class (``EXACTLY_ONE``, or ``residue`` mod 16 and not 1)
    in ``[low, high]`` nearest to ``n``, the larger first; None where there is none."""
    if residue == EXACTLY_ONE:
        return 1 if low <= 1 <= high else None
    up = n + (residue - n) % _DIVISOR
    for candidate in (up, up - _DIVISOR, up + _DIVISOR, low + (residue - low) % _DIVISOR):
        if low <= candidate <= high and candidate != 1:
            return candidate
    return None


def pin_lengths(seqlen_q, seqlen_k, focus: CompileClass, sizes: CaseSizes, empty: bool):
    """``(seqlen_q, seqlen_k)`` moved into ``focus``'s residues, staying within the sizes
    (``empty``: keeping ``seqlen_q > seqlen_k``); as drawn where that cannot be done."""
    limit, budget = sizes.long_seqlen, sizes.max_elements
    nk = snap(seqlen_k, focus.seqlen_k, 1, limit)
    if nk is None:
        return seqlen_q, seqlen_k
    if seqlen_q == seqlen_k and focus.seqlen_q == focus.seqlen_k and not empty:
        nq = nk
    else:
        nq = snap(seqlen_q, focus.seqlen_q, nk + 1 if empty else 1, min(limit, budget // nk))
    if nq is None or nq * nk > budget:
        return seqlen_q, seqlen_k
    return nq, nk


def _empties_as_asked(pairs, empty_rows) -> bool:
    return empty_rows is None or any(nq > 0 and nk == 0 for nq, nk in pairs) == empty_rows


def pin_packed(pairs, focus: CompileClass, max_tokens: int, empty_rows):
    """Packed ``(nq, nk)`` pairs moved into ``focus``'s residues: the longest sequence of each
    side lengthened to its residue (or every one cut to 1 token), then a shorter one moved
    so that the total has its residue where the class pins it; each step kept only where
    the pairs stay within ``max_tokens`` and keep the ``empty_rows`` request."""
    pairs = [list(pair) for pair in pairs]

    def tokens(side):
        return sum(pair[side] for pair in pairs)

    for side, residue in ((0, focus.seqlen_q), (1, focus.seqlen_k)):
        longest = max(pair[side] for pair in pairs)
        if longest == 0:
            continue
        before = [list(pair) for pair in pairs]
        if residue == EXACTLY_ONE:
            for pair in pairs:
                pair[side] = min(pair[side], 1)
        else:
            n = snap(longest, residue, longest, max_tokens - tokens(side) + longest)
            if n is not None:
                pairs[[pair[side] for pair in pairs].index(longest)][side] = n
        if not _empties_as_asked(pairs, empty_rows):
            pairs = before
    for side, residue in ((0, focus.tokens_q), (1, focus.tokens_k)):
        if residue is None or (residue - tokens(side)) % _DIVISOR == 0:
            continue
        shift = (residue - tokens(side)) % _DIVISOR
        longest = max(pair[side] for pair in pairs)
        skipped = [pair[side] for pair in pairs].index(longest)
        done = False
        for index, pair in enumerate(pairs):
            for delta in (shift, shift - _DIVISOR):
                if done or index == skipped or not 0 <= pair[side] + delta <= longest:
                    continue
                if tokens(side) + delta > max_tokens:
                    continue
                pair[side] += delta
                if _empties_as_asked(pairs, empty_rows):
                    done = True
                else:
                    pair[side] -= delta
    return tuple(tuple(pair) for pair in pairs)




# -- keyed classes: a declared compile key ---------------------------------------------------

#: The case attributes a compile key (``flashcheck_compile_key``) may name, each with what it
#: reads off a case (:func:`key_of`). ``mode``: dense, mask or varlen. ``band``: none, causal
#: (the band ``(-1, 0)``) or window (any other bounded band). ``gqa_ratio``: heads // kv_heads.
#: ``heads``: ``(heads, kv_heads)``. ``batch``: the batch size (packed: 1, the one packed batch; its
#: sequences are drawn freely). ``softmax_scale``: the exact scale (None: the default).
#: ``scale_sign``: positive (the default included) or negative. ``window``: the band's exact
#: ``(left, right)``. ``seqlen_q``/``seqlen_k``: the exact length (packed: the longest sequence's).
#: ``length_residues``: how Triton specialises the two lengths, each 1 (:data:`EXACTLY_ONE`) or
#: its residue mod 16 (packed: the longest sequence's); with ``heads``, ``head_dim`` and
#: ``layout`` it decides the residues of every stride, so a Triton kernel's key names all four.
KEY_ATTRIBUTES = ("dtype", "mode", "band", "head_dim", "gqa_ratio", "heads", "batch", "softmax_scale",
                  "scale_sign", "window", "seqlen_q", "seqlen_k", "layout", "length_residues")

BANDS = ("none", "causal", "window")


def band_kind(band: tuple[int, int]) -> str:
    """``"none"``, ``"causal"`` or ``"window"`` for an effective band ``(left, right)``
    (:func:`flashcheck.cases.masks.effective_window`)."""
    if band == (-1, -1):
        return "none"
    return "causal" if band == (-1, 0) else "window"


def _longest(case, side: int) -> int:
    if case.varlen:
        return max((pair[side] for pair in case.seqlens), default=0)
    return case.seqlen_q if side == 0 else case.seqlen_k


_READERS = {
    "dtype": lambda case: case.dtype,
    "mode": lambda case: "varlen" if case.varlen else ("dense" if case.mask.is_none else "mask"),
    "band": lambda case: band_kind(case.band),
    "head_dim": lambda case: case.head_dim,
    "gqa_ratio": lambda case: case.heads // case.kv_heads,
    "heads": lambda case: (case.heads, case.kv_heads),
    "batch": lambda case: case.batch,
    "softmax_scale": lambda case: case.softmax_scale,
    "scale_sign": lambda case: "negative" if case.softmax_scale is not None and case.softmax_scale < 0 else "positive",
    "window": lambda case: case.band,
    "seqlen_q": lambda case: _longest(case, 0),
    "seqlen_k": lambda case: _longest(case, 1),
    "layout": lambda case: case.layout,
    "length_residues": lambda case: tuple(_triton_residue(_longest(case, side)) for side in (0, 1)),
}


def _triton_residue(n: int) -> int:
    return EXACTLY_ONE if n == 1 else n % _DIVISOR
assert tuple(_READERS) == KEY_ATTRIBUTES


def key_of(case, names) -> tuple:
    """The values of the compile key ``names`` (attributes of :data:`KEY_ATTRIBUTES`) for ``case``:
    two cases with equal keys run one compiled variant of an implementation declaring that key."""
    return tuple(_READERS[name](case) for name in names)


@dataclasses.dataclass(frozen=True)
class KeyedClass:
    """The cases whose compile key has the values ``pins`` (``(attribute, value)`` pairs):
    :func:`flashcheck.cases.strategies.cases` draws every other part of the case freely, and takes a
    pinned value wherever the request and the case drawn so far allow it (a window pinned for
    lengths it would leave without keys, where rows must keep keys, is drawn instead)."""

    pins: tuple[tuple[str, object], ...]

    def get(self, name: str, default=None):
        return dict(self.pins).get(name, default)


#: The most values of one key attribute a catalogue deals round its classes: every allowed
#: head dim of FlashAttention-4 on an H100 (multiples of 8 up to 256) fits.
_VALUES_PER_ATTRIBUTE = 32


@functools.lru_cache(maxsize=256)
def keyed_classes(key: tuple[str, ...], sizes: CaseSizes, dtypes: tuple[str, ...], modes: tuple[str, ...],
                  layouts: tuple[str, ...], bands: tuple[str, ...], allow_gqa: bool, gqa: bool | None,
                  domain: CaseDomain) -> tuple[KeyedClass, ...]:
    """The classes of compile key ``key`` that :func:`flashcheck.cases.strategies.cases` draws in
    under sizes with ``focus``, picked by ``sizes.focus_seed``: rows of one value per key
    attribute, together containing every pair of values of two attributes (a pairwise covering
    array), each value inside the request (``dtypes``, ``modes``, ``layouts``, ``bands``, GQA
    or not) and the implementation's case domain. Attributes with many values (head dims,
    lengths, scales) contribute a sample of at most :data:`_VALUES_PER_ATTRIBUTE`, the favoured
    values first. The order of the classes is shuffled by the seed: the workers of a run start
    at classes of their own."""
    rng = random.Random(f"flashcheck keyed classes {sizes.focus_seed} {key}")
    factors = {name: _values(name, rng, sizes, dtypes, modes, layouts, bands, allow_gqa, gqa, domain)
               for name in key}
    if len(factors) == 1:
        (name, values), = factors.items()
        rows = [{name: value} for value in values]
    else:
        rows = _covering_rows(factors, rng, restarts=2)
    if domain.max_head_dim_by_dtype and {"dtype", "head_dim"} <= set(key):
        rows = _head_dims_fitting_dtypes(rows, factors["head_dim"], domain)
    rng.shuffle(rows)
    return tuple(KeyedClass(tuple((name, row[name]) for name in key)) for row in rows)


def _head_dims_fitting_dtypes(rows: list[dict], head_dims: list[int], domain: CaseDomain) -> list[dict]:
    """``rows`` with each head dim over its row's dtype's cap (``max_head_dim_by_dtype``) moved to
    the largest dealt head dim under it (rows that become equal kept once): no class pins a
    pair the domain leaves out, which its cases would then draw outside."""
    fitted = []
    for row in rows:
        if not domain.allows_head_dim(row["head_dim"], row["dtype"]):
            fitting = [d for d in head_dims if domain.allows_head_dim(d, row["dtype"])]
            if fitting:
                row = {**row, "head_dim": max(fitting)}
        if row not in fitted:
            fitted.append(row)
    return fitted


def _values(name, rng, sizes, dtypes, modes, layouts, bands, allow_gqa, gqa, domain: CaseDomain) -> list:
    """The values of key attribute ``name`` a catalogue deals, favoured ones first."""
    if name == "dtype":
        return list(dtypes)
    if name == "mode":
        return list(modes)
    if name == "band":
        return list(bands)
    if name == "layout":
        return [layout for layout in layouts if domain.layouts is None or layout in domain.layouts] or list(layouts)
    if name == "scale_sign":
        return ["positive"] if domain.positive_scale else ["positive", "negative"]
    if name == "head_dim":
        allowed = domain.head_dims_up_to(sizes.max_head_dim) or domain.head_dims_up_to(PROTOCOL_MAX_HEAD_DIM)[:1]
        return _sample(allowed, [d for d in HEAD_DIMS if d in allowed], rng)
    max_heads = max(1, min(sizes.max_heads, sizes.max_elements))
    max_ratio = min(max_heads, sizes.max_kv_ratio) if allow_gqa else 1
    ratios = [r for r in GQA_RATIOS if r <= max_ratio and (r > 1 or not gqa)] or [min(2, max_ratio)]
    if name == "gqa_ratio":
        return ratios
    if name == "heads":
        return [(ratio * kv, kv) for ratio in ratios for kv in (1, 2) if ratio * kv <= max_heads]
    if name == "batch":
        return _sample(list(range(1, max(1, sizes.max_batch) + 1)), [1, 2], rng)
    if name == "softmax_scale":
        scales = [None, 1.0, 0.5, 0.125, 2.0, round(rng.uniform(1 / 64, 4.0), 6)]
        return scales if domain.positive_scale else scales + [-1.0, -0.125]
    if name == "window":
        bounds = [(0, 0), (1, 0), (3, 1), (-1, 2), (4, -1), (16, 16), (rng.randint(0, 64), rng.randint(0, 64))]
        return bounds
    if name == "length_residues":
        pairs = []
        for _ in range(8):
            residue_q = _residue(rng)
            pairs.append((residue_q, residue_q if rng.random() < 0.5 else _residue(rng)))
        return list(dict.fromkeys(pairs))
    # seqlen_q, seqlen_k: lengths next to block sizes, and some of any size, inside the domain
    limit = min(sizes.max_seqlen, domain.max_seqlen or sizes.max_seqlen)
    allowed = [n for n in range(1, limit + 1) if domain.allows_length(n)] or [domain.length_multiple]
    favoured = [n for n in sorted({1, 2, *(m for b in sizes.block_sizes for m in (b - 1, b, b + 1, 2 * b))})
                if n in set(allowed)]
    return _sample(allowed, favoured, rng)


def _sample(allowed, favoured, rng) -> list:
    """At most :data:`_VALUES_PER_ATTRIBUTE` of ``allowed``: ``favoured`` first, then others at random."""
    rest = [value for value in allowed if value not in favoured]
    rng.shuffle(rest)
    return (list(favoured) + rest)[:_VALUES_PER_ATTRIBUTE]
