"""Which keys a query may attend: the protocol's causal and sliding-window band.

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
"""

from __future__ import annotations

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


def keys_per_row(seqlen_q: int, seqlen_k: int, left: int, right: int) -> torch.Tensor:
    """Number of keys each query may attend, as an int64 tensor of length ``seqlen_q``."""
    rows = torch.arange(seqlen_q)
    diagonal = rows + (seqlen_k - seqlen_q)
    lo = torch.zeros_like(rows) if left == UNBOUNDED else (diagonal - left).clamp(min=0)
    hi = torch.full_like(rows, seqlen_k - 1) if right == UNBOUNDED else (diagonal + right).clamp(max=seqlen_k - 1)
    return (hi - lo + 1).clamp(min=0)


def query_chunks(seqlen_q, seqlen_k, left, right, *, elements_per_row, budget, device):
    """Yield ``(rows, allowed)`` over the queries in chunks of at most ``budget`` elements.

    ``elements_per_row`` is what one query row costs (e.g. ``B * H * Nk`` scores);
    ``allowed`` is :func:`band` for ``rows``. Yields nothing when there are no keys.
    """
    if seqlen_k == 0:
        return
    rows_per_chunk = max(1, budget // max(1, elements_per_row))
    for start in range(0, seqlen_q, rows_per_chunk):
        rows = torch.arange(start, min(start + rows_per_chunk, seqlen_q), device=device)
        yield rows, band(rows, seqlen_q, seqlen_k, left, right)
