"""How big drawn cases may be.

A :class:`CaseSizes` bounds the structure that :mod:`flashcheck.cases.strategies` draws: batch,
heads, GQA ratio, sequence lengths, head dim, the kernel block sizes whose neighbours
(``b - 1``, ``b``, ``b + 1``) are worth drawing often, the dtypes, and ``max_elements``, a
cap on ``batch * heads * seqlen_q * seqlen_k`` (the number of attention scores) so that one
case stays cheap for both the kernel and the float64 reference. Two are named (the
``--size`` of the command line, ``--flashcheck-size`` in pytest):

- :data:`INTERPRETER`: for Triton's CPU interpreter (32 x 16 blocks), lengths up to 80
  so that a case still spans several blocks, at most 2^16 scores per case;
- :data:`GPU`: real block sizes (32, 64, 128), lengths up to 2048 and now and then up to
  8192, at most 2^26 scores per case, drawn compile-aware (``focus``).

**Compile-aware drawing** (``focus``). On a GPU a drawn case costs milliseconds to run and
seconds to compile whenever its Triton specialisation is new, so sizes with ``focus``
draw most cases inside a few *compile classes* (:func:`flashcheck.cases.compile_classes.compile_classes`):
each pins what decides a compilation (dtype, packed or masked, head-dim bucket and its
residue, sign of the scale, layout, head counts, the lengths' residues mod 16) and leaves
the rest free (lengths within their residue, windows, masks, batch, values, seed). The
classes jointly reach every pair of kernel-variant choices (dtype, head-dim tile, full tile
or not, mode, sign of the scale); one case in :data:`flashcheck.cases.compile_classes.FOCUS_ESCAPE` is
drawn without them, so that every case stays drawable. ``focus_seed`` picks the classes:
another seed, other classes (each fuzz run draws one, shared by its workers, each of which
starts at the class ``focus_start`` of its own).

:func:`choose` picks them by name, or by the machine when no name is given. (Not to be
confused with hypothesis's settings profiles, :mod:`flashcheck.cases.hypothesis_profiles`.)
"""

from __future__ import annotations

import dataclasses
import os
import random

_DTYPE_NAMES = ("float16", "bfloat16", "float32")


@dataclasses.dataclass(frozen=True)
class CaseSizes:
    """Bounds on the cases :mod:`flashcheck.cases.strategies` draws.

    ``max_seqlen`` bounds the lengths drawn routinely; ``long_seqlen`` (>= ``max_seqlen``)
    bounds the lengths drawn now and then, beyond it. ``max_kv_ratio`` bounds
    ``heads // kv_heads``. ``block_sizes`` are the kernel's tile sizes on this kind of
    device, whose neighbours ``b - 1``, ``b``, ``b + 1`` are drawn often. ``max_elements``
    caps ``batch * heads * seqlen_q * seqlen_k``. ``dtypes`` are dtype names from
    :data:`flashcheck.cases.case.DTYPES`, simplest first. With ``focus``, ``focus_seed`` picks
    the compile classes and ``focus_classes`` (None: all) how many of them (in the catalogue's order)
    cases are drawn in, starting at class ``focus_start`` (counted modulo the catalogue's
    length, wrapping round: workers of one run share a catalogue and start apart).
    """

    name: str
    max_batch: int
    max_heads: int
    max_kv_ratio: int
    max_seqlen: int
    long_seqlen: int
    max_head_dim: int
    block_sizes: tuple[int, ...]
    max_elements: int
    dtypes: tuple[str, ...] = _DTYPE_NAMES
    focus: bool = False
    focus_seed: int = 0
    focus_classes: int | None = None
    focus_start: int = 0

    def __post_init__(self):
        for field in ("max_batch", "max_heads", "max_kv_ratio", "max_seqlen", "long_seqlen",
                      "max_head_dim", "max_elements"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field}: expected a positive int, got {value!r}")
        if self.long_seqlen < self.max_seqlen:
            raise ValueError(
                f"long_seqlen: expected at least max_seqlen={self.max_seqlen}, got {self.long_seqlen}"
            )
        object.__setattr__(self, "block_sizes", tuple(self.block_sizes))
        if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in self.block_sizes):
            raise ValueError(f"block_sizes: expected positive ints, got {self.block_sizes!r}")
        if not isinstance(self.focus, bool):
            raise ValueError(f"focus: expected True or False, got {self.focus!r}")
        if not isinstance(self.focus_seed, int) or isinstance(self.focus_seed, bool):
            raise ValueError(f"focus_seed: expected an int, got {self.focus_seed!r}")
        if self.focus_classes is not None and (not isinstance(self.focus_classes, int)
                                               or isinstance(self.focus_classes, bool) or self.focus_classes < 1):
            raise ValueError(f"focus_classes: expected a positive int or None, got {self.focus_classes!r}")
        if not isinstance(self.focus_start, int) or isinstance(self.focus_start, bool) or self.focus_start < 0:
            raise ValueError(f"focus_start: expected a non-negative int, got {self.focus_start!r}")
        object.__setattr__(self, "dtypes", tuple(self.dtypes))
        if not self.dtypes or any(d not in _DTYPE_NAMES for d in self.dtypes):
            raise ValueError(f"dtypes: expected a non-empty subset of {_DTYPE_NAMES}, got {self.dtypes!r}")

    def classes_in_focus(self) -> tuple[int, int | None]:
        """Which compile classes of the catalogue cases are drawn in: ``(focus_start,
        focus_classes)``, the same pair for the same classes (under one focus seed)."""
        return self.focus_start, self.focus_classes


