"""Triton forward kernel: tiled attention with an online softmax, returning out and lse.

One program computes one block of ``BLOCK_M`` queries of one (batch, head), or with
``IS_VARLEN`` of one (packed sequence, head). It walks only the key blocks that intersect
the allowed band of its queries (blocks wholly outside a causal or sliding-window band are
never loaded), keeping a running maximum ``m`` and sum ``l`` in base 2 (the scale is folded
with log2(e) so that ``exp2`` does the work) and rescaling the float32 accumulator whenever
the maximum grows. Probabilities are rounded to
the input dtype before the product with V, as in FlashAttention-2. A row with no allowed
key keeps ``m = -inf`` and ``l = 0``; it is written as output 0 and lse ``-inf``.

Packed variable length (``IS_VARLEN``): ``cu_seqlens_q``/``cu_seqlens_k`` give each
sequence's first token and length; the program shifts its base pointers to its sequence's
first token and uses the sequence's own lengths for every load/store mask and for the
bottom-right band, so it never reads or writes another sequence's tokens. Programs whose
query block lies past their sequence's end return at once.

Boolean mask (``HAS_MASK``, dense only): a ``(B, H, Nq, Nk)`` view of uint8 with stride 0
along broadcast dims. It is ANDed into ``allowed`` before the row maximum (``tl.where`` to
-inf, never a multiplication, so huge logits of hidden entries cannot leak). Hidden keys
and values are loaded like visible ones and enter the products with probability 0, so they
must be finite, as the protocol's inputs are (0 * NaN is NaN). Without a mask (and without
``IS_VARLEN``) the kernel computes exactly what it did before either existed.

Interpreter (``TRITON_INTERPRET=1``) and bfloat16: the interpreter multiplies the raw bit
patterns of bfloat16 operands in ``tl.dot`` and truncates float32 -> bfloat16 conversions
instead of rounding to nearest even. With ``EMULATE_BF16`` (set by the launcher only in
that case) the kernel still loads and stores bfloat16 through the same pointers, strides
and masks, but widens the loaded tiles to float32 before each ``tl.dot`` and rounds to
bfloat16 explicitly (round to nearest even, on the bits) where the GPU path converts. The
products are the same numbers either way (a bfloat16 product is exact in float32); what
differs is only the instruction that forms them.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from flashcheck.kernels import launcher
from flashcheck.kernels.config import padded_head_dim

LOG2_E = 1.4426950408889634

#: Runtime arguments that Triton does not specialise on their value (``do_not_specialize``):
#: those whose specialisation (equal to 1, divisible by 16) leaves the code of every
#: benchmark configuration as it is -- PTX identical, compiled for sm90 with and without it,
#: at float16/bfloat16, head dims 64/128, causal and full (docs/performance.md).
#: Specialised, each doubled or tripled the compilations that fuzzing needs while changing
#: nothing but which integers the compiler may assume. The others stay specialised:
#: ``head_dim`` and the strides of q, k, v and out decide whether loads are vectorised,
#: ``seqlen_q`` changes the head-dim-128 code, ``group`` equal to 1 folds the GQA indexing,
#: and the mask's strides keep masked calls' mask loads vectorised (no benchmark measures them).
UNSPECIALISED = ("heads", "seqlen_k", "window_left", "window_right", "stride_lb", "stride_lh")


@triton.jit
def _round_to_bfloat16(x):
    """float32 -> the nearest bfloat16 value (ties to even), still as float32; NaN kept."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + (0x7FFF + ((bits >> 16) & 1))) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))


@triton.jit
def _sequence(CuSeqlens, seq):
    """First token and length of packed sequence ``seq``."""
    start = tl.load(CuSeqlens + seq)
    return start, tl.load(CuSeqlens + seq + 1) - start


@triton.jit
def _mask_tile(Mask, rows, cols, stride_mm, stride_mn, row_ok, col_ok):
    """attn_mask over rows x cols as booleans; False outside the valid rows and keys (``Mask``
    already points at this program's (batch, head) slice)."""
    keep = tl.load(Mask + rows[:, None] * stride_mm + cols[None, :] * stride_mn,
                   mask=row_ok[:, None] & col_ok[None, :], other=0)
    return keep != 0


@triton.jit
def _load_rows(base, rows, offs_d, stride_n, stride_d, row_ok, d_ok,
               BOUNDED: tl.constexpr = True, FULL_D: tl.constexpr = False):
    """A rows x head-dim tile, 0 outside the valid rows and head dims. Without ``BOUNDED``
    the caller guarantees every row valid, and with ``FULL_D`` every head dim too."""
    ptrs = base + rows[:, None] * stride_n + offs_d[None, :] * stride_d
    if BOUNDED:
        tile = tl.load(ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    elif FULL_D:
        tile = tl.load(ptrs)
    else:
        tile = tl.load(ptrs, mask=d_ok[None, :], other=0.0)
    return tile


@triton.jit
def _load_columns(base, cols, offs_d, stride_n, stride_d, col_ok, d_ok,
                  BOUNDED: tl.constexpr = True, FULL_D: tl.constexpr = False):
    """A head-dim x keys tile (K or V transposed), 0 outside the valid keys and head dims;
    ``BOUNDED`` and ``FULL_D`` as for :func:`_load_rows`."""
    ptrs = base + cols[None, :] * stride_n + offs_d[:, None] * stride_d
    if BOUNDED:
        tile = tl.load(ptrs, mask=d_ok[:, None] & col_ok[None, :], other=0.0)
    elif FULL_D:
        tile = tl.load(ptrs)
    else:
        tile = tl.load(ptrs, mask=d_ok[:, None], other=0.0)
    return tile


@triton.jit
def _key_blocks(first_row, seqlen_q, seqlen_k, window_left, window_right,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``(start, free_start, free_end, end)`` for the query block starting at ``first_row``
    (bottom-right band). Keys ``[start, end)`` are those some valid row of the block may
    attend, ``start`` aligned down to ``BLOCK_N``; key blocks outside them are skipped. The
    blocks of ``[free_start, free_end)`` (aligned, possibly empty, ``start <= free_start <=
    free_end <= end`` where the block's rows attend some key; else ``start = free_start =
    free_end`` and ``end < start``) lie inside the keys and inside every valid row's band, so they need
    neither bounds nor band masking."""
    last_row = tl.minimum(first_row + BLOCK_M, seqlen_q) - 1
    offset = seqlen_k - seqlen_q
    start = tl.maximum(first_row + offset - window_left, 0)
    start = (start // BLOCK_N) * BLOCK_N
    end = tl.minimum(last_row + offset + window_right + 1, seqlen_k)
    free_start = tl.cdiv(tl.maximum(last_row + offset - window_left, 0), BLOCK_N) * BLOCK_N
    free_end = (tl.minimum(first_row + offset + window_right + 1, seqlen_k) // BLOCK_N) * BLOCK_N
    # Not below start: where the block's rows attend no key (end < start), the free range
    # is then [start, start), empty. Clamped to end alone it started at end < 0, and
    # free_end, rounded with ``//`` (towards zero: a bound in (-BLOCK_N, 0) becomes 0), could
    # lie above it: a free block ran at a negative key, unbounded.
    free_start = tl.maximum(tl.minimum(free_start, end), start)
    return start, free_start, tl.maximum(free_end, free_start), end


@triton.jit
def _past_gap(block, gap_start, gap, BAND: tl.constexpr):
    """The first index of the block a loop over ``[start, end - gap)`` visits at ``block``,
    when that loop stands for ``[start, gap_start)`` then ``[gap_start + gap, end)``:
    ``block`` before the gap, ``block + gap`` after it. Only the band-edge loops (``BAND``)
    have a gap; for the free blocks' loop ``block`` passes through unchanged."""
    first = block
    if BAND:
        first = tl.where(block < gap_start, block, block + gap)
    return first


@triton.jit
def _add_block(total, factor, block):
    """``total·factor + block``, for a float32 ``block`` that a dot has just summed on its own.

    Written ``total += tl.dot(a, b)``, Triton folds the sum into the dot, which then takes
    ``total`` as its accumulator: an FMA dot (float32 ``"ieee"``) runs the products of every
    block of the sweep as one chain of multiply-adds, whose rounding error grows with the
    sweep's length and, on like terms, does not average out (at 5937 like keys, 800 units of
    roundoff against 1 for blocks of 64 summed afterwards). An ``fma`` is not folded, so each
    block's products are summed apart and only the block sums join the chain."""
    return tl.fma(total, factor, block)


@triton.jit
def _attend_blocks(
    acc, l_i, w_i, m_i, q, k_base, v_base, Mask, start, gap_start, gap_end, end, offs_m, offs_n, offs_d, row_ok, d_ok,
    lo, hi, seqlen_k,
    stride_kn, stride_kd, stride_vn, stride_vd, stride_mm, stride_mn, qk_scale_log2,
    BLOCK_N: tl.constexpr, BAND: tl.constexpr, FULL_D: tl.constexpr, POSITIVE_SCALE: tl.constexpr,
    FP32_IEEE: tl.constexpr, EMULATE_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
):
    """The online softmax over the key blocks of ``[start, gap_start)`` and ``[gap_end, end)``,
    in that order: returns the updated ``(acc, l_i, w_i, m_i)``. ``l_i`` sums the row's
    probabilities, for its lse; ``w_i`` sums them as rounded for ``P·V`` (16-bit inputs; unused
    with ``FP32_IEEE``), for the output's normalisation. ``BAND``: the blocks may cross
    the band's edges or the keys' end, so loads are bounded and logits outside the band set
    to -inf; without it (the free blocks of :func:`_key_blocks`, with an empty gap) only
    the boolean mask, if any, is applied. ``FULL_D``: the head dim fills ``BLOCK_D``, so
    free blocks load without any mask. ``POSITIVE_SCALE``: the softmax scale is positive,
    so it may be applied after masking and the row maximum."""
    gap = gap_end - gap_start
    for block in range(start, end - gap, BLOCK_N):
        # The two edges of a band share one loop (one compiled copy of its body): past the
        # leading edge, it steps over the free blocks.
        start_n = _past_gap(block, gap_start, gap, BAND)
        cols = start_n + offs_n
        col_ok = cols < seqlen_k
        if BAND:
            allowed = col_ok[None, :] & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None])
        if HAS_MASK:
            # Hidden keys are still loaded: masking their loads by the tile's mask ties the
            # mask's register layout to the loads', and the compiled kernel then sums rows in
            # an order that depends on the inputs' strides (found on an H100: lse differed in
            # its last bit between a tensor and its contiguous copy, and between a mask and
            # the equivalent causal flag).
            keep = _mask_tile(Mask, offs_m, cols, stride_mm, stride_mn, row_ok, col_ok)
        k = _load_columns(k_base, cols, offs_d, stride_kn, stride_kd, col_ok, d_ok, BAND, FULL_D)
        if EMULATE_BF16:
            k = k.to(tl.float32)
        if FP32_IEEE:
            s = tl.dot(q, k, input_precision="ieee")
        else:
            s = tl.dot(q, k)
        if not POSITIVE_SCALE:
            s = s * qk_scale_log2  # scaled before masking: -inf * 0 would be NaN
        if BAND:
            s = tl.where(allowed, s, float("-inf"))
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
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_rows(v_base, cols, offs_d, stride_vn, stride_vd, col_ok, d_ok, BAND, FULL_D)
        if FP32_IEEE:
            acc = _add_block(acc, alpha[:, None], tl.dot(p, v, input_precision="ieee"))
        else:
            acc = acc * alpha[:, None]
            if EMULATE_BF16:
                rounded = _round_to_bfloat16(p)
                acc += tl.dot(rounded, v.to(tl.float32), input_precision="ieee")
            else:
                rounded = p.to(v.dtype)
                acc = tl.dot(rounded, v, acc)
            w_i = w_i * alpha + tl.sum(rounded.to(tl.float32), 1)
        m_i = m_new
    return acc, l_i, w_i, m_i


@triton.jit(do_not_specialize=UNSPECIALISED)
def _attention_forward(
    Q, K, V, Out, Lse, Mask, CuSeqlensQ, CuSeqlensK,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kb, stride_kn, stride_kh, stride_kd,
    stride_vb, stride_vn, stride_vh, stride_vd,
    stride_ob, stride_on, stride_oh, stride_od,
    stride_lb, stride_lh, stride_ln,
    stride_mb, stride_mh, stride_mm, stride_mn,
    heads, group,
    seqlen_q, seqlen_k,  # lengths; with IS_VARLEN the largest sequence lengths (unused)
    head_dim,
    qk_scale_log2,  # softmax_scale * log2(e)
    window_left, window_right,  # band bounds, already made finite by the launcher
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, FULL_D: tl.constexpr,
    POSITIVE_SCALE: tl.constexpr, FP32_IEEE: tl.constexpr, EMULATE_BF16: tl.constexpr,
    HAS_MASK: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    # The last query blocks first: under a causal band they have the most keys, and starting
    # them early keeps them from being the tail of the launch.
    block_m = tl.num_programs(0) - 1 - tl.program_id(0)
    batch_head = tl.program_id(1)
    b = batch_head // heads  # the batch entry, or with IS_VARLEN the sequence
    h = batch_head % heads
    kv_h = h // group
    if IS_VARLEN:
        # The launcher passes batch strides 0; the sequence's first token moves the bases.
        q_start, seqlen_q = _sequence(CuSeqlensQ, b)
        k_start, seqlen_k = _sequence(CuSeqlensK, b)
        if block_m * BLOCK_M >= seqlen_q:
            return
        Q += q_start * stride_qn
        Out += q_start * stride_on
        Lse += q_start * stride_ln
        K += k_start * stride_kn
        V += k_start * stride_vn
    if HAS_MASK:
        Mask += b * stride_mb + h * stride_mh

    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < seqlen_q
    d_ok = offs_d < head_dim

    q_ptrs = Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if EMULATE_BF16:
        q = q.to(tl.float32)
    k_base = K + b * stride_kb + kv_h * stride_kh
    v_base = V + b * stride_vb + kv_h * stride_vh

    # Query i may attend key j iff lo_i <= j <= hi_i (bottom-right aligned band).
    diagonal = offs_m + (seqlen_k - seqlen_q)
    lo = diagonal - window_left
    hi = diagonal + window_right
    n_start, free_start, free_end, n_end = _key_blocks(block_m * BLOCK_M, seqlen_q, seqlen_k, window_left,
                                                       window_right, BLOCK_M, BLOCK_N)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    w_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    # The free blocks, then the band's edges (leading edge, then the diagonal, the window's
    # right end and the keys' end): two compiled copies of the loop body, not three.
    acc, l_i, w_i, m_i = _attend_blocks(
        acc, l_i, w_i, m_i, q, k_base, v_base, Mask, free_start, free_end, free_end, free_end, offs_m, offs_n, offs_d,
        row_ok, d_ok, lo, hi, seqlen_k, stride_kn, stride_kd, stride_vn, stride_vd, stride_mm, stride_mn,
        qk_scale_log2, BLOCK_N, False, FULL_D, POSITIVE_SCALE, FP32_IEEE, EMULATE_BF16, HAS_MASK)
    acc, l_i, w_i, m_i = _attend_blocks(
        acc, l_i, w_i, m_i, q, k_base, v_base, Mask, n_start, free_start, free_end, n_end, offs_m, offs_n, offs_d,
        row_ok, d_ok, lo, hi, seqlen_k, stride_kn, stride_kd, stride_vn, stride_vd, stride_mm, stride_mn,
        qk_scale_log2, BLOCK_N, True, FULL_D, POSITIVE_SCALE, FP32_IEEE, EMULATE_BF16, HAS_MASK)

    empty = l_i == 0.0
    # 16-bit inputs: the output is normalised by the sum of the probabilities as rounded for
    # P·V, so that its weights sum to one and a component every value shares passes through
    # exactly. Normalised by the unrounded sum (as the lse must be), the output would be off
    # by that component times the rows' rounding error, and the backward's delta = dO·O with
    # it: an error on every dS_ij of the row that the exact dS cancels, and that dQ = scale·dS·K
    # and dK amplify past float16's range where one key dominates (docs/findings.md, "float16
    # output normalised by the unrounded sum").
    norm = l_i if FP32_IEEE else w_i
    out = acc / tl.where(empty, 1.0, norm)[:, None]
    lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
    if EMULATE_BF16:
        out = _round_to_bfloat16(out)
    o_ptrs = Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])
    tl.store(Lse + b * stride_lb + h * stride_lh + offs_m * stride_ln, lse, mask=row_ok)


def launch(q, k, v, out, lse, *, softmax_scale, left, right, config, emulate_bf16,
           mask=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None):
    """Run the forward kernel; arguments must already be validated.

    Dense: q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``, out like q, lse ``(B, H, Nq)``
    float32; ``mask`` None or a bool tensor broadcastable to ``(B, H, Nq, Nk)``.
    Packed (``cu_seqlens_q`` given): q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)``, out like q,
    lse ``(H, Tq)``; ``cu_seqlens_*`` contiguous int32 ``(S+1,)`` offsets; ``max_seqlen_*``
    at least every sequence's length. Any strides otherwise. ``left``/``right`` are band
    bounds with -1 unbounded. ``config`` holds ``BLOCK_M``, ``BLOCK_N``, ``num_warps`` and
    ``num_stages``.
    """
    shape = problem_shape(q, k, cu_seqlens_q, max_seqlen_q, max_seqlen_k)
    batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim = shape
    if batch * heads * seqlen_q == 0:
        return
    varlen = cu_seqlens_q is not None
    mask, mask_strides = mask_arguments(mask, batch, heads, seqlen_q, seqlen_k)
    # Unbounded sides become bounds no key can cross, keeping a single kernel variant.
    reach = seqlen_q + seqlen_k
    block_d = padded_head_dim(head_dim)
    grid = (triton.cdiv(seqlen_q, config["BLOCK_M"]), batch * heads)
    launcher.launch(
        _attention_forward, grid, (q, k, v, out, lse, mask, cu_seqlens_q, cu_seqlens_k),
        (*batched_strides(q, varlen), *batched_strides(k, varlen), *batched_strides(v, varlen),
         *batched_strides(out, varlen), *batched_strides(lse, varlen), *mask_strides,
         heads, heads // kv_heads, seqlen_q, seqlen_k, head_dim,
         softmax_scale * LOG2_E,
         reach if left == -1 else left, reach if right == -1 else right),
        BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], BLOCK_D=block_d, FULL_D=head_dim == block_d,
        POSITIVE_SCALE=softmax_scale > 0, FP32_IEEE=q.dtype.itemsize == 4, EMULATE_BF16=emulate_bf16,
        HAS_MASK=mask is not None, IS_VARLEN=varlen,
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )


def problem_shape(q, k, cu_seqlens_q, max_seqlen_q, max_seqlen_k):
    """``(batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim)`` as the kernels see it: for a
    packed call the batch is the number of sequences and the lengths are the largest ones."""
    if cu_seqlens_q is None:
        batch, seqlen_q, heads, head_dim = q.shape
        return batch, seqlen_q, k.shape[1], heads, k.shape[2], head_dim
    return cu_seqlens_q.shape[0] - 1, max_seqlen_q, max_seqlen_k, q.shape[1], k.shape[1], q.shape[2]


def batched_strides(tensor, varlen):
    """Strides with a leading batch stride: a packed ``(T, ...)`` tensor gets batch stride 0,
    since with ``IS_VARLEN`` the kernels move to each sequence through ``cu_seqlens``."""
    return (0, *tensor.stride()) if varlen else tensor.stride()


def mask_arguments(mask, batch, heads, seqlen_q, seqlen_k):
    """``(mask, strides)`` for the kernels: the bool mask as a uint8 ``(B, H, Nq, Nk)`` view
    with stride 0 along broadcast dims (nothing is materialised); ``(None, zeros)``
    without a mask."""
    if mask is None:
        return None, (0, 0, 0, 0)
    mask = mask.expand(batch, heads, seqlen_q, seqlen_k)
    return mask.view(torch.uint8), mask.stride()
