"""Triton backward kernels (FlashAttention-2 style), bitwise deterministic.

Three kernels, no atomic sums:

1. ``_preprocess``: ``delta_i = Σ_d dO_id · O_id - dlse_i`` per query row (the upstream
   gradient of lse enters here: ``∂lse_i/∂s_ij = P_ij``, so it shifts ``delta``); in
   float16 also the bound on |dS| described below, whose atomic maxima are order-free.
2. ``_dk_dv``: one program per (batch, KV head, key block). It holds its K and V tiles and
   sweeps, for every query head of its GQA group in a fixed order, the query blocks that
   can see the key block, recomputing ``P = exp(s - lse)`` from the saved lse:
   ``dV += Pᵀ·dO`` and ``dK += dSᵀ·Q`` with ``dS = P ∘ (dO·Vᵀ - delta)``. Summing the group
   inside one program is what makes GQA gradients exact sums without atomics.
3. ``_dq``: one program per (batch, head, query block), sweeping the key blocks in its
   band: ``dQ += dS·K``.

Blocks wholly outside the causal/window band are skipped, as in the forward. Rows with no
allowed key have lse ``-inf``; it is replaced by ``+inf`` so that their recomputed P is 0
and their dQ exactly 0. P and dS are rounded to the input dtype before their products, as
in FlashAttention-2, except that in float16 |dS| can exceed 65504 where the exact gradients
are far inside the range. The delta pass therefore also bounds every |dS| of the launch
(:func:`_float16_ds_may_overflow`); only where that bound reaches 2^15 do the block loops
scale each row (for dQ) or column (for dK) of a dS tile by a power of two before rounding
and undo it after. Below it, the common case, they run the plain loops, which give the same
numbers. ``_dk_dv`` and ``_dq`` are launched once per variant (``SCALE_DS``), and each
program of the variant the bound does not select returns at once: the choice costs no
host synchronisation and nothing inside the loops (a per-tile check there, and even a
choice between two loops inside one kernel, cost the float16 backward 10-25% of its
speed on an H100). Under ``EMULATE_BF16`` (the
interpreter with bfloat16, see ``forward.py``) tiles are widened to float32 and the
rounding is done explicitly.

Packed variable length (``IS_VARLEN``): delta is computed over all tokens at once (it is a
per-row quantity); ``_dk_dv`` runs per (key block, sequence, KV head) and ``_dq`` per
(query block, sequence, head), each moving its base pointers to its sequence's first token
and masking with the sequence's own lengths, as the forward does. lse and delta are
``(H, Tq)`` then, addressed with the batch stride 0.

Boolean mask (``HAS_MASK``): the recomputed P uses the forward's mask, and dS is set to 0
outside the allowed entries with ``tl.where`` (``0 * NaN`` would otherwise carry NaN from a
hidden key's value into dS). A key hidden from every query thus gets exactly zero dK and
dV. Hidden keys are loaded like visible ones (see the forward's comment on why).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from flashcheck.kernels import launcher
from flashcheck.kernels.config import padded_head_dim
from flashcheck.kernels.forward import (
    LOG2_E, _add_block, _key_blocks, _load_columns, _load_rows, _mask_tile, _past_gap, _round_to_bfloat16, _sequence,
    batched_strides, mask_arguments, problem_shape,
)


@triton.jit
def _row_statistics(Lse, Delta, rows, row_ok):
    """Base-2 lse and delta of the rows (``rows`` index both buffers, which share one
    layout). lse -inf marks a row with no key: it becomes +inf, which makes the row's
    recomputed P exactly 0."""
    lse = tl.load(Lse + rows, mask=row_ok, other=float("inf"))
    lse2 = tl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)
    return lse2, tl.load(Delta + rows, mask=row_ok, other=0.0)


@triton.jit
def _float16_safe_scales(magnitude):
    """Per-entry powers of two ``(down, up)``, ``down = 1/up``, that bring ``magnitude``
    below 2^16 so that ``magnitude * down`` rounds to float16 without overflowing.

    ``up = 2^s`` with ``s`` the least shift that suffices (0, so exactly 1, for every
    magnitude below 2^15). Built from the exponent bits: exact, no approximate log2."""
    biased = ((magnitude.to(tl.uint32, bitcast=True) >> 23) & 0xFF).to(tl.int32)
    shift = tl.maximum(biased - 141, 0)  # 141 = 127 + 14: magnitudes below 2^15 are left alone
    down = ((127 - shift) << 23).to(tl.float32, bitcast=True)
    up = ((127 + shift) << 23).to(tl.float32, bitcast=True)
    return down, up


@triton.jit
def _float16_ds_may_overflow(Bounds):
    """Whether some |dS| of the launch may reach 2^15, by the bounds the delta pass stored:
    ``|dS_ij| = P_ij·|dO_i·v_j - delta_i| <= max_i‖dO_i‖·max_j‖v_j‖ + max_i|delta_i|`` (P <= 1,
    Cauchy-Schwarz), which leaves a factor of two to float16's largest value, 65504, for
    the rounding of the computed products."""
    bound = tl.load(Bounds) * tl.load(Bounds + 2) + tl.load(Bounds + 1)
    return bound >= 32768.0


#: As the forward's :data:`~flashcheck.kernels.forward.UNSPECIALISED`, per kernel: the runtime
#: arguments whose value specialisation changes no benchmark configuration's code (PTX
#: compared for sm90, docs/performance.md). ``seqlen_k`` of ``_dk_dv`` and
#: ``seqlen_q`` of ``_dq`` (their programs' own block axis) change it, so stay specialised.
PREPROCESS_UNSPECIALISED = ("heads", "kv_heads", "seqlen_q", "seqlen_k")
DK_DV_UNSPECIALISED = ("heads", "kv_heads", "seqlen_q", "window_left", "window_right", "stride_lb", "stride_lh")
DQ_UNSPECIALISED = ("heads", "seqlen_k", "window_left", "window_right", "stride_lb", "stride_lh")


@triton.jit(do_not_specialize=PREPROCESS_UNSPECIALISED)
def _preprocess(
    Out, DOut, DLse, Delta, V, Offset, TokenSequences, Bounds,
    stride_ob, stride_on, stride_oh, stride_od,
    stride_db, stride_dn, stride_dh, stride_dd,
    stride_vb, stride_vn, stride_vh, stride_vd,
    heads, kv_heads, seqlen_q, seqlen_k, head_dim,
    HAS_DLSE: tl.constexpr, FLOAT16_DS: tl.constexpr, IS_VARLEN: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """delta of ``BLOCK_M`` rows of one (batch, head); with ``FLOAT16_DS`` the values' shared
    offset ``c`` (``Offset``, float32 ``(B, Hkv, D)``; packed, ``(sequences, Hkv, D)`` and
    ``TokenSequences`` the sequence of each query token) is taken out of it, ``delta_i =
    dO_i·(O_i - c)``, to match the shifted values ``V = v - c`` the other kernels read (see
    :func:`shared_offset`), and the running maxima ``Bounds = (max‖dO_i‖, max|delta_i|,
    max‖v_j - c‖)`` are kept (``Bounds`` zeroed by the caller; the grid then covers the
    keys' rows too), which are order-free, so the atomics keep the backward deterministic."""
    block_m = tl.program_id(0)
    batch_head = tl.program_id(1)
    b = batch_head // heads
    h = batch_head % heads
    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok, d_ok = offs_m < seqlen_q, offs_d < head_dim
    o = _load_rows(Out + b * stride_ob + h * stride_oh, offs_m, offs_d, stride_on, stride_od, row_ok, d_ok)
    do = _load_rows(DOut + b * stride_db + h * stride_dh, offs_m, offs_d, stride_dn, stride_dd, row_ok, d_ok)
    o, do = o.to(tl.float32), do.to(tl.float32)
    if FLOAT16_DS:
        # O - c is exact in float32 (Sterbenz, where c is not 0): the offset drops out of
        # delta before the sum, as it does from dP = dO·(v - c).
        kv_h = h // (heads // kv_heads)
        if IS_VARLEN:
            sequence = tl.load(TokenSequences + offs_m, mask=row_ok, other=0)
            rows = (sequence * kv_heads + kv_h) * head_dim
            o -= tl.load(Offset + rows[:, None] + offs_d[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)
        else:
            o -= tl.load(Offset + (b * kv_heads + kv_h) * head_dim + offs_d, mask=d_ok, other=0.0)[None, :]
    delta = tl.sum(o * do, 1)
    row = batch_head * seqlen_q + offs_m  # Delta and DLse are contiguous (B, H, Nq)
    if HAS_DLSE:
        delta -= tl.load(DLse + row, mask=offs_m < seqlen_q, other=0.0)
    tl.store(Delta + row, delta, mask=offs_m < seqlen_q)
    if FLOAT16_DS:  # rows past the queries' end are 0 and count for nothing
        tl.atomic_max(Bounds, tl.max(tl.sqrt(tl.sum(do * do, 1))))
        tl.atomic_max(Bounds + 1, tl.max(tl.abs(delta)))
        if h < kv_heads:
            v = _load_rows(V + b * stride_vb + h * stride_vh, offs_m, offs_d, stride_vn, stride_vd,
                           offs_m < seqlen_k, d_ok).to(tl.float32)
            tl.atomic_max(Bounds + 2, tl.max(tl.sqrt(tl.sum(v * v, 1))))


@triton.jit
def _allowed(rows, cols, seqlen_q, seqlen_k, lo, hi, Mask, stride_mm, stride_mn, HAS_MASK: tl.constexpr):
    """Which (row, key) entries of the tile may attend: in range, in the band, in the mask."""
    row_ok, col_ok = rows < seqlen_q, cols < seqlen_k
    allowed = row_ok[:, None] & col_ok[None, :]
    allowed = allowed & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None])
    if HAS_MASK:
        allowed = allowed & _mask_tile(Mask, rows, cols, stride_mm, stride_mn, row_ok, col_ok)
    return allowed