#: Triton's CPU interpreter: the kernel runs 32 x 16 blocks, so lengths up to 80 span
#: three query and five key blocks; 2^16 scores keep one case well under a second.
INTERPRETER = CaseSizes(
    name="interpreter",
    max_batch=2,
    max_heads=8,
    max_kv_ratio=8,
    max_seqlen=80,
    long_seqlen=80,
    max_head_dim=256,
    block_sizes=(16, 32),
    max_elements=1 << 16,
)

#: A CUDA GPU: BLOCK_M and BLOCK_N range from 16 to 128 depending on dtype and head dim
#: (see ``kernels/config.py``); 2^26 scores is 512 MB of float64 reference scores in
#: the worst case, which the reference's query chunking keeps bounded. Compile-aware
#: (``focus``): there a new compilation costs seconds, a case milliseconds.
GPU = CaseSizes(
    name="gpu",
    max_batch=4,
    max_heads=16,
    max_kv_ratio=16,
    max_seqlen=2048,
    long_seqlen=8192,
    max_head_dim=256,
    block_sizes=(32, 64, 128),
    max_elements=1 << 26,
    focus=True,
)

BY_NAME = {sizes.name: sizes for sizes in (INTERPRETER, GPU)}


def with_focus_seed(sizes: CaseSizes, seed: int | None = None, start: int = 0) -> CaseSizes:
    """``sizes`` drawing in the compile classes of ``seed`` (None: a random one), from class
    ``start`` on, where they draw compile-aware (``focus``); as they are otherwise. For
    parallel fuzz workers: they share one seed and start at classes of their own, so that
    each compiles its own class first and finds the others' compiled when it widens
    (:mod:`flashcheck.engine.focus`)."""
    if not sizes.focus:
        return sizes
    return dataclasses.replace(sizes, focus_seed=random.getrandbits(32) if seed is None else seed, focus_start=start)


def choose(name: str | CaseSizes | None = None) -> CaseSizes:
    """The case sizes called ``name`` (``"interpreter"`` or ``"gpu"``, any case).

    With ``None``: :data:`GPU` when CUDA is available and Triton is not forced into its
    interpreter (``TRITON_INTERPRET=1``), else :data:`INTERPRETER`. A :class:`CaseSizes`
    is returned as it is.
    """
    if isinstance(name, CaseSizes):
        return name
    if name is None:
        import torch  # deferred: choosing sizes by name should not need torch

        on_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
        return GPU if on_gpu else INTERPRETER
    if not isinstance(name, str):
        raise TypeError(f"case sizes: expected a name or None, got {name!r}")
    try:
        return BY_NAME[name.lower()]
    except KeyError:
        raise ValueError(f"case sizes: unknown {name!r}; known: {sorted(BY_NAME)}") from None
