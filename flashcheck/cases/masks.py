"""Which keys a query may attend: the protocol's causal and sliding-window band, a boolean
``attn_mask`` ANDed with it, and the block-diagonal "document" mask of packed sequences.

The band is aligned bottom-right: with ``offset = Nk - Nq``, query ``i`` may attend key
``j`` iff ``i + offset - left <= j <= i + offset + right``, where a bound of ``-1`` is
unbounded. ``causal=True`` is the window ``(left, 0)``. For ``Nq = 3, Nk = 5`` (offset 2)
the causal band is::

          keys 0 1 2 3 4
    query 0    x x x . .
    query 1    x x x x .
    query 2    x x x x x

and with ``Nq = 5, Nk = 3`` (offset -2) queries 0 and 1 see no key at all: their output
is 0 and their lse is ``-inf``.

:func:`dense_problem` reads a dense call's arguments once for the attentions that
flashcheck computes itself (:mod:`flashcheck.oracle.reference`, :mod:`flashcheck.oracle.same_precision`):
its sizes, its scale, its band and its checked mask, and the query chunks to compute it in.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

UNBOUNDED = -1


def effective_window(causal: bool, window: tuple[int, int]) -> tuple[int, int]:
    """Return the ``(left, right)`` band that ``causal`` and ``window`` describe together.

    ``-1`` stays unbounded. ``causal=True`` sets the right bound to 0; combined with a
    window whose right bound is neither -1 nor 0 it is contradictory and raises ValueError.
    """
    left, right = validate_window(window)
    if causal:
        if right not in (UNBOUNDED, 0):
            raise ValueError(
                f"window: causal=True fixes the right bound to 0, got window={window!r}; "
                "pass window=(left, -1) or (left, 0) with causal, or drop causal"
            )
        right = 0
    return left, right


def validate_window(window) -> tuple[int, int]:
    """Check that ``window`` is a pair of ints, each -1 (unbounded) or >= 0."""
    if (
        not isinstance(window, (tuple, list))
        or len(window) != 2
        or not all(isinstance(w, int) and not isinstance(w, bool) for w in window)
    ):
        raise TypeError(f"window: expected a pair of ints (left, right), got {window!r}")
    if any(w < UNBOUNDED for w in window):
        raise ValueError(f"window: each bound must be -1 (unbounded) or >= 0, got {window!r}")
    return int(window[0]), int(window[1])


def band(rows: torch.Tensor, seqlen_q: int, seqlen_k: int, left: int, right: int) -> torch.Tensor:
    """Boolean ``(len(rows), seqlen_k)``: True where query ``rows[r]`` may attend key ``j``.

    ``left`` and ``right`` come from :func:`effective_window` (-1 = unbounded).
    """
    offset = seqlen_k - seqlen_q
    keys = torch.arange(seqlen_k, device=rows.device)
    diagonal = rows[:, None] + offset  # the key aligned with each query
    allowed = torch.ones(len(rows), seqlen_k, dtype=torch.bool, device=rows.device)
    if left != UNBOUNDED:
        allowed &= keys[None, :] >= diagonal - left
    if right != UNBOUNDED:
        allowed &= keys[None, :] <= diagonal + right
    return allowed


def query_chunks(seqlen_q, seqlen_k, left, right, *, elements_per_row, budget, device, attn_mask=None):
    """Yield ``(rows, allowed)`` over the queries in chunks of at most ``budget`` elements.

    ``elements_per_row`` is what one query row costs (e.g. ``B * H * Nk`` scores);
    ``allowed`` is the band for ``rows`` AND the rows of ``attn_mask`` (a boolean tensor
    broadcastable to ``(B, H, Nq, Nk)``, or None), shaped ``(B|1, H|1, len(rows), Nk)``.
    Yields nothing when there are no keys.
    """
    if seqlen_k == 0:
        return
    rows_per_chunk = max(1, budget // max(1, elements_per_row))
    causal, window = False, (left, right)
    for start in range(0, seqlen_q, rows_per_chunk):
        rows = torch.arange(start, min(start + rows_per_chunk, seqlen_q), device=device)
        yield rows, allowed(seqlen_q, seqlen_k, causal=causal, window=window, attn_mask=attn_mask,
                            rows=rows, device=device)


def count_keys(seqlen_q, seqlen_k, left, right, *, attn_mask=None, device="cpu") -> torch.Tensor:
    """Keys each query may attend under the band AND ``attn_mask``: int64 ``(B|1, H|1, Nq)``."""
    if attn_mask is None:
        return keys_per_row(seqlen_q, seqlen_k, left, right).to(device)[None, None]
    mask = as_4d(attn_mask)
    counts = torch.zeros(mask.shape[0], mask.shape[1], seqlen_q, dtype=torch.int64, device=device)
    for rows, ok in query_chunks(seqlen_q, seqlen_k, left, right, elements_per_row=mask.shape[0] * mask.shape[1]
                                 * max(seqlen_k, 1), budget=1 << 24, device=device, attn_mask=attn_mask):
        counts[:, :, rows] = ok.sum(dim=-1)
    return counts


# -- general masks: band AND a boolean attn_mask, and packed documents --------------------------


def check_attn_mask(attn_mask, batch: int, heads: int, seqlen_q: int, seqlen_k: int) -> torch.Tensor:
    """Check that ``attn_mask`` is a boolean tensor broadcastable to ``(B, H, Nq, Nk)``
    (at most 4 dims); return it viewed as 4 dims, each either full-size or 1."""
    if not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool:
        raise TypeError(
            f"attn_mask: expected a bool tensor (True = attend), got {getattr(attn_mask, 'dtype', type(attn_mask))}"
        )
    shape = (batch, heads, seqlen_q, seqlen_k)
    try:
        fits = attn_mask.dim() <= 4 and torch.broadcast_shapes(attn_mask.shape, shape) == torch.Size(shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"attn_mask: shape {tuple(attn_mask.shape)} does not broadcast to (B, H, Nq, Nk) {shape}")
    return as_4d(attn_mask)


def as_4d(mask: torch.Tensor) -> torch.Tensor:
    """A mask broadcastable to ``(B, H, Nq, Nk)`` viewed with all four dims (missing leading
    dims as 1)."""
    return mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))


def sequence_lengths(name: str, cu_seqlens, total: int) -> list[int]:
    """The per-sequence lengths of cumulative offsets ``cu_seqlens`` over ``total`` tokens.

    ``cu_seqlens`` must be a 1-D int32 tensor ``(S + 1,)`` starting at 0, non-decreasing and
    ending at ``total``; ``name`` (e.g. ``"cu_seqlens_q"``) is named in the error otherwise.
    """
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dtype != torch.int32 or cu_seqlens.dim() != 1:
        raise TypeError(f"{name}: expected a 1-D int32 tensor of cumulative offsets, got {_describe(cu_seqlens)}")
    offsets = cu_seqlens.tolist()
    if not offsets or offsets[0] != 0 or offsets[-1] != total:
        raise ValueError(f"{name}: must start at 0 and end at the token count {total}, got {offsets}")
    lengths = [b - a for a, b in zip(offsets, offsets[1:])]
    if any(n < 0 for n in lengths):
        raise ValueError(f"{name}: offsets must be non-decreasing, got {offsets}")
    return lengths


def packed_lengths(cu_seqlens_q, cu_seqlens_k, total_q: int, total_k: int) -> tuple[list[int], list[int]]:
    """Per-sequence query and key lengths of a packed problem, checked as in
    :func:`sequence_lengths` and for the same number of sequences on both sides."""
    lengths_q = sequence_lengths("cu_seqlens_q", cu_seqlens_q, total_q)
    lengths_k = sequence_lengths("cu_seqlens_k", cu_seqlens_k, total_k)
    if len(lengths_q) != len(lengths_k):
        raise ValueError(f"cu_seqlens_k: {len(lengths_k)} sequences, but cu_seqlens_q has {len(lengths_q)}")
    return lengths_q, lengths_k


def _describe(x) -> str:
    return f"{x.dtype} tensor of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else repr(x)


def _documents(cu_seqlens: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For token indices ``rows``: the index of the sequence each belongs to and its
    position in that sequence. Empty sequences own no token (searchsorted ``right``)."""
    offsets = cu_seqlens.to(device=rows.device, dtype=torch.int64)
    sequence = torch.searchsorted(offsets, rows, right=True) - 1
    return sequence, rows - offsets[sequence]