@triton.jit
def _probabilities(q, k, lse2, allowed, qk_scale_log2, BAND: tl.constexpr, HAS_MASK: tl.constexpr,
                   FP32_IEEE: tl.constexpr):
    """Recompute P (BLOCK_M x BLOCK_N, float32) from the saved base-2 lse. ``allowed`` is
    applied only where the tile may hold hidden entries: on the band's edges (``BAND``) or
    under a boolean mask."""
    if FP32_IEEE:
        s = tl.dot(q, k, input_precision="ieee")
    else:
        s = tl.dot(q, k)
    s = s * qk_scale_log2 - lse2[:, None]  # one multiply-add per entry
    if BAND:
        s = tl.where(allowed, s, float("-inf"))
    elif HAS_MASK:
        s = tl.where(allowed, s, float("-inf"))
    return tl.math.exp2(s)


@triton.jit
def _probabilities_and_ds(q, do, kt, vt, lse2, delta, allowed, qk_scale_log2, BAND: tl.constexpr,
                          HAS_MASK: tl.constexpr, FP32_IEEE: tl.constexpr):
    """``(P, dS)`` of a tile: P from :func:`_probabilities`, ``dS = P ∘ (dO·Vᵀ - delta)``,
    set to 0 outside ``allowed`` under a boolean mask."""
    p = _probabilities(q, kt, lse2, allowed, qk_scale_log2, BAND, HAS_MASK, FP32_IEEE)
    if FP32_IEEE:
        dp = tl.dot(do, vt, input_precision="ieee")
    else:
        dp = tl.dot(do, vt)
    ds = p * (dp - delta[:, None])
    if HAS_MASK:
        ds = tl.where(allowed, ds, 0.0)  # a hidden key's NaN value must not reach dS
    return p, ds


