"""Packed variable-length problems seen as a dense batch of one.

The protocol's varlen call takes q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)`` and cumulative
offsets ``cu_seqlens_q``, ``cu_seqlens_k``; it returns out ``(Tq, H, D)`` and lse
``(H, Tq)``. Exactly the same numbers are those of dense attention on the batch of one
``(1, Tq, H, D)``, ``(1, Tk, Hkv, D)`` under the block-diagonal document mask
(:func:`flashcheck.cases.masks.document`, the causal/window band applied per sequence), with out
``(1, Tq, H, D)`` and lse ``(1, H, Tq)``. :func:`as_dense` makes that translation for the
reference, the same-precision attention and the tolerance model; :class:`Packing` maps
indices back to ``(sequence, position)`` for reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from flashcheck.cases import masks

VARLEN_ARGUMENTS = ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k")


@dataclass(frozen=True)
class Packing:
    """The sequence boundaries of a packed problem, as Python lists of offsets."""

    offsets_q: tuple[int, ...]
    offsets_k: tuple[int, ...]

    def locate(self, side: str, token: int) -> tuple[int, int]:
        """``(sequence, position)`` of query (``side="q"``) or key (``"k"``) token ``token``."""
        offsets = self.offsets_q if side == "q" else self.offsets_k
        sequence = max(s for s in range(len(offsets) - 1) if offsets[s] <= token < offsets[s + 1])
        return sequence, token - offsets[sequence]

    def describe(self, name: str, index) -> str:
        """Where ``index`` (in the packed output ``name``) lies: sequence and position."""
        side = "k" if name in ("k", "v", "dk", "dv") else "q"
        token = index[1] if name == "lse" else index[0]
        sequence, position = self.locate(side, int(token))
        return f"sequence {sequence}, position {position}"


def check_varlen_arguments(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> Packing:
    """Validate a packed call's arguments; errors name the argument."""
    if q.dim() != 3 or k.dim() != 3 or v.dim() != 3:
        raise ValueError(
            f"q, k, v: packed sequences need q (Tq, H, D) and k, v (Tk, Hkv, D); got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    lengths_q, lengths_k = masks.packed_lengths(cu_seqlens_q, cu_seqlens_k, q.shape[0], k.shape[0])
    for name, value, lengths in (("max_seqlen_q", max_seqlen_q, lengths_q), ("max_seqlen_k", max_seqlen_k, lengths_k)):
        if not isinstance(value, int) or isinstance(value, bool) or value < max(lengths, default=0):
            raise ValueError(f"{name}: expected an int at least the longest sequence {max(lengths, default=0)}, "
                             f"got {value!r}")
    return Packing(tuple(cu_seqlens_q.tolist()), tuple(cu_seqlens_k.tolist()))


def as_dense(q, k, v, kwargs: dict):
    """``(q, k, v, dense_kwargs, packing)``: a packed problem as a batch of one under its
    document mask (``packing`` a :class:`Packing`), or a dense one unchanged (``None``).

    ``kwargs`` are the protocol's keyword arguments; the dense ones carry the band inside
    ``attn_mask`` (``causal=False``, ``window=(-1, -1)``)."""
    kwargs = dict(kwargs)
    varlen = {name: kwargs.pop(name, None) for name in VARLEN_ARGUMENTS}
    if all(value is None for value in varlen.values()):
        return q, k, v, kwargs, None
    if kwargs.get("attn_mask") is not None:
        raise ValueError("attn_mask: the protocol's attn_mask is dense only; not with cu_seqlens_q/cu_seqlens_k")
    packing = check_varlen_arguments(q, k, v, **varlen)
    left, right = masks.effective_window(kwargs.pop("causal", False), kwargs.pop("window", (-1, -1)))
    rows = torch.arange(q.shape[0], device=q.device)
    kwargs["attn_mask"] = masks.document(varlen["cu_seqlens_q"], varlen["cu_seqlens_k"], left, right, rows)[None, None]
    return q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), kwargs, packing


def to_packed(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """A dense batch-of-one result back in the packed layout: drop the batch dimension."""
    if tensor.shape[0] != 1:
        raise ValueError(f"{name}: expected a batch of one, got shape {tuple(tensor.shape)}")
    return tensor[0]


def to_dense(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """A packed per-token tensor (out, dO, lse, ...) as a batch of one."""
    return None if tensor is None else tensor.unsqueeze(0)