def document(cu_seqlens_q, cu_seqlens_k, left: int, right: int, rows: torch.Tensor) -> torch.Tensor:
    """Boolean ``(len(rows), Tk)`` for packed sequences: query token ``rows[r]`` may attend
    key token ``j`` iff both belong to the same sequence ``s`` and, at positions ``i`` and
    ``j'`` within it, ``i + nk_s - nq_s - left <= j' <= i + nk_s - nq_s + right`` (the band
    of :func:`band`, aligned bottom-right per sequence; -1 unbounded)."""
    device = rows.device
    cq = cu_seqlens_q.to(device=device, dtype=torch.int64)
    ck = cu_seqlens_k.to(device=device, dtype=torch.int64)
    keys = torch.arange(int(ck[-1]), device=device)
    seq_q, pos_q = _documents(cq, rows)
    seq_k, pos_k = _documents(ck, keys)
    nq, nk = cq[1:] - cq[:-1], ck[1:] - ck[:-1]
    diagonal = pos_q + (nk - nq)[seq_q]  # the key position aligned with each query, in its sequence
    allowed = seq_q[:, None] == seq_k[None, :]
    if left != UNBOUNDED:
        allowed &= pos_k[None, :] >= diagonal[:, None] - left
    if right != UNBOUNDED:
        allowed &= pos_k[None, :] <= diagonal[:, None] + right
    return allowed


