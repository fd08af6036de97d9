"""The mutation catalogue of the project kernel: known bug classes, planted one at a time.

Each :class:`Mutation` replaces a fragment of ``forward.py`` or ``backward.py`` (this
package's kernel source) by a buggy variant. :func:`implementation` writes the mutated
source to a temporary file, loads it as a module of its own and returns a protocol
implementation that runs it through :func:`flashcheck.kernels.interface.attend` with that
launcher in place of the real one, so the planted bug goes through the same validation,
autograd plumbing and interpreter (or compiler) as the real kernel.

Every mutant is also an attribute of this module (PEP 562 ``__getattr__``), so that any
tool that takes ``"module:attr"`` can run it, e.g.
``flashcheck fuzz --impl flashcheck.kernels.mutations:drop_rescale``; ``original`` is the
unmutated kernel. A mutation declared ``equivalent`` is known not to change any result;
its reason says why. One declared ``beyond_standard`` changes results, but never beyond what
a plain implementation in the same precision gives, the standard every property holds a
kernel to: only the kernel's own stricter tests, which its reason names, tell it apart.

This module depends on torch and triton only (through the kernel), never on the verifier.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flashcheck.kernels import backward, forward, interface
from flashcheck.kernels.interface import flash_attention as original  # noqa: F401  (the unmutated kernel)

#: The kernel's recorded counterexamples (flashcheck.regress.counterexamples): cases fuzzing
#: once found, which ``flashcheck mutate`` has every mutant's run check before it draws.
COUNTEREXAMPLES = Path(__file__).with_name("counterexamples.toml")

#: The kernel files a mutation may change, by the name a :class:`Mutation` uses.
FILES = {"forward": Path(forward.__file__), "backward": Path(backward.__file__)}

#: Operator categories: the kind of slip each models.
OPERATORS = {
    "band-edge": "a causal/window bound shifted, flipped or swapped",
    "online-softmax": "the running max / rescaling of the online softmax",
    "normalisation": "the final division by the row sum",
    "units": "natural log vs base 2, or the softmax scale folded wrongly",
    "sentinel": "-inf replaced by a finite stand-in",
    "empty-rows": "rows without any allowed key",
    "load-bounds": "a load without (or with the wrong) bounds mask",
    "store-bounds": "a store without (or with the wrong) bounds mask",
    "loop-bounds": "the key or query block loop stops early",
    "addressing": "a base pointer, batch or head offset",
    "stride": "a stride assumed or taken from the wrong tensor",
    "gqa": "the query-head to KV-head mapping or group sum",
    "varlen": "packed sequences' offsets and lengths",
    "mask": "the boolean attention mask",
    "gradient": "a term of the backward's gradient formulas",
    "precision": "rounding or overflow",
    "arithmetic": "an arithmetic slip inside the tolerance",
}


@dataclass(frozen=True)
class Mutation:
    """One planted bug: replace every occurrence of ``fragment`` in kernel ``file`` by
    ``replacement``. ``occurrences`` is how many times the fragment occurs in the current
    source (checked before applying, so that a kernel edit cannot silently disarm it).
    ``equivalent`` is None, or the reason the mutant cannot change any result;
    ``beyond_standard`` is None, or the reason no property can tell the mutant from a correct
    kernel although its results change, naming the kernel's own test that does."""

    name: str
    file: str
    operator: str
    bug: str
    fragment: str
    replacement: str
    occurrences: int = 1
    equivalent: str | None = None
    beyond_standard: str | None = None

    def __post_init__(self):
        if not self.name.isidentifier() or self.name.startswith("_") or self.name == "original":
            raise ValueError(f"Mutation.name: expected a public identifier other than 'original', got {self.name!r}")
        if self.file not in FILES:
            raise ValueError(f"Mutation {self.name}: file expected one of {sorted(FILES)}, got {self.file!r}")
        if self.operator not in OPERATORS:
            raise ValueError(f"Mutation {self.name}: operator expected one of {sorted(OPERATORS)}, "
                             f"got {self.operator!r}")
        if self.occurrences < 1:
            raise ValueError(f"Mutation {self.name}: occurrences must be at least 1, got {self.occurrences}")


def source(file: str) -> str:
    """The current text of kernel ``file`` ("forward" or "backward")."""
    return FILES[file].read_text()


def apply(mutation: Mutation) -> str:
    """The mutated source of ``mutation.file``; ValueError if the fragment does not occur
    exactly ``mutation.occurrences`` times (the kernel changed under the catalogue)."""
    text = source(mutation.file)
    found = text.count(mutation.fragment)
    if found != mutation.occurrences:
        raise ValueError(f"mutation {mutation.name}: fragment occurs {found} times in {mutation.file}.py, "
                         f"expected {mutation.occurrences}")
    return text.replace(mutation.fragment, mutation.replacement)


_LAUNCHES: dict = {}
_IMPLEMENTATIONS: dict = {}
_DIRECTORY: list[Path] = []  # created on first use, removed at exit


def _directory() -> Path:
    if not _DIRECTORY:
        path = Path(tempfile.mkdtemp(prefix="flashcheck-mutants-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _DIRECTORY.append(path)
    return _DIRECTORY[0]


def mutated_launch(mutation: Mutation):
    """The ``launch`` function of the kernel module with ``mutation`` applied (cached)."""
    text = apply(mutation)
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    if digest not in _LAUNCHES:
        # The module name carries the digest: Triton and sys.modules key on it, and two
        # catalogues may reuse a mutation name for different source.
        path = _directory() / f"{mutation.file}_{mutation.name}_{digest}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        _LAUNCHES[digest] = module.launch
    return _LAUNCHES[digest]


def implementation(mutation: Mutation):
    """A protocol implementation running the kernel with ``mutation`` planted (cached)."""
    if mutation in _IMPLEMENTATIONS:
        return _IMPLEMENTATIONS[mutation]
    launches = list(interface.LAUNCHES)
    launches[0 if mutation.file == "forward" else 1] = mutated_launch(mutation)
    launches = tuple(launches)

    def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None,
                  cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                  out=None, lse_out=None):
        return interface.attend(
            q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask,
            cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
            max_seqlen_k=max_seqlen_k, out=out, lse_out=lse_out, launches=launches,
        )

    attention.flashcheck_features = interface.FEATURES
    attention.__name__ = attention.__qualname__ = f"mutant_{mutation.name}"
    attention.__doc__ = f"The project kernel with a planted bug ({mutation.operator}): {mutation.bug}."
    _IMPLEMENTATIONS[mutation] = attention
    return attention


def catalogue_getattr(mutations: dict, module_name: str):
    """A PEP 562 module ``__getattr__`` exposing each of ``mutations`` as an attribute (its
    implementation, built on first access), for catalogue modules such as this one."""

    def __getattr__(name: str):
        if name in mutations:
            return implementation(mutations[name])
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


# -- the catalogue ---------------------------------------------------------------------------

#: The forward's masked online-softmax step, from the masking of the logits to P.
_MASKED_SOFTMAX = """\
        if HAS_MASK:
            s = tl.where(keep, s, float("-inf"))
        if POSITIVE_SCALE:
            # max(s)·c = max(s·c) for c > 0: the scale waits for the row maximum, then fuses
            # into one multiply-add per logit inside exp2.
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale_log2)
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1))
        # A row that has seen no allowed key yet keeps m = -inf; subtract 0 instead so
        # that exp2 gives 0 rather than NaN from (-inf) - (-inf).
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_safe)
        if POSITIVE_SCALE:
            p = tl.math.exp2(s * qk_scale_log2 - m_safe[:, None])
        else:
            p = tl.math.exp2(s - m_safe[:, None])
"""

#: The backward's recomputation of P from the logits and the saved lse.
_RECOMPUTED_P = """\
    s = s * qk_scale_log2 - lse2[:, None]  # one multiply-add per entry
    if BAND:
        s = tl.where(allowed, s, float("-inf"))
    elif HAS_MASK:
        s = tl.where(allowed, s, float("-inf"))
    return tl.math.exp2(s)
"""

_STORE_OUT = "tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])"


def _forward(name, operator, bug, fragment, replacement, **extra) -> Mutation:
    return Mutation(name, "forward", operator, bug, fragment, replacement, **extra)


def _backward(name, operator, bug, fragment, replacement, **extra) -> Mutation:
    return Mutation(name, "backward", operator, bug, fragment, replacement, **extra)


CATALOGUE = (
    # -- forward: band and bounds -----------------------------------------------------------
    _forward("mask_right_off_by_one", "band-edge", "the band's right edge excludes the diagonal key",
             "(cols[None, :] <= hi[:, None])", "(cols[None, :] < hi[:, None])"),
    _forward("mask_left_off_by_one", "band-edge", "the window's left edge drops one key",
             "(cols[None, :] >= lo[:, None])", "(cols[None, :] > lo[:, None])"),
    _forward("window_sides_swapped", "band-edge",
             "left and right window bounds swapped: causal becomes anti-causal",
             "lo = diagonal - window_left\n    hi = diagonal + window_right",
             "lo = diagonal - window_right\n    hi = diagonal + window_left"),
    _forward("drop_last_key", "load-bounds", "the last key is never read",
             "col_ok = cols < seqlen_k\n", "col_ok = cols < seqlen_k - 1\n"),
    _forward("key_bound_past_end", "load-bounds",
             "keys are bounded with <= instead of <: one key past the end is read and attended",
             "col_ok = cols < seqlen_k\n", "col_ok = cols <= seqlen_k\n"),
    _forward("v_load_unmasked", "load-bounds",
             "V is loaded without its key bound: rows past the end enter P·V (0·NaN is NaN)",
             "tile = tl.load(ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)",
             "tile = tl.load(ptrs, mask=d_ok[None, :], other=0.0)"),
    _forward("k_load_unmasked", "load-bounds",
             "K is loaded without its key bound: keys past the end are read (their logits are then masked)",
             "mask=d_ok[:, None] & col_ok[None, :], other=0.0)", "mask=d_ok[:, None], other=0.0)",
             equivalent="no result changes: a key past the end only reaches its own column of the logits, "
                        "which `allowed` (col_ok) replaces by -inf, NaN included. It is still an out-of-bounds "
                        "read, which value-based properties cannot see: a memory checker (compute-sanitizer) "
                        "or a guard page after K would"),
    _forward("skip_last_key_block", "loop-bounds",
             "the key loop stops at the last full block: a trailing partial key block is never read",
             "end = tl.minimum(last_row + offset + window_right + 1, seqlen_k)",
             "end = (tl.minimum(last_row + offset + window_right + 1, seqlen_k) // BLOCK_N) * BLOCK_N"),
    _forward("free_blocks_past_band_end", "band-edge",
             "the last key block that crosses the band's right edge is taken as free: its keys are not masked",
             "free_end = (tl.minimum(first_row + offset + window_right + 1, seqlen_k) // BLOCK_N) * BLOCK_N",
             "free_end = tl.cdiv(tl.minimum(first_row + offset + window_right + 1, seqlen_k), BLOCK_N) * BLOCK_N"),
    _forward("edge_loop_steps_over_gap_late", "loop-bounds",
             "the band-edge loop steps over the free blocks one block late: it revisits the first free block "
             "and never reads the first block of the trailing edge",
             "first = tl.where(block < gap_start, block, block + gap)",
             "first = tl.where(block <= gap_start, block, block + gap)"),
    _forward("free_blocks_from_first_row", "band-edge",
             "free key blocks start where the block's first row's window starts, not its last row's",
             "free_start = tl.cdiv(tl.maximum(last_row + offset - window_left, 0), BLOCK_N) * BLOCK_N",
             "free_start = tl.cdiv(tl.maximum(first_row + offset - window_left, 0), BLOCK_N) * BLOCK_N"),
    # -- forward: online softmax, normalisation, units -----------------------------------------
    _forward("drop_rescale", "online-softmax", "the accumulator is not rescaled when the max grows",
             "acc = acc * alpha[:, None]", "acc = acc"),
    _forward("drop_row_sum_rescale", "online-softmax", "the row sum is not rescaled when the max grows",
             "l_i = l_i * alpha + tl.sum(p, 1)", "l_i = l_i + tl.sum(p, 1)"),
    _forward("no_max_subtraction", "online-softmax", "probabilities are exponentiated raw",
             "p = tl.math.exp2(s * qk_scale_log2 - m_safe[:, None])", "p = tl.math.exp2(s * qk_scale_log2)"),
    _forward("drop_normalisation", "normalisation", "the output is not divided by the row sum",
             "out = acc / tl.where(empty, 1.0, norm)[:, None]", "out = acc"),
    _forward("lse_in_log2", "units", "lse is returned in base 2",
             "* 0.6931471805599453)", ")"),
    _forward("scale_missing_log2e", "units",
             "the softmax scale is not folded with log2(e): exp2 of natural-log logits",
             "softmax_scale * LOG2_E,\n", "softmax_scale,\n"),
    # -- forward: sentinels and empty rows -------------------------------------------------------
    _forward("finite_sentinel", "sentinel", "the running maximum starts at -1e4 instead of -inf",
             'm_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)',
             "m_i = tl.full([BLOCK_M], -1.0e4, dtype=tl.float32)"),
    _forward("masked_logit_finite", "sentinel",
             "masked logits are set to -1e4 (a 'large negative') instead of -inf",
             's = tl.where(allowed, s, float("-inf"))', "s = tl.where(allowed, s, -1.0e4)"),
    _forward("unguarded_empty_rows", "empty-rows", "rows without keys compute (-inf) - (-inf)",
             'm_safe = tl.where(m_new == float("-inf"), 0.0, m_new)', "m_safe = m_new"),
    _forward("empty_row_max_stand_in", "empty-rows",
             "rows that have seen no allowed key subtract 1 instead of 0 from their logits",
             'm_safe = tl.where(m_new == float("-inf"), 0.0, m_new)',
             'm_safe = tl.where(m_new == float("-inf"), 1.0, m_new)',
             equivalent="m_safe only differs from m_new where m_new = -inf, i.e. where every logit seen so "
                        "far (and m_i) is -inf: exp2(-inf - c) = 0 for every finite c, so alpha and P are "
                        "exactly 0 whether the stand-in is 0 or 1"),
    # -- forward: arithmetic, addressing, strides, GQA ---------------------------------------
    _forward("accumulator_bias", "arithmetic",
             "each key block adds 1e-3 to the accumulator, a bias inside the output's tolerance",
             "acc = tl.dot(rounded, v, acc)", "acc = tl.dot(rounded, v, acc) + 1e-3"),
    _forward("gqa_modulo_mapping", "gqa", "query heads map to KV heads modulo",
             "kv_h = h // group", "kv_h = h % (heads // group)"),
    _forward("kv_batch_halved", "addressing", "pairs of batch entries share one K",
             "k_base = K + b * stride_kb", "k_base = K + (b // 2) * stride_kb"),
    _forward("output_into_q", "addressing", "the output is stored through q's pointer",
             "o_ptrs = Out + b * stride_ob", "o_ptrs = Q + b * stride_ob"),
    _forward("contiguous_query_assumed", "stride", "the query's sequence stride is assumed contiguous",
             "offs_m[:, None] * stride_qn", "offs_m[:, None] * (heads * head_dim)"),
    _forward("v_read_with_k_strides", "stride", "V is addressed with K's sequence and head-dim strides",
             "v = _load_rows(v_base, cols, offs_d, stride_vn, stride_vd,",
             "v = _load_rows(v_base, cols, offs_d, stride_kn, stride_kd,"),
    _forward("store_past_last_row", "store-bounds", "one row past the end of the output is written",
             _STORE_OUT, _STORE_OUT.replace("mask=row_ok[:, None]", "mask=(offs_m <= seqlen_q)[:, None]")),
    _forward("last_column_unwritten", "store-bounds", "the last head-dim column of the output is never written",
             _STORE_OUT, _STORE_OUT.replace("d_ok[None, :]", "(offs_d < head_dim - 1)[None, :]")),
    _forward("lse_store_unmasked", "store-bounds", "lse is stored without its row bound: writes past its end",
             "offs_m * stride_ln, lse, mask=row_ok)", "offs_m * stride_ln, lse)"),
    # -- forward: packed variable-length sequences ---------------------------------------------
    _forward("varlen_query_offset_off_by_one", "varlen",
             "queries are read one token late: the next sequence's first query, or past the last token",
             "Q += q_start * stride_qn", "Q += (q_start + 1) * stride_qn"),
    _forward("varlen_keys_read_to_max_seqlen", "varlen",
             "keys are masked with max_seqlen_k, not the sequence's length: reads run past the sequence end",
             "k_start, seqlen_k = _sequence(CuSeqlensK, b)", "k_start, k_length = _sequence(CuSeqlensK, b)"),
    _forward("varlen_band_from_total_lengths", "varlen",
             "the causal/window band is aligned with the packed tensors' total lengths, not the sequence's",
             "diagonal = offs_m + (seqlen_k - seqlen_q)",
             # Only when packed: dense calls have no offsets to load.
             "diagonal = offs_m + ((tl.load(CuSeqlensK + tl.num_programs(1) // heads)"
             " - tl.load(CuSeqlensQ + tl.num_programs(1) // heads)) if IS_VARLEN else (seqlen_k - seqlen_q))"),
    # -- forward: boolean masks ------------------------------------------------------------
    _forward("mask_multiplied_after_exp", "mask",
             "the mask multiplies P after exp instead of excluding entries before the row maximum",
             _MASKED_SOFTMAX,
             _MASKED_SOFTMAX.replace('        if HAS_MASK:\n            s = tl.where(keep, s, float("-inf"))\n', "")
             + "        if HAS_MASK:\n            p = p * keep.to(tl.float32)\n"),
    _forward("mask_broadcast_strides_ignored", "mask",
             "the mask's own strides are used where broadcast dims need stride 0",
             "mask = mask.expand(batch, heads, seqlen_q, seqlen_k)", "mask = mask"),
    # -- backward ------------------------------------------------------------------------
    _backward("drop_delta", "gradient", "dS forgets the rowsum(dO∘O) term",
              "ds = p * (dp - delta[:, None])", "ds = p * dp"),
    _backward("dlse_ignored", "gradient", "the upstream gradient of lse is dropped from delta",
              "delta -= tl.load(DLse + row, mask=offs_m < seqlen_q, other=0.0)", "delta = delta"),
    _backward("dk_not_scaled", "gradient", "dK is not multiplied by the softmax scale",
              "dk = dk * softmax_scale", "dk = dk"),
    _backward("backward_lse_in_natural_log", "units",
              "the backward recomputes P = exp2(s - lse) with the natural-log lse, not lse·log2(e)",
              'float("inf"), lse * 1.4426950408889634)', 'float("inf"), lse)'),
    _backward("backward_ignores_band", "band-edge", "the recomputed P ignores the causal/window band",
              "allowed = allowed & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None])",
              "allowed = allowed"),
    _backward("unguarded_empty_rows_backward", "empty-rows",
              "the backward masks logits before subtracting lse and undoes the +inf stand-in of rows "
              "without keys: their (-inf) - (-inf) is NaN",
              _RECOMPUTED_P,
              "    s = s * qk_scale_log2\n"
              "    if BAND:\n        s = tl.where(allowed, s, float(\"-inf\"))\n"
              "    elif HAS_MASK:\n        s = tl.where(allowed, s, float(\"-inf\"))\n"
              "    return tl.math.exp2(s - tl.where(lse2 == float(\"inf\"), float(\"-inf\"), lse2)[:, None])\n"),
    _backward("empty_row_lse_stand_in", "empty-rows",
              "rows without keys get a finite stand-in lse (0) instead of +inf in the backward",
              'lse2 = tl.where(lse == float("-inf"), float("inf"),',
              'lse2 = tl.where(lse == float("-inf"), 0.0,',
              equivalent="lse is -inf only on a row with no allowed key, whose recomputed logits are all "
                         "-inf: exp2(-inf - c) = 0 for every c other than -inf, so P, dS and dQ of the row are "
                         "exactly 0 with +inf or 0"),
    _backward("backward_padding_rows_lse_zero", "empty-rows",
              "rows past the end load lse 0 instead of +inf",
              'lse = tl.load(Lse + rows, mask=row_ok, other=float("inf"))',
              "lse = tl.load(Lse + rows, mask=row_ok, other=0.0)",
              equivalent="rows past the end are excluded by `allowed` (row_ok), so their logits are -inf and "
                         "their P exactly 0 whatever lse they load; in dQ's free key blocks they are not "
                         "masked, but there q = dO = 0 and delta = 0 make their dS 0, and their dQ is never stored"),
    _backward("first_head_of_group_only", "gqa", "dK/dV sum one query head per group",
              "h = kv_h * group + t", "h = kv_h * group"),
    _backward("gqa_dv_keeps_last_head", "gqa",
              "dV restarts for every query head of a GQA group: it keeps only the last head's term (dK sums all)",
              "for t in range(0, group):\n        h = kv_h * group + t\n",
              "for t in range(0, group):\n        h = kv_h * group + t\n"
              "        dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)\n"),
    _backward("backward_gqa_modulo_mapping", "gqa", "dQ reads KV heads modulo, unlike the forward",
              "kv_h = h // group", "kv_h = h % (heads // group)"),
    _backward("backward_v_load_unmasked", "load-bounds",
              "dQ's V tile is loaded without its key bound: NaN past the end reaches dS (0·NaN) and dQ",
              "vt = _load_columns(v_base, cols, offs_d, stride_vn, stride_vd, col_ok, d_ok, BAND, FULL_D)",
              "vt = _load_columns(v_base, cols, offs_d, stride_vn, stride_vd, cols >= 0, d_ok, BAND, FULL_D)"),
    _backward("dk_dv_edge_loop_ignores_gap", "loop-bounds",
              "dK/dV's band-edge loop does not step over the free query blocks: it revisits them and stops short "
              "of the trailing edge",
              "start_m = _past_gap(block, gap_start, gap, BAND)", "start_m = block"),
    _backward("free_query_blocks_for_partial_key_block", "load-bounds",
              "dK/dV take query blocks as free even for the last, partial key block: keys past the end enter",
              "free_end = tl.where(first_key + BLOCK_N <= seqlen_k, free_end, 0)", "free_end = free_end",
              equivalent="no result changes: the key block's K and V were loaded with their bound (0 past the "
                         "end), a key column's dK and dV depend on that column of P and dS alone, and columns "
                         "past the end are never stored; the guard only keeps those columns' P at 0"),
    _forward("output_normalised_by_unrounded_sum", "precision",
             "16-bit inputs: the output is divided by the sum of the unrounded probabilities, not of those "
             "rounded for P·V: a component every value shares is scaled by that rounding error, which delta = "
             "dO·O spreads over every dS of the row",
             "norm = l_i if FP32_IEEE else w_i", "norm = l_i"),
    _backward("float16_ds_overflows", "precision",
              "float16 dS is rounded without range scaling, overflowing to inf where |dS| > 65504",
              "float16_ds = q.dtype == torch.float16", "float16_ds = False"),
    _backward("float16_ds_bound_inverted", "precision",
              "the float16 dS bound's comparison is inverted: dS that may overflow is rounded unscaled (and dS "
              "that cannot takes the slow scaled loop)",
              "return bound >= 32768.0", "return bound < 32768.0"),
    _backward("delta_from_rounded_output", "precision",
              "delta = dO·O is taken from the output rounded to the input dtype (as a 16-bit output would "
              "give it): its rounding error lands whole on the nearly cancelling dS of a row one key dominates",
              "o, do = o.to(tl.float32), do.to(tl.float32)",
              "o, do = o.to(DOut.dtype.element_ty).to(tl.float32), do.to(tl.float32)"),
    _backward("delta_with_shared_offset", "precision",
              "float16: dP = dO·v and delta = dO·O keep the values' shared offset: where it is large both are "
              "large and nearly equal, summed in float32 two ways, and their rounding errors, times the keys' "
              "own offset, overflow dQ",
              "v = without_offset(v, offset, keys_sequence)", "offset = torch.zeros_like(offset)",
              beyond_standard="it forms dP - delta with the values' offset in, as a plain float16 backward "
                              "does, and dQ still takes the keys' offset out: flashcheck's same-precision "
                              "standard keeps both offsets, so its allowance covers the mutant's error wherever "
                              "a case can reach it (no drawn or recorded case has failed it); the normwise bound "
                              "of tests/test_kernel_delta.py on the constructed offset pair kills it on any "
                              "device"),
    _backward("dq_with_keys_shared_offset", "precision",
              "float16: dQ = scale·dS·K keeps the keys' shared offset, which multiplies whatever error is left "
              "in a row's Σ_j dS_ij (dS rounded to float16; delta from the output's rounded weights) past "
              "float16's range where the exact dQ is small",
              ", shared_offset(k, keys_sequence, batch)",
              ", torch.zeros_like(shared_offset(k, keys_sequence, batch))"),
    _forward("pv_summed_in_one_chain", "precision",
             "float32: each block's P·V accumulates into the running output inside the dot, one multiply-add "
             "chain over every key, whose rounding grows with the key count (a GPU's; the interpreter's dot is "
             "one NumPy product, so only a GPU can kill it)",
             "acc = _add_block(acc, alpha[:, None], tl.dot(p, v, input_precision=\"ieee\"))",
             "acc = tl.dot(p, v, acc * alpha[:, None], input_precision=\"ieee\")"),
    _backward("dq_stored_into_q", "addressing", "dQ is stored through q's pointer",
              "tl.store(DQ + b * stride_dqb", "tl.store(Q + b * stride_dqb"),
    _backward("backward_ignores_mask", "mask", "the backward recomputes P without the attn_mask",
              "allowed = allowed & _mask_tile(Mask, rows, cols, stride_mm, stride_mn, row_ok, col_ok)",
              "allowed = allowed"),
    _backward("backward_varlen_writes_past_sequence_end", "varlen",
              "the backward bounds keys by max_seqlen_k: dK/dV are written past the sequence's end",
              "k_start, seqlen_k = _sequence(CuSeqlensK, b)", "k_start, k_length = _sequence(CuSeqlensK, b)",
              occurrences=2),
)

#: The catalogue by name.
MUTATIONS: dict[str, Mutation] = {mutation.name: mutation for mutation in CATALOGUE}
if len(MUTATIONS) != len(CATALOGUE):
    raise ValueError("kernels/mutations.py: two mutations share a name")

__getattr__ = catalogue_getattr(MUTATIONS, __name__)


def __dir__():
    return sorted(set(globals()) | set(MUTATIONS))