@triton.jit
def _query_blocks(first_key, seqlen_q, seqlen_k, window_left, window_right,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``(start, free_start, free_end, end)`` for the key block starting at ``first_key``,
    the transpose of the forward's ``_key_blocks``: queries ``[start, end)`` are those that
    may attend some key of the block (``start`` aligned down to ``BLOCK_M``); the query
    blocks of ``[free_start, free_end)`` (aligned, possibly empty) hold only valid rows that
    attend every key of the block, and exist only when the key block lies wholly inside
    the keys, so they need neither bounds nor band masking."""
    offset = seqlen_k - seqlen_q
    last_key = tl.minimum(first_key + BLOCK_N, seqlen_k) - 1
    # Row i attends key j iff j - offset - right <= i <= j - offset + left.
    start = tl.maximum(first_key - offset - window_right, 0)
    start = (start // BLOCK_M) * BLOCK_M
    end = tl.minimum(last_key - offset + window_left + 1, seqlen_q)
    free_start = tl.cdiv(tl.maximum(last_key - offset - window_right, 0), BLOCK_M) * BLOCK_M
    free_end = (tl.minimum(first_key - offset + window_left + 1, seqlen_q) // BLOCK_M) * BLOCK_M
    free_end = tl.where(first_key + BLOCK_N <= seqlen_k, free_end, 0)
    free_start = tl.maximum(tl.minimum(free_start, end), start)  # as in _key_blocks
    return start, free_start, tl.maximum(free_end, free_start), end


@triton.jit
def _dk_dv_blocks(
    dk, dv, kt, vt, q_base, do_base, Lse, Delta, Mask, start, gap_start, gap_end, end, stats, offs_m, offs_n, offs_d,
    d_ok, offset, window_left, window_right, seqlen_q, seqlen_k, stride_qn, stride_qd, stride_dn, stride_dd,
    stride_mm, stride_mn, qk_scale_log2,
    BLOCK_M: tl.constexpr, BAND: tl.constexpr, FULL_D: tl.constexpr, FP32_IEEE: tl.constexpr,
    EMULATE_BF16: tl.constexpr, SCALE_DS: tl.constexpr, HAS_MASK: tl.constexpr,
):
    """dK and dV of one key block (``kt``, ``vt`` its K and V transposed) accumulated over the
    query blocks of ``[start, gap_start)`` and ``[gap_end, end)`` of one query head:
    ``q_base``/``do_base`` point at that head's Q and dO, ``stats`` at its lse/delta row 0,
    ``Mask`` at its mask slice. ``BAND``: the blocks may cross the band's edges or the
    queries' end (bounded loads, band masking); without it they are free blocks of
    :func:`_query_blocks` and the gap is empty. The two edges share one loop, as in the
    forward's ``_attend_blocks``. ``SCALE_DS``: scale dS's columns into float16's range
    before rounding (see the module's docstring)."""
    gap = gap_end - gap_start
    for block in range(start, end - gap, BLOCK_M):
        start_m = _past_gap(block, gap_start, gap, BAND)
        rows = start_m + offs_m
        row_ok = rows < seqlen_q
        q = _load_rows(q_base, rows, offs_d, stride_qn, stride_qd, row_ok, d_ok, BAND, FULL_D)
        do = _load_rows(do_base, rows, offs_d, stride_dn, stride_dd, row_ok, d_ok, BAND, FULL_D)
        lse2, delta = _row_statistics(Lse, Delta, stats + rows, row_ok)
        if EMULATE_BF16:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        diagonal = rows + offset
        allowed = _allowed(rows, offs_n, seqlen_q, seqlen_k, diagonal - window_left, diagonal + window_right,
                           Mask, stride_mm, stride_mn, HAS_MASK)
        p, ds = _probabilities_and_ds(q, do, kt, vt, lse2, delta, allowed, qk_scale_log2, BAND, HAS_MASK, FP32_IEEE)
        if EMULATE_BF16:
            dv += tl.dot(tl.trans(_round_to_bfloat16(p)), do, input_precision="ieee")
            dk += tl.dot(tl.trans(_round_to_bfloat16(ds)), q, input_precision="ieee")
        elif FP32_IEEE:
            dv = _add_block(dv, 1.0, tl.dot(tl.trans(p), do, input_precision="ieee"))
            dk = _add_block(dk, 1.0, tl.dot(tl.trans(ds), q, input_precision="ieee"))
        elif SCALE_DS:
            dv += tl.dot(tl.trans(p.to(do.dtype)), do)
            # dS may exceed float16's range (65504) where the exact dK does not: each key's
            # column is scaled by a power of two before rounding and the scale undone after.
            down, up = _float16_safe_scales(tl.max(tl.abs(ds), 0))
            dk += tl.dot(tl.trans((ds * down[None, :]).to(q.dtype)), q) * up[:, None]
        else:
            dv += tl.dot(tl.trans(p.to(do.dtype)), do)
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
    return dk, dv


@triton.jit(do_not_specialize=DK_DV_UNSPECIALISED)
def _dk_dv(
    Q, K, V, DOut, Lse, Delta, DK, DV, Mask, CuSeqlensQ, CuSeqlensK, Bounds,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kb, stride_kn, stride_kh, stride_kd,
    stride_vb, stride_vn, stride_vh, stride_vd,
    stride_db, stride_dn, stride_dh, stride_dd,
    stride_dkb, stride_dkn, stride_dkh, stride_dkd,
    stride_dvb, stride_dvn, stride_dvh, stride_dvd,
    stride_lb, stride_lh,  # of lse and delta, contiguous along the queries
    stride_mb, stride_mh, stride_mm, stride_mn,
    heads, kv_heads, group, seqlen_q, seqlen_k, head_dim,
    softmax_scale, qk_scale_log2, window_left, window_right,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, FULL_D: tl.constexpr,
    FP32_IEEE: tl.constexpr, EMULATE_BF16: tl.constexpr, FLOAT16_DS: tl.constexpr, SCALE_DS: tl.constexpr,
    HAS_MASK: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    if FLOAT16_DS:  # launched twice, once per SCALE_DS: only the launch the bound selects works
        if _float16_ds_may_overflow(Bounds) != SCALE_DS:
            return
    block_n = tl.program_id(0)
    batch_kv = tl.program_id(1)
    b = batch_kv // kv_heads  # the batch entry, or with IS_VARLEN the sequence
    kv_h = batch_kv % kv_heads
    if IS_VARLEN:
        # Batch strides are 0; the sequence's first tokens move the bases (see forward.py).
        q_start, seqlen_q = _sequence(CuSeqlensQ, b)
        k_start, seqlen_k = _sequence(CuSeqlensK, b)
        if block_n * BLOCK_N >= seqlen_k:
            return
        Q += q_start * stride_qn
        DOut += q_start * stride_dn
        Lse += q_start
        Delta += q_start
        K += k_start * stride_kn
        V += k_start * stride_vn
        DK += k_start * stride_dkn
        DV += k_start * stride_dvn
    offs_n = block_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    col_ok = offs_n < seqlen_k

    # K transposed (BLOCK_D x BLOCK_N) for s = q·kᵀ, V transposed for dp = dO·vᵀ.
    kt = _load_columns(K + b * stride_kb + kv_h * stride_kh, offs_n, offs_d, stride_kn, stride_kd, col_ok, d_ok)
    vt = _load_columns(V + b * stride_vb + kv_h * stride_vh, offs_n, offs_d, stride_vn, stride_vd, col_ok, d_ok)
    if EMULATE_BF16:
        kt = kt.to(tl.float32)
        vt = vt.to(tl.float32)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)

    # Queries that can see a key of this block: i in [j - off - right, j - off + left].
    offset = seqlen_k - seqlen_q
    m_start, free_start, free_end, m_end = _query_blocks(block_n * BLOCK_N, seqlen_q, seqlen_k, window_left,
                                                         window_right, BLOCK_M, BLOCK_N)
    for t in range(0, group):
        h = kv_h * group + t
        if HAS_MASK:
            mask_h = Mask + b * stride_mb + h * stride_mh
        else:
            mask_h = Mask
        q_base = Q + b * stride_qb + h * stride_qh
        do_base = DOut + b * stride_db + h * stride_dh
        stats = b * stride_lb + h * stride_lh
        # The free query blocks, then the band's two edges (see the forward).
        dk, dv = _dk_dv_blocks(
            dk, dv, kt, vt, q_base, do_base, Lse, Delta, mask_h, free_start, free_end, free_end, free_end, stats,
            offs_m, offs_n, offs_d, d_ok, offset, window_left, window_right, seqlen_q, seqlen_k, stride_qn, stride_qd,
            stride_dn, stride_dd, stride_mm, stride_mn, qk_scale_log2, BLOCK_M, False, FULL_D, FP32_IEEE,
            EMULATE_BF16, SCALE_DS, HAS_MASK)
        dk, dv = _dk_dv_blocks(
            dk, dv, kt, vt, q_base, do_base, Lse, Delta, mask_h, m_start, free_start, free_end, m_end, stats,
            offs_m, offs_n, offs_d, d_ok, offset, window_left, window_right, seqlen_q, seqlen_k, stride_qn, stride_qd,
            stride_dn, stride_dd, stride_mm, stride_mn, qk_scale_log2, BLOCK_M, True, FULL_D, FP32_IEEE,
            EMULATE_BF16, SCALE_DS, HAS_MASK)
    dk = dk * softmax_scale
    if EMULATE_BF16:
        dk = _round_to_bfloat16(dk)
        dv = _round_to_bfloat16(dv)
    store = col_ok[:, None] & d_ok[None, :]
    tl.store(DK + b * stride_dkb + kv_h * stride_dkh + offs_n[:, None] * stride_dkn + offs_d[None, :] * stride_dkd,
             dk.to(DK.dtype.element_ty), mask=store)
    tl.store(DV + b * stride_dvb + kv_h * stride_dvh + offs_n[:, None] * stride_dvn + offs_d[None, :] * stride_dvd,
             dv.to(DV.dtype.element_ty), mask=store)


@triton.jit
def _dq_blocks(
    dq, q, do, lse2, delta, key_offset, k_base, v_base, Mask, start, gap_start, gap_end, end, offs_m, offs_n, offs_d,
    d_ok,
    lo, hi, seqlen_q, seqlen_k, stride_kn, stride_kd, stride_vn, stride_vd, stride_mm, stride_mn,
    qk_scale_log2,
    BLOCK_N: tl.constexpr, BAND: tl.constexpr, FULL_D: tl.constexpr, FP32_IEEE: tl.constexpr,
    EMULATE_BF16: tl.constexpr, SCALE_DS: tl.constexpr, HAS_MASK: tl.constexpr,
):
    """dQ of one query block accumulated over the key blocks of ``[start, gap_start)`` and
    ``[gap_end, end)``; ``BAND`` and the gap as in the forward's ``_attend_blocks`` (without
    ``BAND``, the free blocks of ``_key_blocks``: rows past the queries' end have q = dO = 0
    and lse +inf there, so their P and dS are 0). ``SCALE_DS`` as in :func:`_dk_dv_blocks`,
    with one scale per query row. In float16 (``SCALE_DS`` or not) the product is taken with
    the keys less their shared offset ``key_offset`` (see :func:`_dq`)."""
    gap = gap_end - gap_start
    for block in range(start, end - gap, BLOCK_N):
        start_n = _past_gap(block, gap_start, gap, BAND)
        cols = start_n + offs_n
        col_ok = cols < seqlen_k
        allowed = _allowed(offs_m, cols, seqlen_q, seqlen_k, lo, hi, Mask, stride_mm, stride_mn, HAS_MASK)
        kt = _load_columns(k_base, cols, offs_d, stride_kn, stride_kd, col_ok, d_ok, BAND, FULL_D)
        vt = _load_columns(v_base, cols, offs_d, stride_vn, stride_vd, col_ok, d_ok, BAND, FULL_D)
        if EMULATE_BF16:
            kt = kt.to(tl.float32)
            vt = vt.to(tl.float32)
        p, ds = _probabilities_and_ds(q, do, kt, vt, lse2, delta, allowed, qk_scale_log2, BAND, HAS_MASK, FP32_IEEE)
        if EMULATE_BF16:
            dq += tl.dot(_round_to_bfloat16(ds), tl.trans(kt), input_precision="ieee")
        elif FP32_IEEE:
            dq = _add_block(dq, 1.0, tl.dot(ds, tl.trans(kt), input_precision="ieee"))
        elif SCALE_DS:
            down, up = _float16_safe_scales(tl.max(tl.abs(ds), 1))
            dq += tl.dot((ds * down[:, None]).to(kt.dtype), tl.trans(kt - key_offset[:, None])) * up[:, None]
        else:
            dq += tl.dot(ds.to(kt.dtype), tl.trans(kt - key_offset[:, None]))
    return dq


@triton.jit(do_not_specialize=DQ_UNSPECIALISED)
def _dq(
    Q, K, V, DOut, Lse, Delta, DLse, KeyOffset, DQ, Mask, CuSeqlensQ, CuSeqlensK, Bounds,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kb, stride_kn, stride_kh, stride_kd,
    stride_vb, stride_vn, stride_vh, stride_vd,
    stride_db, stride_dn, stride_dh, stride_dd,
    stride_dqb, stride_dqn, stride_dqh, stride_dqd,
    stride_lb, stride_lh,  # of lse and delta, contiguous along the queries
    stride_mb, stride_mh, stride_mm, stride_mn,
    heads, group, seqlen_q, seqlen_k, head_dim,
    softmax_scale, qk_scale_log2, window_left, window_right,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, FULL_D: tl.constexpr,
    FP32_IEEE: tl.constexpr, EMULATE_BF16: tl.constexpr, FLOAT16_DS: tl.constexpr, SCALE_DS: tl.constexpr,
    HAS_MASK: tl.constexpr, IS_VARLEN: tl.constexpr, HAS_DLSE: tl.constexpr,
):
    """dQ of one (batch, head, query block). In float16, ``dQ_i = scale·(Σ_j dS_ij·(k_j - c) +
    σ_i·c)`` with ``c`` the keys' shared offset (``KeyOffset``, as :func:`shared_offset`
    chooses it) and ``σ_i = Σ_j dS_ij`` taken exact: ``dlse_i`` on a row with keys (the
    probabilities sum to one), 0 on one without. It equals ``scale·Σ_j dS_ij·k_j``, but the
    rounding of dS to float16 and any error of delta (the forward's output weighs the values
    by the probabilities as rounded for ``P·V``, the backward by the unrounded ones) leave
    ``Σ_j dS_ij`` a little off, which keys sharing a large component would multiply by that
    component, past float16's range where the exact dQ is small."""
    if FLOAT16_DS:  # as in _dk_dv
        if _float16_ds_may_overflow(Bounds) != SCALE_DS:
            return
    block_m = tl.program_id(0)
    batch_head = tl.program_id(1)
    b = batch_head // heads  # the batch entry, or with IS_VARLEN the sequence
    h = batch_head % heads
    kv_h = h // group
    if IS_VARLEN:
        q_start, seqlen_q = _sequence(CuSeqlensQ, b)
        k_start, seqlen_k = _sequence(CuSeqlensK, b)
        if block_m * BLOCK_M >= seqlen_q:
            return
        Q += q_start * stride_qn
        DOut += q_start * stride_dn
        DQ += q_start * stride_dqn
        Lse += q_start
        Delta += q_start
        DLse += q_start
        K += k_start * stride_kn
        V += k_start * stride_vn
    if HAS_MASK:
        Mask += b * stride_mb + h * stride_mh
    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    row_ok = offs_m < seqlen_q

    q = _load_rows(Q + b * stride_qb + h * stride_qh, offs_m, offs_d, stride_qn, stride_qd, row_ok, d_ok)
    do = _load_rows(DOut + b * stride_db + h * stride_dh, offs_m, offs_d, stride_dn, stride_dd, row_ok, d_ok)
    lse2, delta = _row_statistics(Lse, Delta, b * stride_lb + h * stride_lh + offs_m, row_ok)
    if EMULATE_BF16:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    if FLOAT16_DS:
        kv_row = b * (heads // group) + kv_h  # KeyOffset is (B, Hkv, D), or per sequence packed
        key_offset = tl.load(KeyOffset + kv_row * head_dim + offs_d, mask=d_ok, other=0.0)
    else:
        key_offset = tl.zeros([BLOCK_D], dtype=tl.float32)

    offset = seqlen_k - seqlen_q
    diagonal = offs_m + offset
    lo = diagonal - window_left
    hi = diagonal + window_right
    n_start, free_start, free_end, n_end = _key_blocks(block_m * BLOCK_M, seqlen_q, seqlen_k, window_left,
                                                       window_right, BLOCK_M, BLOCK_N)
    k_base = K + b * stride_kb + kv_h * stride_kh
    v_base = V + b * stride_vb + kv_h * stride_vh
    key_shift = key_offset.to(K.dtype.element_ty)  # exact: a float16 number (see shared_offset)
    # The free key blocks, then the band's two edges (see the forward).
    dq = _dq_blocks(dq, q, do, lse2, delta, key_shift, k_base, v_base, Mask, free_start, free_end, free_end,
                    free_end, offs_m, offs_n, offs_d, d_ok,
                    lo, hi, seqlen_q, seqlen_k, stride_kn, stride_kd, stride_vn, stride_vd, stride_mm,
                    stride_mn, qk_scale_log2, BLOCK_N, False, FULL_D, FP32_IEEE, EMULATE_BF16, SCALE_DS,
                    HAS_MASK)
    dq = _dq_blocks(dq, q, do, lse2, delta, key_shift, k_base, v_base, Mask, n_start, free_start, free_end,
                    n_end, offs_m, offs_n, offs_d, d_ok,
                    lo, hi, seqlen_q, seqlen_k, stride_kn, stride_kd, stride_vn, stride_vd, stride_mm,
                    stride_mn, qk_scale_log2, BLOCK_N, True, FULL_D, FP32_IEEE, EMULATE_BF16, SCALE_DS,
                    HAS_MASK)
    if FLOAT16_DS:
        rows = b * stride_lb + h * stride_lh + offs_m
        row_sum = tl.load(DLse + rows, mask=row_ok, other=0.0) if HAS_DLSE else tl.zeros([BLOCK_M], tl.float32)
        row_sum = tl.where(lse2 == float("inf"), 0.0, row_sum)
        dq += row_sum[:, None] * key_offset[None, :]
    dq = dq * softmax_scale
    if EMULATE_BF16:
        dq = _round_to_bfloat16(dq)
    tl.store(DQ + b * stride_dqb + h * stride_dqh + offs_m[:, None] * stride_dqn + offs_d[None, :] * stride_dqd,
             dq.to(DQ.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


def token_sequences(cu_seqlens: torch.Tensor, tokens: int) -> torch.Tensor:
    """The sequence (int64) each of ``tokens`` packed tokens belongs to, by ``cu_seqlens``."""
    positions = torch.arange(tokens, device=cu_seqlens.device, dtype=cu_seqlens.dtype)
    return torch.searchsorted(cu_seqlens, positions, right=True).long() - 1


def shared_offset(x: torch.Tensor, sequence_of_token: torch.Tensor | None = None,
                  sequences: int = 0) -> torch.Tensor:
    """The shared offset ``c`` of float16 keys or values ``x``: float32 ``(B, Hkv, D)`` for a
    dense ``x`` ``(B, N, Hkv, D)``; ``(sequences, Hkv, D)`` for a packed ``(T, Hkv, D)`` with
    each token's sequence (:func:`token_sequences`): per (batch entry or sequence, KV head,
    column) a float16 number near the middle of that column's entries, or 0 where no such
    number makes every ``x - c`` exact.

    Why: ``dS_ij = P_ij·(dP_ij - delta_i)`` with ``dP_ij = dO_i·v_j`` and ``delta_i = dO_i·O_i``.
    Where the values share a large component, both terms are large and nearly equal, each
    computed in float32 by its own summation (a dot; an elementwise sum), and their rounding
    errors do not cancel. Since the weights of ``O_i`` sum to one, ``dP_ij - delta_i =
    dO_i·(v_j - c) - dO_i·(O_i - c)`` for any vector c; with c inside the values' range both
    terms stay small. The keys' offset is taken out of dQ's product likewise (see ``_dq``).
    ``c`` is the midpoint of the column's least and largest entry, rounded to float16, kept
    only where every entry lies in ``[c/2, 2c]`` (``[2c, c/2]`` for a negative c), where
    ``x - c`` is exact (Sterbenz's lemma): the shift then changes no product, and columns
    without a shared offset (c = 0, also where an entry is NaN or infinite, or a sequence is
    empty) are passed through bit for bit. Per sequence, not over the whole packed batch, so
    that a packed call computes what one dense call per sequence does."""
    if sequence_of_token is None:
        if x.shape[1] == 0:
            return torch.zeros((x.shape[0], *x.shape[2:]), dtype=torch.float32, device=x.device)
        low, high = (t.float() for t in torch.aminmax(x, dim=1))
    else:
        shape = (sequences, *x.shape[1:])
        index = sequence_of_token[:, None, None].expand(x.shape)
        low, high = (torch.full(shape, fill, dtype=torch.float32, device=x.device).scatter_reduce(
            0, index, x.float(), reduce, include_self=True) for fill, reduce in ((float("inf"), "amin"),
                                                                                (float("-inf"), "amax")))
    c = ((low + high) / 2).to(torch.float16).float()
    exact = torch.where(c > 0, (low >= c / 2) & (high <= 2 * c), (high <= c / 2) & (low >= 2 * c))
    return torch.where(exact, c, 0.0).contiguous()


def without_offset(x: torch.Tensor, c: torch.Tensor, sequence_of_token: torch.Tensor | None = None) -> torch.Tensor:
    """``x - c`` in x's dtype, ``c`` from :func:`shared_offset` (exact where it is not 0), and
    packed, each token's sequence as there."""
    return x - (c.unsqueeze(1) if sequence_of_token is None else c[sequence_of_token]).to(x.dtype)


def launch(q, k, v, out, lse, grad_out, grad_lse, dq, dk, dv, delta, *,
           softmax_scale, left, right, config, emulate_bf16,
           mask=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None):
    """Run the three backward kernels; arguments must already be validated.

    Dense: q, out, grad_out, dq ``(B, Nq, H, D)``; k, v, dk, dv ``(B, Nk, Hkv, D)``; lse
    ``(B, H, Nq)``; ``mask`` as in the forward. Packed (``cu_seqlens_q`` given): q, out,
    grad_out, dq ``(Tq, H, D)``; k, v, dk, dv ``(Tk, Hkv, D)``; lse ``(H, Tq)``; the
    ``cu_seqlens_*``/``max_seqlen_*`` of the forward. Any strides, except: lse float32
    contiguous as the forward returned it, ``grad_lse`` None or contiguous like lse,
    ``delta`` a contiguous float32 scratch buffer shaped like lse. ``config``:
    ``{"dk_dv": ..., "dq": ...}``, each with ``BLOCK_M``, ``BLOCK_N``, ``num_warps`` and
    ``num_stages`` (the delta pass uses dq's).
    """
    shape = problem_shape(q, k, cu_seqlens_q, max_seqlen_q, max_seqlen_k)
    batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim = shape
    varlen = cu_seqlens_q is not None
    block_d = padded_head_dim(head_dim)
    reach = seqlen_q + seqlen_k
    left = reach if left == -1 else left
    right = reach if right == -1 else right
    fp32 = q.dtype.itemsize == 4
    float16_ds = q.dtype == torch.float16
    dq_config = config["dq"]
    # delta is per row: over a packed batch it runs over all tokens as one sequence, and so
    # do the float16 bounds over the keys.
    rows_batch, rows, key_rows = (1, q.shape[0], k.shape[0]) if varlen else (batch, seqlen_q, seqlen_k)
    # max ‖dO_i‖, max |delta_i|, max ‖v_j‖: the float16 dS bound (see _float16_ds_may_overflow).
    bounds = torch.zeros(3, dtype=torch.float32, device=q.device) if float16_ds else delta
    # float16: the kernels below read the values less their shared offset, and dQ takes the
    # keys' out of its product (see shared_offset and _dq).
    offset = key_offset = rows_sequence = delta  # stand-ins: the kernels read these in float16 only
    if float16_ds:
        keys_sequence = token_sequences(cu_seqlens_k, k.shape[0]) if varlen else None
        offset, key_offset = shared_offset(v, keys_sequence, batch), shared_offset(k, keys_sequence, batch)
        v = without_offset(v, offset, keys_sequence)
        if varlen:
            rows_sequence = token_sequences(cu_seqlens_q, q.shape[0])
    if rows_batch * heads * rows:
        covered = max(rows, key_rows) if float16_ds else rows
        launcher.launch(
            _preprocess, (triton.cdiv(covered, dq_config["BLOCK_M"]), rows_batch * heads),
            (out, grad_out, grad_lse if grad_lse is not None else delta, delta, v, offset, rows_sequence, bounds),
            (*batched_strides(out, varlen), *batched_strides(grad_out, varlen), *batched_strides(v, varlen),
             heads, kv_heads, rows, key_rows, head_dim), HAS_DLSE=grad_lse is not None, FLOAT16_DS=float16_ds,
            IS_VARLEN=varlen,
            BLOCK_M=dq_config["BLOCK_M"], BLOCK_D=block_d, **_options(dq_config),
        )
    mask, mask_strides = mask_arguments(mask, batch, heads, seqlen_q, seqlen_k)
    common = dict(BLOCK_D=block_d, FULL_D=head_dim == block_d, FP32_IEEE=fp32, EMULATE_BF16=emulate_bf16,
                  FLOAT16_DS=float16_ds, HAS_MASK=mask is not None, IS_VARLEN=varlen)
    dk_dv_config = config["dk_dv"]
    lse_strides = batched_strides(lse, varlen)[:2]
    # float16: both variants are launched and the bound, on the device, picks which one works
    # (the other's programs return at once), so that no launch waits on the host for it.
    for scale_ds in (False, True) if float16_ds else (False,):
        constants = dict(common, SCALE_DS=scale_ds)
        if batch * kv_heads * seqlen_k:
            launcher.launch(
                _dk_dv, (triton.cdiv(seqlen_k, dk_dv_config["BLOCK_N"]), batch * kv_heads),
                (q, k, v, grad_out, lse, delta, dk, dv, mask, cu_seqlens_q, cu_seqlens_k, bounds),
                (*batched_strides(q, varlen), *batched_strides(k, varlen), *batched_strides(v, varlen),
                 *batched_strides(grad_out, varlen), *batched_strides(dk, varlen), *batched_strides(dv, varlen),
                 *lse_strides, *mask_strides,
                 heads, kv_heads, heads // kv_heads, seqlen_q, seqlen_k, head_dim,
                 softmax_scale, softmax_scale * LOG2_E, left, right), **constants, **_blocks(dk_dv_config),
                **_options(dk_dv_config),
            )
        if batch * heads * seqlen_q:
            launcher.launch(
                _dq, (triton.cdiv(seqlen_q, dq_config["BLOCK_M"]), batch * heads),
                (q, k, v, grad_out, lse, delta, grad_lse if grad_lse is not None else delta, key_offset, dq, mask,
                 cu_seqlens_q, cu_seqlens_k, bounds),
                (*batched_strides(q, varlen), *batched_strides(k, varlen), *batched_strides(v, varlen),
                 *batched_strides(grad_out, varlen), *batched_strides(dq, varlen),
                 *lse_strides, *mask_strides,
                 heads, heads // kv_heads, seqlen_q, seqlen_k, head_dim,
                 softmax_scale, softmax_scale * LOG2_E, left, right), **constants, HAS_DLSE=grad_lse is not None,
                **_blocks(dq_config),
                **_options(dq_config),
            )


def _blocks(config: dict) -> dict:
    return {"BLOCK_M": config["BLOCK_M"], "BLOCK_N": config["BLOCK_N"]}


def _options(config: dict) -> dict:
    return {"num_warps": config["num_warps"], "num_stages": config["num_stages"]}