def allowed(seqlen_q: int, seqlen_k: int, *, causal=False, window=(-1, -1), attn_mask=None,
            cu_seqlens_q=None, cu_seqlens_k=None, rows=None, device=None) -> torch.Tensor:
    """The keys each query may attend, as a boolean tensor broadcastable to ``(B, H, Nq, Nk)``.

    Dense: the band of ``causal``/``window`` AND ``attn_mask`` (if given), of shape
    ``(B|1, H|1, len(rows), Nk)``. Packed (``cu_seqlens_q`` and ``cu_seqlens_k`` given):
    ``seqlen_q``, ``seqlen_k`` are the token counts Tq, Tk and the result is the
    block-diagonal :func:`document` mask ``(1, 1, len(rows), Tk)`` with the band per
    sequence (a batch of one). ``rows`` (default: all queries) selects query rows, so that
    callers can work in chunks; ``device`` defaults to ``attn_mask``'s or the CPU.
    """
    left, right = effective_window(causal, window)
    if device is None:
        device = attn_mask.device if isinstance(attn_mask, torch.Tensor) else "cpu"
    if rows is None:
        rows = torch.arange(seqlen_q, device=device)
    if (cu_seqlens_q is None) != (cu_seqlens_k is None):
        raise ValueError("cu_seqlens_q, cu_seqlens_k: give both (packed sequences) or neither (dense)")
    if cu_seqlens_q is not None:
        if attn_mask is not None:
            raise ValueError("attn_mask: the protocol's attn_mask is dense only; not with cu_seqlens_q/cu_seqlens_k")
        packed_lengths(cu_seqlens_q, cu_seqlens_k, seqlen_q, seqlen_k)
        return document(cu_seqlens_q, cu_seqlens_k, left, right, rows)[None, None]
    result = band(rows, seqlen_q, seqlen_k, left, right)[None, None]
    if attn_mask is not None:
        mask = as_4d(attn_mask)
        rows_of_mask = rows if mask.shape[2] > 1 else rows.new_zeros(len(rows))
        result = result & mask.to(device)[:, :, rows_of_mask]
    return result


def keys_per_row(seqlen_q: int, seqlen_k: int, left: int, right: int) -> torch.Tensor:
    """Number of keys each query may attend in the band, an int64 tensor of length ``seqlen_q``."""
    rows = torch.arange(seqlen_q)
    diagonal = rows + (seqlen_k - seqlen_q)
    lo = torch.zeros_like(rows) if left == UNBOUNDED else (diagonal - left).clamp(min=0)
    hi = torch.full_like(rows, seqlen_k - 1) if right == UNBOUNDED else (diagonal + right).clamp(max=seqlen_k - 1)
    return (hi - lo + 1).clamp(min=0)


# -- one dense call, as flashcheck's own attentions read it ---------------------------------------


class DenseProblem(NamedTuple):
    """A dense attention call's sizes, softmax scale, band and mask (see :func:`dense_problem`)."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads: int
    kv_heads: int
    head_dim: int
    scale: float  # softmax_scale, or 1/sqrt(head_dim) when it is None
    left: int  # the band, as effective_window gives it (-1 = unbounded)
    right: int
    attn_mask: torch.Tensor | None  # checked and viewed as 4 dims (check_attn_mask), on q's device
    device: torch.device  # q's

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.heads // self.kv_heads

    def query_chunks(self, budget: int):
        """:func:`query_chunks` over this call's queries, a row costing ``B * H * Nk`` elements."""
        return query_chunks(
            self.seqlen_q, self.seqlen_k, self.left, self.right,
            elements_per_row=self.batch * self.heads * self.seqlen_k, budget=budget, device=self.device,
            attn_mask=self.attn_mask,
        )


def dense_problem(q, k, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None) -> DenseProblem:
    """Read the protocol's dense arguments: q ``(B, Nq, H, D)`` and k ``(B, Nk, Hkv, D)`` give
    the sizes; ``softmax_scale`` defaults to ``1/sqrt(D)``; ``causal`` and ``window`` become
    the band (:func:`effective_window`, which raises on a contradiction); ``attn_mask`` is
    checked (:func:`check_attn_mask`) and moved to q's device."""
    batch, seqlen_q, heads, head_dim = q.shape
    seqlen_k, kv_heads = k.shape[1], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    left, right = effective_window(causal, window)
    if attn_mask is not None:
        attn_mask = check_attn_mask(attn_mask, batch, heads, seqlen_q, seqlen_k).to(q.device)
    return DenseProblem(batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim, scale, left, right, attn_mask, q.device)
