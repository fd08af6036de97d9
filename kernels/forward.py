"""Triton forward kernel: tiled attention with an online softmax, returning out and lse.

One program computes one block of ``BLOCK_M`` queries of one (batch, head). It walks only
the key blocks that intersect the allowed band of its queries (blocks wholly outside a
causal or sliding-window band are never loaded), keeping a running maximum ``m`` and sum
``l`` in base 2 (the scale is folded with log2(e) so that ``exp2`` does the work) and
rescaling the float32 accumulator whenever the maximum grows. Probabilities are rounded to
the input dtype before the product with V, as in FlashAttention-2. A row with no allowed
key keeps ``m = -inf`` and ``l = 0``; it is written as output 0 and lse ``-inf``.

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

import triton
import triton.language as tl

LOG2_E = 1.4426950408889634


@triton.jit
def _round_to_bfloat16(x):
    """float32 -> the nearest bfloat16 value (ties to even), still as float32; NaN kept."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + (0x7FFF + ((bits >> 16) & 1))) & 0xFFFF0000
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))


@triton.jit
def _key_range(first_row, seqlen_q, seqlen_k, window_left, window_right,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``[start, end)`` of the keys that some row of the query block starting at
    ``first_row`` may attend (bottom-right band), ``start`` aligned down to ``BLOCK_N``.
    Key blocks outside it are skipped."""
    last_row = tl.minimum(first_row + BLOCK_M, seqlen_q) - 1
    start = tl.maximum(first_row + (seqlen_k - seqlen_q) - window_left, 0)
    start = (start // BLOCK_N) * BLOCK_N
    end = tl.minimum(last_row + (seqlen_k - seqlen_q) + window_right + 1, seqlen_k)
    return start, end


@triton.jit
def _attention_forward(
    Q, K, V, Out, Lse,
    stride_qb, stride_qn, stride_qh, stride_qd,
    stride_kb, stride_kn, stride_kh, stride_kd,
    stride_vb, stride_vn, stride_vh, stride_vd,
    stride_ob, stride_on, stride_oh, stride_od,
    stride_lb, stride_lh, stride_ln,
    heads, group, seqlen_q, seqlen_k, head_dim,
    qk_scale_log2,  # softmax_scale * log2(e)
    window_left, window_right,  # band bounds, already made finite by the launcher
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    FP32_IEEE: tl.constexpr, EMULATE_BF16: tl.constexpr,
):
    block_m = tl.program_id(0)
    batch_head = tl.program_id(1)
    b = batch_head // heads
    h = batch_head % heads
    kv_h = h // group

    offs_m = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < seqlen_q
    d_ok = offs_d < head_dim

    q_ptrs = Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if EMULATE_BF16:
        q = q.to(tl.float32)
    k_base = K + b * stride_kb + kv_h * stride_kh + offs_d[:, None] * stride_kd
    v_base = V + b * stride_vb + kv_h * stride_vh + offs_d[None, :] * stride_vd

    # Query i may attend key j iff lo_i <= j <= hi_i (bottom-right aligned band).
    diagonal = offs_m + (seqlen_k - seqlen_q)
    lo = diagonal - window_left
    hi = diagonal + window_right
    n_start, n_end = _key_range(block_m * BLOCK_M, seqlen_q, seqlen_k, window_left, window_right, BLOCK_M, BLOCK_N)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for start_n in range(n_start, n_end, BLOCK_N):
        cols = start_n + offs_n
        col_ok = cols < seqlen_k
        k = tl.load(k_base + cols[None, :] * stride_kn, mask=d_ok[:, None] & col_ok[None, :], other=0.0)
        if EMULATE_BF16:
            k = k.to(tl.float32)
        if FP32_IEEE:
            s = tl.dot(q, k, input_precision="ieee")
        else:
            s = tl.dot(q, k)
        s = s * qk_scale_log2
        allowed = col_ok[None, :] & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # A row that has seen no allowed key yet keeps m = -inf; subtract 0 instead so
        # that exp2 gives 0 rather than NaN from (-inf) - (-inf).
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_safe)
        p = tl.math.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vn, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        if EMULATE_BF16:
            acc += tl.dot(_round_to_bfloat16(p), v.to(tl.float32), input_precision="ieee")
        elif FP32_IEEE:
            acc += tl.dot(p, v, input_precision="ieee")
        else:
            acc += tl.dot(p.to(v.dtype), v)
        m_i = m_new

    empty = l_i == 0.0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
    if EMULATE_BF16:
        out = _round_to_bfloat16(out)
    o_ptrs = Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])
    tl.store(Lse + b * stride_lb + h * stride_lh + offs_m * stride_ln, lse, mask=row_ok)


def launch(q, k, v, out, lse, *, softmax_scale, left, right, config, emulate_bf16):
    """Run the forward kernel; arguments must already be validated.

    q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``, out like q, lse ``(B, H, Nq)``
    float32, any strides. ``left``/``right`` are band bounds with -1 unbounded.
    ``config`` holds ``BLOCK_M``, ``BLOCK_N``, ``num_warps`` and ``num_stages``.
    """
    batch, seqlen_q, heads, head_dim = q.shape
    seqlen_k, kv_heads = k.shape[1], k.shape[2]
    if batch * heads * seqlen_q == 0:
        return
    # Unbounded sides become bounds no key can cross, keeping a single kernel variant.
    reach = seqlen_q + seqlen_k
    block_d = max(16, triton.next_power_of_2(head_dim))
    grid = (triton.cdiv(seqlen_q, config["BLOCK_M"]), batch * heads)
    _attention_forward[grid](
        q, k, v, out, lse,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(), *lse.stride(),
        heads, heads // kv_heads, seqlen_q, seqlen_k, head_dim,
        softmax_scale * LOG2_E,
        reach if left == -1 else left, reach if right == -1 else right,
        BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], BLOCK_D=block_d,
        FP32_IEEE=q.dtype.itemsize == 4, EMULATE_BF16=emulate_bf16,
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )
