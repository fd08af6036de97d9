"""A boolean ``attn_mask`` described by its structure, drawn from a seed.

A :class:`MaskSpec` is what a :class:`~flashcheck.cases.case.Case` records about its mask: a
kind with its parameters, some fully masked rows and columns, and which dimensions of
``(B, H, Nq, Nk)`` the tensor has (the others are broadcast). :meth:`MaskSpec.draw` makes
the tensor from a generator, so the mask replays from the case's seed like q, k and v.

One-line form (the value of ``mask=`` in a case spec), items separated by commas::

    none
    random:0.3                     each entry True (attend) with probability 0.3
    blocks:4:0.5                   4 x 4 tiles, each wholly True with probability 0.5
    key-padding:5/0/7              per batch entry b, keys j < length[b] (shape B11K)
    random:0.9,rows:2,cols:1       ... then 2 query rows and 1 key column fully masked
    random:0.5,shape:B1QK          a (B, 1, Nq, Nk) tensor: one mask per batch, shared by heads

``shape`` names the tensor's dimensions, aligned right against ``BHQK``: a letter keeps
that dimension, ``1`` broadcasts it, and a shorter string gives a tensor of fewer dims
(``QK`` is ``(Nq, Nk)``). The key dimension is never broadcast. Fully masked rows and
columns are chosen independently in every slice of the tensor's leading dimensions.
"""

from __future__ import annotations

import dataclasses
import math

import torch

KINDS = ("none", "random", "blocks", "key-padding")
_DIMS = "BHQK"


@dataclasses.dataclass(frozen=True)
class MaskSpec:
    kind: str = "none"
    density: float = 1.0  # random, blocks: probability that an entry (a tile) is allowed
    block: int = 1  # blocks: tile size
    key_lengths: tuple[int, ...] = ()  # key-padding: allowed keys per batch entry
    rows: int = 0  # query rows made fully masked
    cols: int = 0  # key columns made fully masked
    shape: str = "BHQK"

    def __post_init__(self):
        object.__setattr__(self, "key_lengths", tuple(self.key_lengths))
        if self.kind not in KINDS:
            raise ValueError(f"mask: kind must be one of {KINDS}, got {self.kind!r}")
        if isinstance(self.density, bool) or not isinstance(self.density, (int, float)) or not (
            0.0 <= self.density <= 1.0
        ):
            raise ValueError(f"mask: density must be a number in [0, 1], got {self.density!r}")
        object.__setattr__(self, "density", float(self.density))
        for name in ("block", "rows", "cols"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "block" else 0):
                raise ValueError(f"mask: {name} must be a {'positive' if name == 'block' else 'non-negative'} int, "
                                 f"got {value!r}")
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in self.key_lengths):
            raise ValueError(f"mask: key-padding lengths must be non-negative ints, got {self.key_lengths!r}")
        if not (1 <= len(self.shape) <= 4 and self.shape.endswith("K")
                and all(c in ("1", _DIMS[4 - len(self.shape) + n]) for n, c in enumerate(self.shape))):
            raise ValueError(
                f"mask: shape must be a suffix of BHQK with broadcast dims written 1 and K kept "
                f"(e.g. BHQK, B1QK, 1HQK, BH1K, QK), got {self.shape!r}"
            )
        if self.kind == "none" and (self.density, self.block, self.key_lengths, self.rows, self.cols,
                                    self.shape) != (1.0, 1, (), 0, 0, "BHQK"):
            raise ValueError(f"mask: kind 'none' takes no parameters, got {self.text()!r}")
        if self.kind == "key-padding":
            if not self.key_lengths:
                raise ValueError("mask: key-padding needs one key length per batch entry, e.g. key-padding:5/7")
            if self.shape != "B11K":
                raise ValueError(f"mask: key-padding has shape B11K, got shape {self.shape!r}")
        elif self.key_lengths:
            raise ValueError(f"mask: key lengths belong to kind key-padding, not {self.kind!r}")
        if self.rows and "Q" not in self.shape:
            raise ValueError(f"mask: rows:{self.rows} needs the query dimension in the shape, got {self.shape!r}")

    @property
    def is_none(self) -> bool:
        return self.kind == "none"

    # -- one-line form ------------------------------------------------------------------------
    def text(self) -> str:
        """The one-line form that :meth:`parse` reads back."""
        if self.kind == "none":
            return "none"
        head = {
            "random": f"random:{self.density!r}",
            "blocks": f"blocks:{self.block}:{self.density!r}",
            "key-padding": "key-padding:" + "/".join(str(n) for n in self.key_lengths),
        }[self.kind]
        options = [f"rows:{self.rows}"] if self.rows else []
        options += [f"cols:{self.cols}"] if self.cols else []
        options += [f"shape:{self.shape}"] if self.shape != "BHQK" and self.kind != "key-padding" else []
        return ",".join([head, *options])

    def __str__(self) -> str:
        return self.text()

    @classmethod
    def parse(cls, text: str) -> "MaskSpec":
        """Read the one-line form; raises ValueError naming ``mask`` on malformed text."""
        try:
            head, *options = text.split(",")
            kind, *params = head.split(":")
            fields = {"kind": kind}
            if kind == "random" and len(params) == 1:
                fields["density"] = float(params[0])
            elif kind == "blocks" and len(params) == 2:
                fields["block"], fields["density"] = int(params[0]), float(params[1])
            elif kind == "key-padding" and len(params) == 1:
                fields["key_lengths"] = tuple(int(n) for n in params[0].split("/"))
                fields["shape"] = "B11K"
            elif params or kind not in ("none",):
                raise ValueError(f"bad parameters {params!r} for kind {kind!r}")
            for option in options:
                name, value = option.split(":")
                if name not in ("rows", "cols", "shape"):
                    raise ValueError(f"unknown option {name!r}")
                fields[name] = value if name == "shape" else int(value)
        except ValueError as error:
            if str(error).startswith("mask:"):
                raise
            raise ValueError(
                f"mask: cannot parse {text!r} ({error}); expected e.g. none, random:0.3, blocks:4:0.5, "
                "key-padding:5/7, with options ,rows:N ,cols:N ,shape:B1QK"
            ) from None
        return cls(**fields)

    # -- against a case's dimensions ------------------------------------------------------
    def tensor_shape(self, batch: int, heads: int, seqlen_q: int, seqlen_k: int) -> tuple[int, ...]:
        sizes = dict(zip(_DIMS, (batch, heads, seqlen_q, seqlen_k)))
        offset = 4 - len(self.shape)
        return tuple(1 if c == "1" else sizes[_DIMS[offset + n]] for n, c in enumerate(self.shape))

    def validate(self, batch: int, seqlen_q: int, seqlen_k: int) -> None:
        """Check the spec against a case's sizes; errors name ``mask``."""
        if self.kind == "key-padding":
            if len(self.key_lengths) != batch:
                raise ValueError(f"mask: key-padding needs {batch} lengths (one per batch entry), "
                                 f"got {len(self.key_lengths)}")
            if any(n > seqlen_k for n in self.key_lengths):
                raise ValueError(f"mask: key-padding lengths must be <= seqlen_k={seqlen_k}, got {self.key_lengths}")
        if self.rows > seqlen_q:
            raise ValueError(f"mask: rows:{self.rows} exceeds seqlen_q={seqlen_q}")
        if self.cols > seqlen_k:
            raise ValueError(f"mask: cols:{self.cols} exceeds seqlen_k={seqlen_k}")

    def draw(self, batch: int, heads: int, seqlen_q: int, seqlen_k: int, generator: torch.Generator) -> torch.Tensor:
        """The boolean mask (True = attend) on the CPU, of :meth:`tensor_shape`."""
        shape = self.tensor_shape(batch, heads, seqlen_q, seqlen_k)
        full = (1,) * (4 - len(shape)) + shape  # work in 4 dims, reshape back at the end
        if self.kind == "random":
            mask = torch.rand(full, generator=generator) < self.density
        elif self.kind == "blocks":
            tiles = full[:2] + (math.ceil(full[2] / self.block), math.ceil(full[3] / self.block))
            mask = torch.rand(tiles, generator=generator) < self.density
            mask = mask.repeat_interleave(self.block, dim=2).repeat_interleave(self.block, dim=3)
            mask = mask[:, :, : full[2], : full[3]]
        elif self.kind == "key-padding":
            lengths = torch.tensor(self.key_lengths)[:, None, None, None]
            mask = torch.arange(full[3])[None, None, None, :] < lengths
        else:
            mask = torch.ones(full, dtype=torch.bool)
        mask = mask.clone()
        if self.rows:
            chosen = _chosen(full[:2] + (full[2],), self.rows, generator)  # (b, h, Nq) True where masked
            mask &= ~chosen[..., None]
        if self.cols:
            chosen = _chosen(full[:2] + (full[3],), self.cols, generator)  # (b, h, Nk) True where masked
            mask &= ~chosen[:, :, None, :]
        return mask.reshape(shape)


def _chosen(shape, count: int, generator: torch.Generator) -> torch.Tensor:
    """Boolean ``shape``: True at ``count`` positions of the last dim, chosen per slice."""
    order = torch.rand(shape, generator=generator).argsort(dim=-1)
    chosen = torch.zeros(shape, dtype=torch.bool)
    return chosen.scatter(-1, order[..., :count], True)

