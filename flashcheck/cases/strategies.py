"""Hypothesis strategies for attention cases: structure and a seed, never tensor contents.

Everything here draws *descriptions*: lengths, heads, head dims, masks, dtypes, layouts,
value distributions, a softmax scale and a seed. :meth:`flashcheck.cases.case.Case.materialize`
then makes the tensors from the seed, so hypothesis shrinks structure (shorter sequences,
fewer heads, no mask, default scale) and every case replays from its one-line spec.

Contracts:

- :func:`cases` draws valid :class:`~flashcheck.cases.case.Case` objects within a
  :class:`~flashcheck.cases.sizes.CaseSizes`: ``batch <= max_batch``, ``heads <=
  max_heads``, ``heads // kv_heads <= max_kv_ratio``, ``1 <= seqlen <= long_seqlen``,
  ``head_dim <= max_head_dim``, ``batch * heads * seqlen_q * seqlen_k <= max_elements``,
  a dtype the sizes allow. Asked for ``features``, it draws only cases an implementation
  declaring them can run; asked for ``empty_rows=True`` or ``False``, only cases with or
  without a query that has no allowed key.
- Special values are drawn often: lengths 1 and ``b - 1, b, b + 1, 2b - 1, 2b, 2b + 1``
  for each block size ``b``, odd head dims, GQA ratios 1, 2, 4, 7 and MQA, tiny and
  one-sided windows, windows at the edge of leaving rows empty.
- Shrinking goes towards simple cases: the simple choice comes first everywhere (no mask,
  equal lengths, length 1, head dim 16, one head, float16, contiguous, normal values,
  default scale, seed 0).
- Compile-aware under sizes with ``focus`` (the GPU's): all but one case in
  :data:`FOCUS_ESCAPE` fall in one of a few compile classes (:func:`compile_classes`),
  within which a Triton kernel compiles once, while lengths, windows, masks, batch and
  values vary; the classes change with ``sizes.focus_seed``, and ``sizes.focus_classes``
  keeps the draws to a few of them, from ``sizes.focus_start`` on. Without ``focus`` nothing
  of this is drawn, and the draws are exactly those of sizes without it.

Arguments are validated when a strategy is built; bad ones raise
``hypothesis.errors.InvalidArgument``.

Which key a query may attend (bottom-right aligned): with ``off = Nk - Nq``, query ``i``
sees keys ``i + off - left ... i + off + right``. The last query's diagonal is always key
``Nk - 1``, so a left bound never empties a row; a row is empty exactly when the right
bound is finite (causal means right bound 0) and below ``Nq - Nk`` for that row, which
needs ``Nq > Nk``.
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from flashcheck import protocol
from flashcheck.cases import case as case_module
from flashcheck.cases import sizes as case_sizes
from flashcheck.cases.case import Case
from flashcheck.cases.compile_classes import (
    FOCUS_ESCAPE, GQA_RATIOS, HEAD_DIMS, MASK_SHAPES, ROW_MASK_SHAPES, CompileClass, KeyedClass,
    band_kind, compile_classes, focus_window, keyed_classes, pin_lengths, pin_packed, snap,
)
from flashcheck.cases.domain import CaseDomain
from flashcheck.cases.maskspec import MaskSpec
from flashcheck.cases.sizes import CaseSizes

__all__ = [
    "OUTSIDE_DOMAIN_ODDS",
    "cases",
    "key_padding_masks",
    "mask_specs",
    "packed_seqlens",
    "empty_row_windows",
    "gqa_heads",
    "head_dims",
    "seqlens",
    "softmax_scales",
    "special_seqlens",
    "windows",
]

#: The protocol's feature names (it grows: "out", "tf32"); ``cases`` rejects other names
#: as likely typos, and ignores those that do not concern dense cases.
_FEATURES = protocol.ALL_FEATURES
_DTYPE_NAMES = tuple(case_module.DTYPES)

#: One case in this many is drawn outside an implementation's declared case domain
#: (:mod:`flashcheck.cases.domain`), to check that what lies outside is still declined.
OUTSIDE_DOMAIN_ODDS = 32


# -- helpers ----------------------------------------------------------------------------------


def _check_int(name, value, *, minimum):
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name}: expected an int, got {value!r}")
    if value < minimum:
        raise InvalidArgument(f"{name}: expected at least {minimum}, got {value!r}")


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}: expected True or False, got {value!r}")


def _check_sizes(sizes) -> CaseSizes:
    if isinstance(sizes, CaseSizes):
        return sizes
    if sizes is None or isinstance(sizes, str):
        try:
            return case_sizes.choose(sizes)
        except ValueError as error:
            raise InvalidArgument(str(error)) from None
    raise InvalidArgument(f"sizes: expected a CaseSizes, the name of one or None, got {sizes!r}")


def _choices(name, given, allowed) -> tuple[str, ...]:
    """``given`` (default ``allowed``) as a non-empty tuple of members of ``allowed``."""
    if given is None:
        return tuple(allowed)
    if isinstance(given, str):
        given = (given,)
    given = tuple(given)
    unknown = [g for g in given if g not in allowed]
    if not given or unknown:
        raise InvalidArgument(f"{name}: expected a non-empty collection from {tuple(allowed)}, got {given!r}")
    return tuple(dict.fromkeys(given))  # drop duplicates, keep the caller's order


def _weighted(*options):
    """One of ``(weight, strategy)`` options, in proportion to the weights; shrinks
    towards the first option. Options of weight 0 are left out."""
    options = tuple((w, s) for w, s in options if w > 0)
    if len(options) == 1:
        return options[0][1]
    return _pick(options, sum(w for w, _ in options))


@st.composite
def _pick(draw, options, total):
    k = draw(st.integers(0, total - 1))
    for weight, strategy in options:
        if k < weight:
            return draw(strategy)
        k -= weight
    raise AssertionError("unreachable")


# -- lengths ----------------------------------------------------------------------------------


def special_seqlens(sizes: CaseSizes) -> tuple[int, ...]:
    """The lengths :func:`seqlens` favours for ``sizes``, ascending: 1, 2, and
    ``b - 1, b, b + 1, 2b - 1, 2b, 2b + 1`` for each block size ``b``."""
    values = {1, 2}
    for b in sizes.block_sizes:
        values.update({b - 1, b, b + 1, 2 * b - 1, 2 * b, 2 * b + 1})
    return tuple(sorted(v for v in values if v >= 1))


def seqlens(*, sizes: CaseSizes | str | None = None, min_value: int = 1, max_value: int | None = None):
    """Sequence lengths in ``[min_value, max_value]``, biased towards special values.

    Half the draws are :func:`special_seqlens` of the sizes (block sizes and their
    neighbours, 1, 2); most others are uniform up to ``sizes.max_seqlen``; about one in
    sixteen goes beyond, up to ``max_value`` (default ``sizes.long_seqlen``). Shrinks
    towards the smallest special value in range (1 when ``min_value <= 1``).
    """
    sizes = _check_sizes(sizes)
    _check_int("min_value", min_value, minimum=0)
    if max_value is None:
        max_value = max(sizes.long_seqlen, min_value)
    _check_int("max_value", max_value, minimum=min_value)
    common_max = max(min_value, min(max_value, sizes.max_seqlen))
    specials = [n for n in special_seqlens(sizes) if min_value <= n <= max_value]
    return _weighted(
        (8 if specials else 0, st.sampled_from(specials) if specials else st.nothing()),
        (7, st.integers(min_value, common_max)),
        (1 if max_value > common_max else 0, st.integers(common_max + 1, max_value)),
    )


# -- head dims and heads ----------------------------------------------------------------------


def head_dims(*, sizes: CaseSizes | str | None = None, max_value: int | None = None):
    """Head dims in ``[1, max_value]`` (default ``sizes.max_head_dim``).

    Mostly from a fixed list with odd sizes that leave a partial tile in the head-dim
    direction (1, 8, 40, 59, 72, 96, 111, 160) besides the powers of two and 256; now and
    then any size. For the project's Triton kernel D decides the tile, ``next_power_of_2(
    max(16, D))`` (five for D <= 256), whether D fills it, and D's own specialisation as
    a runtime integer (equal to 1, divisible by 16) and through it the strides': under
    compile-aware sizes :func:`cases` therefore draws D within one bucket and residue mod
    16 per compile class. Shrinks towards 16.
    """
    sizes = _check_sizes(sizes)
    if max_value is None:
        max_value = sizes.max_head_dim
    _check_int("max_value", max_value, minimum=1)
    listed = [d for d in HEAD_DIMS if d <= max_value] or [max_value]
    return _weighted((5, st.sampled_from(listed)), (1, st.integers(1, max_value)))


def gqa_heads(*, sizes: CaseSizes | str | None = None, max_heads: int | None = None, allow_gqa: bool = True):
    """``(heads, kv_heads)`` with ``heads % kv_heads == 0`` and ``heads <= max_heads``
    (default ``sizes.max_heads``), ``heads // kv_heads <= sizes.max_kv_ratio``.

    With ``allow_gqa`` the ratio is often 1, 2, 4 or 7 (where heads allow), and
    ``kv_heads`` is often 1 (MQA when the ratio exceeds 1); without it ``kv_heads ==
    heads``. Shrinks towards ``(1, 1)``.
    """
    sizes = _check_sizes(sizes)
    if max_heads is None:
        max_heads = sizes.max_heads
    _check_int("max_heads", max_heads, minimum=1)
    _check_bool("allow_gqa", allow_gqa)
    max_heads = min(max_heads, sizes.max_heads)
    if not allow_gqa:
        return _weighted((1, st.just(1)), (3, st.integers(1, max_heads))).map(lambda h: (h, h))
    max_ratio = min(max_heads, sizes.max_kv_ratio)
    ratios = [r for r in GQA_RATIOS if r <= max_ratio]
    return _gqa_heads(max_heads, ratios, max_ratio)


@st.composite
def _gqa_heads(draw, max_heads, ratios, max_ratio):
    ratio = draw(_weighted((3, st.sampled_from(ratios)), (1, st.integers(1, max_ratio))))
    kv_limit = max_heads // ratio
    kv_heads = draw(_weighted((1, st.just(1)), (2, st.integers(1, kv_limit))))
    return ratio * kv_heads, kv_heads


# -- masks ----------------------------------------------------------------------------------


def _bounds(low: int, max_bound: int):
    """Finite window bounds: mostly ``low .. low + 3``, else up to ``low + max_bound``."""
    return _weighted((2, st.integers(low, low + 3)), (1, st.integers(low, low + max(3, max_bound))))


def windows(*, allow_causal: bool = True, allow_window: bool = True, max_bound: int = 64, min_right: int = 0):
    """``(causal, window)`` pairs valid for :class:`~flashcheck.cases.case.Case`.

    Draws: no mask ``(False, (-1, -1))`` (first, so shrinking ends there); causal
    ``(True, (-1, -1))``; with ``allow_window`` also causal with a sliding left bound or
    the explicit ``(-1, 0)``, two-sided windows with small bounds (0..3) or moderate ones
    (up to ``max_bound``), and one-sided windows (one bound -1). With causal the window's
    right bound is always -1 or 0 (:func:`flashcheck.cases.masks.effective_window`).

    ``min_right`` is a floor for every finite right bound, causal included (causal means
    right bound 0, so ``min_right > 0`` rules causal out). With ``Nq > Nk``, pass
    ``min_right = Nq - Nk`` to draw only windows that leave no row empty; finite right
    bounds are then drawn near that edge. Whether rows are empty depends on the lengths:
    for windows that surely empty some rows see :func:`empty_row_windows`.
    """
    _check_bool("allow_causal", allow_causal)
    _check_bool("allow_window", allow_window)
    _check_int("max_bound", max_bound, minimum=0)
    _check_int("min_right", min_right, minimum=0)
    left = _bounds(0, max_bound)
    right = _bounds(min_right, max_bound)
    causal_ok = allow_causal and min_right == 0
    return _weighted(
        (4, st.just((False, (-1, -1)))),
        (3 if causal_ok else 0, st.just((True, (-1, -1)))),
        (2 if causal_ok and allow_window else 0, _causal_windows(left)),
        (4 if allow_window else 0, st.tuples(left, right).map(lambda w: (False, w))),
        (2 if allow_window else 0, _one_sided(left, right)),
    )


def _causal_windows(left):
    return st.tuples(_weighted((1, st.just(-1)), (3, left)), st.sampled_from((-1, 0))).map(
        lambda w: (True, w)
    )


def _one_sided(left, right):
    return st.one_of(
        right.map(lambda r: (False, (-1, r))),
        left.map(lambda l: (False, (l, -1))),
    )


def empty_row_windows(
    seqlen_q: int, seqlen_k: int, *, allow_causal: bool = True, allow_window: bool = True, max_bound: int = 64
):
    """``(causal, window)`` pairs that leave at least one of ``seqlen_q`` queries with no
    allowed key among ``seqlen_k``.

    That needs ``seqlen_q > seqlen_k`` and a finite right bound below ``seqlen_q -
    seqlen_k`` (causal: right bound 0); with ``seqlen_k == 0`` every row is empty whatever
    the mask, and any pair of :func:`windows` is drawn. Draws causal (plain, or with a
    left bound when ``allow_window``) and, with ``allow_window``, windows whose right bound
    is 0, the largest that still empties a row (``seqlen_q - seqlen_k - 1``, one empty
    row), or anything between.
    """
    _check_int("seqlen_q", seqlen_q, minimum=1)
    _check_int("seqlen_k", seqlen_k, minimum=0)
    _check_bool("allow_causal", allow_causal)
    _check_bool("allow_window", allow_window)
    _check_int("max_bound", max_bound, minimum=0)
    if not (allow_causal or allow_window):
        raise InvalidArgument("empty_row_windows: needs allow_causal or allow_window; without a mask no row is empty")
    if seqlen_k == 0:
        return windows(allow_causal=allow_causal, allow_window=allow_window, max_bound=max_bound)
    if seqlen_q <= seqlen_k:
        raise InvalidArgument(
            f"empty_row_windows: seqlen_q={seqlen_q} <= seqlen_k={seqlen_k}; the band is aligned "
            "bottom-right, so a row can be empty only when seqlen_q > seqlen_k"
        )
    gap = seqlen_q - seqlen_k  # rows 0 .. gap - 1 - right are empty for right bound `right`
    left = _weighted((1, st.just(-1)), (3, _bounds(0, max_bound)))
    right = _weighted((2, st.sampled_from(sorted({0, gap - 1}))), (1, st.integers(0, gap - 1)))
    return _weighted(
        (3 if allow_causal else 0, st.just((True, (-1, -1)))),
        (2 if allow_causal and allow_window else 0, _causal_windows(_bounds(0, max_bound))),
        (4 if allow_window else 0, st.tuples(left, right).map(lambda w: (False, w))),
    )


# -- boolean masks and packed sequences ------------------------------------------------------



def mask_specs(batch: int, heads: int, seqlen_q: int, seqlen_k: int, *, empty_rows: bool = False):
    """:class:`~flashcheck.cases.maskspec.MaskSpec` objects valid for these sizes, never ``none``.

    Random masks of density from 0 (everything masked) to 1 (nothing), the round values
    0, 1, 0.5, 0.9 and 0.1 often; block-structured masks (tiles of 1 to 16 or the whole
    length); key-padding masks (:func:`key_padding_masks`); each with, now and then, fully
    masked query rows and key columns, in any broadcast shape. ``empty_rows=True`` draws
    only masks with at least one fully masked row. Shrinks towards ``random:0.5``.
    """
    for name, value in (("batch", batch), ("heads", heads), ("seqlen_q", seqlen_q), ("seqlen_k", seqlen_k)):
        _check_int(name, value, minimum=0 if name.startswith("seqlen") else 1)
    _check_bool("empty_rows", empty_rows)
    if empty_rows and seqlen_q == 0:
        raise InvalidArgument("mask_specs(empty_rows=True): needs seqlen_q >= 1")
    return _mask_specs(batch, heads, seqlen_q, seqlen_k, empty_rows)


def _densities():
    return _weighted((3, st.sampled_from((0.5, 0.0, 1.0, 0.9, 0.1))), (2, st.floats(0.0, 1.0)))


@st.composite
def _mask_specs(draw, batch, heads, seqlen_q, seqlen_k, empty_rows, shapes=None, domain=None):
    if shapes == ("B11K",):  # a compile class's key-padding masks
        kind = "key-padding"
    else:
        kind = draw(_weighted((3, st.just("random")), (2, st.just("blocks")),
                              (0 if empty_rows or shapes is not None else 1, st.just("key-padding"))))
    if kind == "key-padding":
        return draw(key_padding_masks(batch, seqlen_k, seqlen_q=seqlen_q, domain=domain))
    fields = {"kind": kind, "density": draw(_densities())}
    if kind == "blocks":
        sizes = sorted({b for b in (2, 4, 1, 8, 16, max(seqlen_q, seqlen_k, 1)) if b >= 1})
        fields["block"] = draw(st.sampled_from(sizes))
    if shapes is None:
        shapes = list(ROW_MASK_SHAPES) if empty_rows else list(MASK_SHAPES)
    fields["shape"] = draw(st.sampled_from(shapes))
    if "Q" in fields["shape"] and seqlen_q > 0:
        low = 1 if empty_rows else 0
        fields["rows"] = draw(_weighted((0 if empty_rows else 3, st.just(0)), (1, st.integers(max(low, 1), seqlen_q))))
    if seqlen_k > 0:
        fields["cols"] = draw(_weighted((3, st.just(0)), (1, st.integers(1, seqlen_k))))
    return MaskSpec(**fields)


def key_padding_masks(batch: int, seqlen_k: int, *, seqlen_q: int | None = None, domain: CaseDomain | None = None):
    """Key-padding :class:`~flashcheck.cases.maskspec.MaskSpec` objects: per batch entry a number
    of valid keys, often 0, 1, ``seqlen_k - 1`` or ``seqlen_k``. Shrinks towards all keys valid.

    With a ``domain`` (and the case's ``seqlen_q``), each entry's valid keys are 0 or a number a
    call of ``seqlen_q`` queries may have inside it: a property calls the implementation on each
    entry's valid keys alone (``padded_batch_matches_unpadded``), and an entry without any makes
    no call. Where none but 0 is, every entry has none."""
    _check_int("batch", batch, minimum=1)
    _check_int("seqlen_k", seqlen_k, minimum=0)
    counts = range(seqlen_k + 1)
    if domain is not None and domain.restricts_lengths:
        _check_int("seqlen_q", seqlen_q, minimum=0)
        counts = [n for n in counts if n == 0 or domain.lengths_outside_because(seqlen_q, n) is None]
    special = sorted((n for n in {seqlen_k, 0, 1, max(seqlen_k - 1, 0)} if n in counts), key=lambda n: -n)
    any_count = st.integers(0, seqlen_k) if isinstance(counts, range) else st.sampled_from(counts)
    length = _weighted((2, st.sampled_from(special)), (1, any_count)) if special else any_count
    return st.lists(length, min_size=batch, max_size=batch).map(
        lambda lengths: MaskSpec(kind="key-padding", key_lengths=tuple(lengths), shape="B11K")
    )


def packed_seqlens(*, sizes: CaseSizes | str | None = None, max_tokens: int | None = None,
                   empty_rows: bool | None = None):
    """Per-sequence ``(nq, nk)`` lengths of a packed batch, at most ``max_tokens`` tokens on
    each side (default: ``sizes.long_seqlen`` and ``isqrt(sizes.max_elements)``).

    One to eight sequences; lengths often 0 (empty on either side), 1, or a block size and
    its neighbours; now and then one long sequence among short ones; ``nq`` and ``nk``
    drawn independently about two times in three. ``empty_rows=True``: some sequence has
    queries but no keys; ``False``: every sequence has a key. Shrinks towards ``((1, 1),)``.
    """
    sizes = _check_sizes(sizes)
    if max_tokens is None:
        max_tokens = min(sizes.long_seqlen, math.isqrt(sizes.max_elements))
    _check_int("max_tokens", max_tokens, minimum=1)
    if empty_rows is not None:
        _check_bool("empty_rows", empty_rows)
    return _packed_seqlens(sizes, max_tokens, empty_rows)


@st.composite
def _packed_seqlens(draw, sizes, max_tokens, empty_rows):
    count = draw(_weighted((2, st.just(1)), (3, st.integers(2, 4)), (1, st.integers(5, 8))))
    short = _weighted((3, st.sampled_from((1, 0, 2, 3))), (2, st.integers(0, max(1, max_tokens // (2 * count)))))
    long_index = draw(_weighted((2, st.just(None)), (1, st.integers(0, count - 1))))
    pairs, used_q, used_k = [], 0, 0
    for index in range(count):
        room_q, room_k = max_tokens - used_q, max_tokens - used_k
        if index == long_index:
            nq = draw(seqlens(sizes=sizes, min_value=0, max_value=max(room_q, 0)))
        else:
            nq = min(draw(short), room_q)
        minimum_k = 1 if empty_rows is False else 0
        if draw(_weighted((1, st.just(True)), (2, st.just(False)))) and minimum_k <= nq <= room_k:
            nk = nq
        elif index == long_index:
            nk = draw(seqlens(sizes=sizes, min_value=min(minimum_k, room_k), max_value=max(room_k, 0)))
        else:
            nk = max(min(draw(short), room_k), min(minimum_k, room_k))
        pairs.append((nq, nk))
        used_q, used_k = used_q + nq, used_k + nk
    if empty_rows:
        with_queries = [i for i, (nq, _) in enumerate(pairs) if nq > 0]
        if with_queries:
            where = draw(st.sampled_from(with_queries))
            pairs[where] = (pairs[where][0], 0)
        else:  # no query anywhere yet, so there is room for one
            pairs[draw(st.integers(0, count - 1))] = (1, 0)
    elif empty_rows is False:
        pairs = [(nq if nk > 0 else 0, nk) for nq, nk in pairs]
    return tuple(pairs)


# -- scale ------------------------------------------------------------------------------------


def softmax_scales():
    """``None`` (the default ``1/sqrt(D)``) about three times in four; otherwise a
    custom positive scale (round values such as 1.0 and 0.125 first, or any in
    ``[1/64, 4]``) or its negative. Shrinks towards ``None``."""
    positive = _positive_scales()
    return _weighted((6, st.none()), (1, positive), (1, positive.map(lambda s: -s)))


def _positive_scales():
    return _weighted(
        (1, st.sampled_from((1.0, 0.5, 0.125, 2.0))),
        (1, st.floats(min_value=1 / 64, max_value=4.0, allow_nan=False, allow_infinity=False)),
    )


# -- cases ------------------------------------------------------------------------------------


def cases(
    *,
    sizes: CaseSizes | str | None = None,
    dtypes=None,
    features=None,
    layouts=None,
    values=None,
    empty_rows: bool | None = None,
    mask: bool | None = None,
    varlen: bool | None = None,
    key_padding: bool = False,
    gqa: bool | None = None,
    domain: CaseDomain | None = None,
    compile_key: tuple[str, ...] | None = None,
):
    """:class:`~flashcheck.cases.case.Case` objects within ``sizes``: dense, with a boolean
    mask, or packed.

    - ``sizes``: a :class:`~flashcheck.cases.sizes.CaseSizes`, its name, or ``None`` for
      :func:`flashcheck.cases.sizes.choose`'s choice for this machine.
    - ``dtypes``: dtype names to draw from (default: the sizes').
    - ``features``: what the implementation supports, as in the protocol's
      ``flashcheck_features``. Without ``"causal"`` no case is causal; without
      ``"window"`` no case has a window other than ``(-1, -1)``; without ``"gqa"``
      ``kv_heads == heads``; without ``"mask"`` no case has an attn_mask; without
      ``"varlen"`` no case is packed; if it names dtypes, only those are drawn. Other
      protocol features (``backward``, ``lse``, ``out``, ...) do not concern the cases and
      are ignored; names outside the protocol's set raise ``InvalidArgument``. ``None``:
      everything.
    - ``layouts``, ``values``: from :data:`flashcheck.cases.case.LAYOUTS` and
      :data:`flashcheck.cases.case.VALUES` (default: all).
    - ``empty_rows``: ``True`` draws only cases where some query has no allowed key
      (:attr:`Case.has_empty_rows`; needs ``"causal"`` or ``"window"``), ``False`` only
      cases without, ``None`` either. Rows may be emptied by the band, by a mask's
      fully masked rows, or by a packed sequence with queries and no keys.
    - ``mask``: ``True`` only cases with an attn_mask (:func:`mask_specs`), ``False`` none,
      ``None`` either when the features allow. ``key_padding=True``: only key-padding masks
      and no band (the padded-batch layout).
    - ``varlen``: ``True`` only packed cases (:func:`packed_seqlens`), ``False`` none,
      ``None`` either when the features allow. Packed cases have ``Tq * Tk * H`` within
      ``max_elements`` like dense ones.
    - ``gqa``: ``True`` only cases with ``kv_heads < heads`` (needs ``"gqa"``), ``False``
      only ``kv_heads == heads``, ``None`` either when the features allow.

    Draw order: dtype; lengths (equal, or independent so that both ``Nq < Nk`` and
    ``Nq > Nk`` occur); the mask given the lengths; heads and batch within what
    ``max_elements`` leaves; head dim, scale, layout, value distribution and seed. Under
    sizes with ``focus`` it first draws a compile class (:func:`compile_classes`; none, one
    time in :data:`FOCUS_ESCAPE`), which fixes the dtype, mode, heads, head-dim choices,
    sign of the scale, layout and, with a mask, its broadcast shape and whether the batch
    is 1; lengths are drawn as above and then moved to the class's residues mod 16.

    - ``domain``: the implementation's declared :class:`~flashcheck.cases.domain.CaseDomain`
      (head dims, lengths, scale, layouts); all but one case in :data:`OUTSIDE_DOMAIN_ODDS`
      lie inside it, the favoured values inside it still favoured. A draw the request forces
      outside (rows emptied by the band under equal lengths) falls outside.
    - ``compile_key``: the implementation's compile key (:func:`flashcheck.protocol.compile_key_of`).
      Under sizes with ``focus``: None draws in Triton's compile classes
      (:func:`flashcheck.cases.compile_classes.compile_classes`), an empty key draws no classes, and
      a key draws in its :func:`~flashcheck.cases.compile_classes.keyed_classes`.

    Raises ``InvalidArgument`` for requests no case can meet, e.g. ``empty_rows=True``
    with features naming neither ``"causal"`` nor ``"window"``, or a domain that allows no
    head dim within the sizes.
    """
    sizes = _check_sizes(sizes)
    dtypes = _choices("dtypes", dtypes, sizes.dtypes)
    if features is None:
        allow_causal = allow_window = allow_gqa = allow_mask = allow_varlen = True
    else:
        if isinstance(features, str) or not all(isinstance(f, str) for f in features):
            raise InvalidArgument(f"features: expected a collection of feature names, got {features!r}")
        features = frozenset(features)
        unknown = features - _FEATURES - set(_DTYPE_NAMES)
        if unknown:
            raise InvalidArgument(
                f"features: unknown {sorted(unknown)}; known: {sorted(_FEATURES | set(_DTYPE_NAMES))}"
            )
        allow_causal, allow_window, allow_gqa = ("causal" in features), ("window" in features), ("gqa" in features)
        allow_mask, allow_varlen = ("mask" in features), ("varlen" in features)
        named = [d for d in dtypes if d in features]
        if features & set(_DTYPE_NAMES):
            if not named:
                raise InvalidArgument(
                    f"features name dtypes {sorted(features & set(_DTYPE_NAMES))}, none of which is "
                    f"among the dtypes drawn {list(dtypes)}"
                )
            dtypes = tuple(named)
    layouts = _choices("layouts", layouts, case_module.LAYOUTS)
    values = _choices("values", values, case_module.VALUES)
    for name, value in (("empty_rows", empty_rows), ("mask", mask), ("varlen", varlen), ("gqa", gqa)):
        if value is not None:
            _check_bool(name, value)
    _check_bool("key_padding", key_padding)
    mask = True if key_padding else mask
    for name, wanted, allowed in (("mask", mask, allow_mask), ("varlen", varlen, allow_varlen), ("gqa", gqa, allow_gqa)):
        if wanted and not allowed:
            raise InvalidArgument(f"{name}=True: needs the {name!r} feature")
    if mask and varlen:
        raise InvalidArgument("mask=True, varlen=True: the protocol's attn_mask is dense only")
    modes = ["dense"] if not (mask or varlen) else []
    if allow_mask and mask is not False and not varlen:
        modes.append("mask")
    if allow_varlen and varlen is not False and not mask:
        modes.append("varlen")
    if empty_rows is False:
        modes = [m for m in modes if m != "mask"]  # a drawn mask may empty rows
    if empty_rows:
        if not (allow_causal or allow_window) and "dense" in modes and len(modes) == 1:
            raise InvalidArgument("empty_rows=True: needs the 'causal', 'window', 'mask' or 'varlen' feature; "
                                  "without a mask no row is empty")
        if not (allow_causal or allow_window):
            modes = [m for m in modes if m != "dense"]
        if sizes.long_seqlen < 2 or sizes.max_elements < 2:
            raise InvalidArgument(f"empty_rows=True: sizes {sizes.name!r} is too small for seqlen_q > seqlen_k")
    if not modes:
        raise InvalidArgument(f"cases: no case meets mask={mask}, varlen={varlen}, empty_rows={empty_rows}")
    domain = _check_domain(domain, sizes)
    if domain.equal_lengths and empty_rows and "mask" in modes:
        # Equal lengths leave a row without keys under a mask only: neither the band (which
        # needs Nq > Nk) nor packing (a sequence with queries and no keys) can.
        modes = ["mask"]
    allow_causal, allow_window = allow_causal and not key_padding, allow_window and not key_padding
    allow_gqa = allow_gqa and gqa is not False
    catalogue = ()
    if sizes.focus and compile_key != ():
        # The whole catalogue depends on the seed alone; focus_start and focus_classes only
        # choose a window of it, wrapping round.
        whole_sizes = dataclasses.replace(sizes, focus_classes=None, focus_start=0)
        if compile_key is None:
            whole = compile_classes(whole_sizes, dtypes, tuple(modes), layouts, allow_gqa, empty_rows, key_padding, gqa)
        else:
            bands = ("none",) + (("causal",) if allow_causal else ()) + (("window",) if allow_window else ())
            whole = keyed_classes(tuple(compile_key), whole_sizes, dtypes, tuple(modes), layouts, bands, allow_gqa,
                                  gqa, domain)
        catalogue = focus_window(whole, sizes)
    return _cases(sizes, dtypes, allow_causal, allow_window, allow_gqa, layouts, values, empty_rows, tuple(modes),
                  key_padding, catalogue, bool(gqa), domain, domain.head_dims_up_to(sizes.max_head_dim))


def _check_domain(domain, sizes: CaseSizes) -> CaseDomain:
    if domain is None:
        return CaseDomain()
    if not isinstance(domain, CaseDomain):
        raise InvalidArgument(f"domain: expected a CaseDomain or None, got {domain!r}")
    problem = domain.no_head_dim_up_to(sizes.max_head_dim)
    if problem is not None:
        raise InvalidArgument(f"domain: {problem}, the largest head dim of the sizes {sizes.name!r}")
    return domain


def _longest_shorter(sizes: CaseSizes) -> int:
    """The largest Nk for which some Nq > Nk fits: Nk < long_seqlen, Nk * (Nk + 1) <= max_elements."""
    nk = min(sizes.long_seqlen - 1, math.isqrt(sizes.max_elements))
    while nk * (nk + 1) > sizes.max_elements:
        nk -= 1
    return nk


@st.composite
def _lengths(draw, sizes: CaseSizes, empty_rows):
    limit, budget = sizes.long_seqlen, sizes.max_elements
    if empty_rows:
        seqlen_k = draw(seqlens(sizes=sizes, max_value=_longest_shorter(sizes)))
        seqlen_q = draw(seqlens(sizes=sizes, min_value=seqlen_k + 1, max_value=min(limit, budget // seqlen_k)))
        return seqlen_q, seqlen_k
    seqlen_q = draw(seqlens(sizes=sizes, max_value=min(limit, budget)))
    equal = draw(_weighted((1, st.just(True)), (2, st.just(False))))
    if equal and seqlen_q * seqlen_q <= budget:
        return seqlen_q, seqlen_q
    return seqlen_q, draw(seqlens(sizes=sizes, max_value=min(limit, budget // seqlen_q)))


@st.composite
def _cases(draw, sizes, dtypes, allow_causal, allow_window, allow_gqa, layouts, values, empty_rows, modes,
           key_padding, catalogue=(), grouped=False, domain=CaseDomain(), domain_head_dims=()):
    # ``domain_head_dims``: the domain's head dims within the sizes, found once per strategy.
    # Inside the domain, all but one draw in OUTSIDE_DOMAIN_ODDS; outside it, and in the
    # escape from the compile classes, everything is drawn as without either.
    inside = domain.restricts and draw(_weighted((OUTSIDE_DOMAIN_ODDS - 1, st.just(True)), (1, st.just(False))))
    if not inside:
        domain = CaseDomain()
    # A compile class pins what decides the compilation.
    focus = draw(_weighted((FOCUS_ESCAPE - 1, st.sampled_from(catalogue)), (1, st.none()))) if catalogue else None
    triton = focus if isinstance(focus, CompileClass) else None
    pins = focus if isinstance(focus, KeyedClass) else KeyedClass(())
    if triton is None:
        dtype = pins.get("dtype") or draw(st.sampled_from(dtypes))
        mode = pins.get("mode") or draw(_weighted(*((4 if m == "dense" else 2, st.just(m)) for m in modes)))
        pinned_heads = _pinned_heads(pins, sizes)
    else:
        dtype, mode = triton.dtype, triton.mode
        pinned_heads = (triton.heads, triton.kv_heads)
    # Pinned heads must fit whatever lengths are drawn.
    sized = sizes if pinned_heads is None else dataclasses.replace(
        sizes, max_elements=max(1, sizes.max_elements // pinned_heads[0]))
    if domain.max_seqlen is not None:
        sized = dataclasses.replace(sized, max_seqlen=min(sized.max_seqlen, domain.max_seqlen),
                                    long_seqlen=min(sized.long_seqlen, domain.max_seqlen))
    seqlens_drawn = None
    if mode == "varlen":
        max_tokens = min(sized.long_seqlen, math.isqrt(sized.max_elements))
        seqlens_drawn = draw(packed_seqlens(sizes=sized, empty_rows=empty_rows))
        if triton is not None:
            seqlens_drawn = pin_packed(seqlens_drawn, triton, max_tokens, empty_rows)
        seqlens_drawn = _pin_longest(seqlens_drawn, pins, max_tokens, empty_rows)
        if domain.restricts:
            seqlens_drawn = _packed_in_domain(seqlens_drawn, domain, max_tokens, empty_rows)
        seqlen_q, seqlen_k = sum(n for n, _ in seqlens_drawn), sum(n for _, n in seqlens_drawn)
        gap = max((nq - nk for nq, nk in seqlens_drawn if nk > 0), default=0)
        max_bound = max(max(pair) for pair in seqlens_drawn) + 1
        min_right = max(0, gap) if empty_rows is False else 0
        band = windows(allow_causal=allow_causal, allow_window=allow_window, max_bound=max_bound, min_right=min_right)
        band_empties = False
    else:
        band_empties = bool(empty_rows and mode == "dense")
        seqlen_q, seqlen_k = draw(_lengths(sized, band_empties))
        if triton is not None:
            seqlen_q, seqlen_k = pin_lengths(seqlen_q, seqlen_k, triton, sized, band_empties)
        seqlen_q, seqlen_k = _pin_dense_lengths(seqlen_q, seqlen_k, pins, sized, band_empties)
        if domain.restricts:
            seqlen_q, seqlen_k = _lengths_in_domain(seqlen_q, seqlen_k, domain, sized, band_empties)
        max_bound = max(seqlen_q, seqlen_k) + 1
        if band_empties:
            band = empty_row_windows(
                seqlen_q, seqlen_k, allow_causal=allow_causal, allow_window=allow_window, max_bound=max_bound
            )
        else:
            min_right = max(0, seqlen_q - seqlen_k) if empty_rows is False else 0
            band = windows(allow_causal=allow_causal, allow_window=allow_window, max_bound=max_bound,
                           min_right=min_right)
    causal, window = draw(_pinned_band(band, pins, allow_causal, allow_window, seqlen_q, seqlen_k, empty_rows,
                                       band_empties, seqlens_drawn))
    if causal and domain.causal_equal_lengths and empty_rows is not True:
        seqlen_q, seqlen_k, seqlens_drawn = _causal_lengths_equal(seqlen_q, seqlen_k, seqlens_drawn, domain)

    scores = max(1, seqlen_q * seqlen_k)
    max_heads = max(1, min(sizes.max_heads, sizes.max_elements // scores))
    if pinned_heads is not None and (triton is not None or pinned_heads[0] <= max_heads):
        heads, kv_heads = pinned_heads
    else:
        heads_drawn = gqa_heads(sizes=sizes, max_heads=max_heads, allow_gqa=allow_gqa)
        if pins.get("gqa_ratio") is not None:
            heads_drawn = _heads_of_ratio(pins.get("gqa_ratio"), max_heads, heads_drawn)
        # Grouped only: where the lengths leave room for one head, no case; hypothesis draws again.
        heads, kv_heads = draw(heads_drawn.filter(lambda pair: pair[1] < pair[0]) if grouped else heads_drawn)
    max_batch = 1 if mode == "varlen" else max(1, min(sizes.max_batch, sizes.max_elements // (heads * scores)))
    if triton is not None and triton.batch_one is not None:
        batch = 1 if triton.batch_one or max_batch < 2 else draw(st.integers(2, max_batch))
    elif pins.get("batch") is not None and pins.get("batch") <= max_batch:
        batch = pins.get("batch")
    else:
        batch = draw(_weighted((1, st.just(1)), (1, st.integers(1, max_batch))))
    mask = MaskSpec()
    if mode == "mask":
        if key_padding:
            mask = draw(key_padding_masks(batch, seqlen_k, seqlen_q=seqlen_q, domain=domain))
        else:
            empties = bool(empty_rows and seqlen_q)
            if triton is None:
                mask = draw(_mask_specs(batch, heads, seqlen_q, seqlen_k, empties, domain=domain))
            else:
                mask = draw(_mask_specs(batch, heads, seqlen_q, seqlen_k, empties, shapes=(triton.mask_shape,),
                                        domain=domain))
    allowed_head_dims = None
    if domain.restricts:
        allowed_head_dims = tuple(d for d in domain_head_dims if domain.allows_head_dim(d, dtype)) or domain_head_dims
    if triton is None:
        head_dim = pins.get("head_dim")
        if head_dim is None or (allowed_head_dims is not None and head_dim not in allowed_head_dims):
            head_dim = draw(_head_dims_within(sizes, allowed_head_dims))
        softmax_scale = _pinned_scale(pins, draw, domain)
        layout = pins.get("layout") or draw(st.sampled_from(_layouts_within(layouts, domain)))
    else:
        in_class = [d for d in triton.head_dims if allowed_head_dims is None or d in allowed_head_dims]
        head_dim = draw(st.sampled_from(in_class) if in_class else _head_dims_within(sizes, allowed_head_dims))
        positive = _positive_scales()
        negative = triton.negative_scale and not domain.positive_scale
        softmax_scale = draw(positive.map(lambda s: -s) if negative else _weighted((6, st.none()), (1, positive)))
        layout = triton.layout if triton.layout in _layouts_within(layouts, domain) else draw(
            st.sampled_from(_layouts_within(layouts, domain)))
    value_kind = draw(st.sampled_from(values))
    seed = draw(st.integers(0, 2**32 - 1))
    drawn = Case(
        batch=batch, seqlen_q=seqlen_q, seqlen_k=seqlen_k, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, dtype=dtype, causal=causal, window=window, softmax_scale=softmax_scale,
        layout=layout, values=value_kind, seed=seed, mask=mask, seqlens=seqlens_drawn,
    )
    # Guaranteed by construction; a failure here is a bug in this module, not in a kernel.
    if empty_rows is not None and drawn.has_empty_rows != empty_rows:
        raise AssertionError(f"strategies.cases(empty_rows={empty_rows}) drew {drawn.spec()}")
    return drawn


# -- inside a declared domain and a keyed compile class ---------------------------------------


def _head_dims_within(sizes: CaseSizes, allowed):
    """:func:`head_dims`, or with ``allowed`` (a domain's head dims up to the sizes' limit)
    those only, its listed head dims favoured."""
    if allowed is None:
        return head_dims(sizes=sizes)
    listed = [d for d in HEAD_DIMS if d in allowed]
    return _weighted((5 if listed else 0, st.sampled_from(listed) if listed else st.nothing()),
                     (2, st.sampled_from(allowed)))


def _layouts_within(layouts, domain: CaseDomain) -> tuple[str, ...]:
    inside = tuple(layout for layout in layouts if domain.layouts is None or layout in domain.layouts)
    return inside or tuple(layouts)


def _fit_length(n: int, domain: CaseDomain, high: int) -> int:
    """``n`` moved to the nearest length the domain allows, the larger first, at most ``high``
    where one is (else the smallest multiple)."""
    multiple = domain.length_multiple
    top = min(high, domain.max_seqlen or high)
    up = -(-n // multiple) * multiple
    if up <= top:
        return max(up, multiple)
    return max((top // multiple) * multiple, multiple)


def _lengths_in_domain(seqlen_q, seqlen_k, domain: CaseDomain, sizes: CaseSizes, band_empties: bool):
    """Dense lengths moved inside ``domain`` within the sizes; as drawn where the request
    (rows emptied by the band, which needs ``seqlen_q > seqlen_k``) cannot be met inside it."""
    limit, budget = sizes.long_seqlen, sizes.max_elements
    nq = _fit_length(max(seqlen_q, 1, domain.min_seqlen_q, domain.min_seqlen_k if domain.equal_lengths else 0),
                     domain, limit)
    nk = nq if domain.equal_lengths else _fit_length(max(seqlen_k, domain.min_seqlen_k), domain,
                                                     min(limit, max(1, budget // nq)))
    if band_empties and nq <= nk:
        nq = _fit_length(nk + 1, domain, min(limit, max(1, budget // nk)))
    if band_empties and nq <= nk:
        return seqlen_q, seqlen_k
    return nq, nk


def _causal_lengths_equal(seqlen_q: int, seqlen_k: int, pairs, domain: CaseDomain):
    """``(seqlen_q, seqlen_k, pairs)`` with each length pair (the dense one, or each packed one)
    made equal, for a domain whose causal lengths are: its shorter side, raised to the domain's
    shortest lengths where it is below them (never past the longer side), so that it stays inside
    the domain and about within the sizes; a causal band then keeps a key on every row."""
    floor = max(domain.min_seqlen_q, domain.min_seqlen_k)

    def equal(pair):
        shorter, longer = min(pair), max(pair)
        side = shorter if shorter >= floor else min(_fit_length(floor, domain, longer), longer)
        return side, side

    if pairs is None:
        side, _ = equal((seqlen_q, seqlen_k))
        return side, side, None
    pairs = tuple(equal(pair) for pair in pairs)
    total = sum(nq for nq, _ in pairs)
    return total, total, pairs


def _packed_in_domain(pairs, domain: CaseDomain, max_tokens: int, empty_rows):
    """Packed ``(nq, nk)`` pairs moved inside ``domain`` (every nonzero length allowed, equal
    lengths equal), dropping trailing sequences until both sides fit ``max_tokens``; as drawn
    where the request cannot be met inside it."""
    fitted = []
    for nq, nk in pairs:
        nq = 0 if nq == 0 and not domain.min_seqlen_q else _fit_length(max(nq, domain.min_seqlen_q), domain,
                                                                         max_tokens)
        nk = nq if domain.equal_lengths else _fit_length(max(nk, domain.min_seqlen_k), domain, max_tokens) if (
            nk or domain.min_seqlen_k) else 0
        fitted.append((nq, nk))
    while len(fitted) > 1 and max(sum(pair[0] for pair in fitted), sum(pair[1] for pair in fitted)) > max_tokens:
        fitted.pop()
    fits = max(sum(pair[0] for pair in fitted), sum(pair[1] for pair in fitted)) <= max_tokens
    empties_ok = empty_rows is None or any(nq > 0 and nk == 0 for nq, nk in fitted) == empty_rows
    return tuple(fitted) if fits and empties_ok else pairs


def _pinned_heads(pins: KeyedClass, sizes: CaseSizes):
    heads = pins.get("heads")
    return None if heads is None or heads[0] > sizes.max_heads else tuple(heads)


def _heads_of_ratio(ratio: int, max_heads: int, otherwise):
    """``(heads, kv_heads)`` of GQA ratio ``ratio`` within ``max_heads``; ``otherwise`` where none fits."""
    if ratio > max_heads:
        return otherwise
    return st.integers(1, max_heads // ratio).map(lambda kv: (ratio * kv, kv))


def _pin_dense_lengths(seqlen_q, seqlen_k, pins: KeyedClass, sizes: CaseSizes, band_empties: bool):
    """Dense lengths with a keyed class's pinned ``seqlen_q``/``seqlen_k``, where they keep the
    sizes' budget and (``band_empties``) ``seqlen_q > seqlen_k``."""
    nq, nk = seqlen_q, seqlen_k
    residues = pins.get("length_residues")
    if residues is not None:
        nk = snap(nk, residues[1], 1, sizes.long_seqlen) or nk
        nq = snap(nq, residues[0], nk + 1 if band_empties else 1, sizes.long_seqlen) or nq
    nq, nk = pins.get("seqlen_q", nq), pins.get("seqlen_k", nk)  # an exact length before its residue
    if nq * nk > sizes.max_elements or max(nq, nk) > sizes.long_seqlen or (band_empties and nq <= nk):
        return seqlen_q, seqlen_k
    return nq, nk


def _pin_longest(pairs, pins: KeyedClass, max_tokens: int, empty_rows):
    """Packed pairs whose longest sequence on each side takes a keyed class's pinned length,
    where the tokens still fit and the ``empty_rows`` request still holds."""
    for side, name in ((0, "seqlen_q"), (1, "seqlen_k")):
        pinned = pins.get(name)
        if pinned is None:
            continue
        lengths = [pair[side] for pair in pairs]
        longest = lengths.index(max(lengths))
        changed = [list(pair) for pair in pairs]
        changed[longest][side] = pinned
        if sum(pair[side] for pair in changed) <= max_tokens and (
                empty_rows is None or any(nq > 0 and nk == 0 for nq, nk in changed) == empty_rows):
            pairs = tuple(tuple(pair) for pair in changed)
    return pairs


def _pinned_band(band, pins: KeyedClass, allow_causal, allow_window, seqlen_q, seqlen_k, empty_rows,
                 band_empties: bool, seqlens_drawn):
    """``band`` (the ``(causal, window)`` strategy drawn for these lengths), kept to a keyed
    class's pinned window or band kind where a case of these lengths can have it."""
    window = pins.get("window")
    if window is not None:
        pair = (True, (window[0], -1)) if window[1] == 0 else (False, tuple(window))
        if _band_fits(pair, allow_causal, allow_window, seqlen_q, seqlen_k, empty_rows, band_empties, seqlens_drawn):
            return st.just(pair)
    kind = pins.get("band")
    if kind is None:
        return band
    if kind == "none":
        return band if band_empties else st.just((False, (-1, -1)))
    plain_causal = (True, (-1, -1))
    if kind == "causal":
        # A right bound of 0 may leave rows without keys where they must keep them.
        fits = _band_fits(plain_causal, allow_causal, allow_window, seqlen_q, seqlen_k, empty_rows, band_empties,
                          seqlens_drawn)
        return st.just(plain_causal) if fits else band
    return band.filter(lambda drawn: band_kind(_effective(drawn)) == "window") if allow_window else band


def _effective(drawn) -> tuple[int, int]:
    causal, (left, right) = drawn
    return (left, 0) if causal else (left, right)


def _band_fits(pair, allow_causal, allow_window, seqlen_q, seqlen_k, empty_rows, band_empties, seqlens_drawn) -> bool:
    kind = band_kind(_effective(pair))
    if (kind == "causal" and not allow_causal) or (kind == "window" and not allow_window):
        return False
    probe = Case(seqlen_q=seqlen_q, seqlen_k=seqlen_k, causal=pair[0], window=pair[1],
                 **({} if seqlens_drawn is None else {"seqlens": seqlens_drawn, "batch": 1}))
    if band_empties:
        return probe.has_empty_rows
    return empty_rows is None or probe.has_empty_rows == empty_rows


def _pinned_scale(pins: KeyedClass, draw, domain: CaseDomain):
    pairs = dict(pins.pins)
    if "softmax_scale" in pairs:
        return pairs["softmax_scale"]
    positive = _positive_scales()
    sign = pins.get("scale_sign")
    if sign == "negative":
        return draw(positive.map(lambda s: -s))
    if sign == "positive" or domain.positive_scale:
        return draw(_weighted((6, st.none()), (1, positive)))
    return draw(softmax_scales())
