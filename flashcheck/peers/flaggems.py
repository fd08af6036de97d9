"""FlagGems (pip ``flag-gems``, module ``flag_gems``) as flashcheck peers.

Read in FlagOpen/FlagGems, ``src/flag_gems/ops/attention.py`` and ``src/flag_gems/ops/flash_api.py``
(version 3.0, November 2025). FlagGems registers these functions as replacements of torch's
aten operators (``flag_gems.enable()``), so their contract is the aten operator's:

* ``flaggems-sdpa``: ``flag_gems.ops.scaled_dot_product_attention(query, key, value,
  attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)``, an
  autograd function (forward and backward) in torch's SDPA layout ``(B, H, N, D)``; it
  returns the output only. ``is_causal`` is torch's, top-left aligned (the kernel masks
  ``offs_m >= offs_n``; FlagGems' ``tests/test_attention_ops.py`` compares it with torch's
  SDPA for ``Nq != Nk``). The adapter uses ``is_causal`` where top-left and bottom-right
  agree (plain causal, ``Nq == Nk``) and otherwise folds the causal band, the window and
  the mask into one boolean ``attn_mask`` in torch's convention (True = may attend),
  expanded to ``(B, H, Nq, Nk)`` (the kernel reads the mask through all four strides).
  With gradients, q, k, v and the output's gradient go in row-major (contiguous, with the
  strides of a fresh tensor also on size-1 dimensions): ``scaled_dot_product_attention_backward``
  asserts ``query.is_contiguous()``, ``do.is_contiguous()`` and ``query.stride() == o.stride()
  == do.stride()``.
* ``flaggems-flash``: ``flag_gems.ops.flash_attention_forward(query, key, value,
  cumulative_sequence_length_q, cumulative_sequence_length_k, max_q, max_k, dropout_p,
  is_causal, return_debug_mask, *, scale, window_size_left, window_size_right, ...)``, the
  replacement of ``aten._flash_attention_forward``: forward only, layout ``(B, N, H, D)``,
  FlashAttention-2's conventions (bottom-right causal, ``-1`` an unbounded window side);
  it returns ``(out, lse, ...)`` with lse ``(B, H, Nq)`` float32, ``rowmax * scale +
  log(rowsum)`` (``flash_kernel.py``): the natural log.
* ``flaggems-varlen``: ``flag_gems.ops.flash_attn_varlen_func(q, k, v, max_seqlen_q,
  cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None, ..., block_table=None,
  return_softmax_lse=False)``, vLLM's interface: forward only; the keys must be a paged
  cache (``mha_varlan_fwd`` asserts ``page_table is not None``; ``block_table`` needs
  ``seqused_k``, which excludes ``cu_seqlens_k``). The adapter passes the packed keys as a
  cache of pages of one token: k, v ``(Tk, 1, Hkv, D)`` (contiguous: ``mha_varlan_fwd``
  asserts ``k.stride() == v.stride()``), ``block_table[s, j] = cu_seqlens_k[s] + j``,
  ``seqused_k`` the key lengths. lse ``(H, Tq)``, natural log. Dense cases go in packed as
  one sequence per batch entry and come back dense.

What they decline (before importing the library), with where FlagGems says so:

* ``flaggems-sdpa``: head dims other than 16, 32, 64, 128, 256
  (``ScaleDotProductAttention.forward`` and ``scaled_dot_product_attention_backward``
  assert ``HEAD_DIM_K in {16, 32, 64, 128, 256}``);
* ``flaggems-flash``: head dims other than 32, 64, 96, 128, 192, 256
  (``flash_attention_forward`` asserts ``HEAD_DIM_K in {16, 32, 64, 96, 128, 192, 256}`` and
  ``mha_fwd`` "head_size must be rounded to 32"), float32 (``mha_fwd``: "FlashAttention only
  support fp16 and bf16 data type"), gradients (no backward), a mask;
* ``flaggems-varlen``: head dims above 256 or not a multiple of 8 (``mha_varlan_fwd``), float32,
  gradients, a mask.

Read from the source, then confirmed on an H200: the SDPA kernel turns a boolean mask into
``attn_mask.to(dtype) * -1.0e6``, so True (attend, in torch's convention) hides the key; its
backward runs without the mask (``attn_mask=None``) and without ``is_causal``, always computing
causal attention's gradients (``SDPA_BACKWARD`` below); FlagGems' own backward test is skipped
("something wrong here, disable it for temp", ``test_sdpa_legacy_backward``). The flash
kernels write lse ``+inf`` for a row without keys, as FlashAttention-2 does. flashcheck reports
what it finds; nothing is repaired: what the surveys found (docs/findings.md) is declared below
as known divergences, each confined to the cases it covers.
"""

from __future__ import annotations

from flashcheck.divergences import NEGATIVE_SCALE, KnownDivergence, combined
from flashcheck.oracle.case_predicates import (negative_softmax_scale, or_alone, or_relaid, with_empty_rows,
                                              with_unaligned_views)
from flashcheck.peers import flaggems_call
from flashcheck.peers.common import HALF, Library, Peer, Request, declared_on, gradient_properties
from flashcheck.peers.sdpa_public import passes_attn_mask
from flashcheck.protocol import DTYPE_NAMES

LIBRARY = Library("flag_gems.ops", ("flag-gems",), extra="flaggems")

#: [5.0.2, 2.11 H100] flash_attention_forward: rows without an allowed key (causal with more
#: queries than keys) get NaN outputs where 0 is exact (docs/repros/flaggems_nan_outputs.py).
EMPTY_ROWS_NAN = KnownDivergence(
    "rows without an allowed key get NaN outputs where 0 is exact ([5.0.2, 2.11 H100]; docs/findings.md)",
    with_empty_rows, steer=with_empty_rows,
)
#: [5.0.2, 2.11 H100] flash_attn_varlen_func: rows without an allowed key get lse +inf where the
#: protocol's is -inf: FlashAttention-2's convention, which makes exp(s - lse) vanish in its backward.
EMPTY_ROWS_LSE = KnownDivergence(
    "rows without an allowed key get lse +inf, not -inf (FlashAttention-2's convention; [5.0.2, 2.11 H100])",
    with_empty_rows, steer=with_empty_rows,
)


def flash_strides_misread(case) -> bool:
    """A case flash_attention_forward computes from the wrong elements. [5.0.2, 2.11 H200] It is
    right where each head's rows lie head-dim elements apart (the transposed ``(B, H, N, D)``
    storage SDPA hands aten's ``_flash_attention_forward``) or there is one head; with more
    than one head and more keys than fit one block, ``(B, N, H, D)`` storage gives wrong outputs
    and NaN and writes into q, and so does one query in either storage; padded views are wrong
    at any size (docs/repros/flaggems_layouts_and_masks.py, and the survey's campaigns). One query
    was measured closer: right with 128 keys at head dims 32 and 64 and wrong with 129, wrong with
    128 at head dim 128 (the split-KV kernel's 64-key blocks below head dim 64, 32-key ones above);
    right under GQA without a band, where ``mha_fwd`` swaps the query groups into the sequence axis."""
    if with_unaligned_views(case):  # the padded views
        return True
    if case.seqlen_q == 1:
        # Swapped: right. A causal call arrives with a right side of 0 (the adapter folds causal
        # into the band), which mha_fwd does not swap: wrong as any other one query (measured:
        # 7:1 heads, 129 keys, head dim 32, heads-first, on an H100).
        if case.heads > case.kv_heads and flash_band_kept(case) == (-1, -1):
            return False
        return case.heads > 1 and case.seqlen_k > (128 if case.head_dim <= 64 else 64)
    return case.heads > 1 and case.seqlen_k > 64 and case.layout == "contiguous"


FLASH_STRIDES = KnownDivergence(
    "flash_attention_forward misreads (B, N, H, D) inputs that are not stored heads-first: wrong outputs, NaN and "
    "writes into q with more than one head and more keys than one block, and on padded views "
    "([5.0.2, 2.11 H200]; docs/repros/flaggems_layouts_and_masks.py)",
    flash_strides_misread, steer=flash_strides_misread)


FLASH_STRIDES_RELAID = KnownDivergence(
    FLASH_STRIDES.reason + "; layout_invariance compares a case with such storage too",
    or_relaid(flash_strides_misread), steer=or_relaid(flash_strides_misread))


#: The queries of one block of FlagGems' flash forward: every configuration it keeps has
#: ``BLOCK_M`` 128 (``keep`` in src/flag_gems/ops/flash_kernel.py).
FLASH_QUERY_BLOCK = 128


#: The key blocks of the configurations flash_fwd_kernel keeps (``keep``: 128 x 32 with 4 warps,
#: 128 x 128 with 8); its autotuner picks one by timing, per head dim.
FLASH_KEY_BLOCKS = (32, 128)


def flash_keys_cut(nq: int, nk: int, right: int) -> bool:
    """Whether flash_fwd_kernel cuts rows of some query block short of their keys, for a band whose
    right side is ``right`` (0 for causal), under some configuration it may choose. [5.0.2, 2.11
    H200] It bounds query block m's keys at ``seqlen_k + (m_block - num_m_blocks + 1) · BLOCK_M +
    right`` (src/flag_gems/ops/flash_kernel.py), where the block's last row sees up to only when
    the queries fill whole blocks: otherwise every block but the last stops ``128 - Nq % 128``
    keys early, then rounds up to its key block, and its rows lose the keys the rounding does not
    give back (128 x 32 configurations; 128 x 128 ones may round back to the right key)."""
    block = FLASH_QUERY_BLOCK
    blocks = -(-nq // block)
    for m_block in range(blocks - 1):
        computed = nk + (m_block - blocks + 1) * block + right
        needed = min(nk, (m_block + 1) * block + nk - nq + right)
        if needed > 0 and any(-(-computed // key_block) * key_block < needed for key_block in FLASH_KEY_BLOCKS):
            return True
    return False


def flash_band_kept(case) -> tuple[int, int]:
    """The case's band as ``mha_fwd`` (src/flag_gems/ops/flash_api.py) keeps it: a side at least
    the key length long dropped (-1), as FlashAttention-2 does. The adapter passes the band with
    causal already folded in as a right side of 0 (``Request.right``), so ``mha_fwd``'s dropping
    of the causal flag for one query changes nothing: one query, 31 keys, causal with a left
    side of 4 was right on an H100. What it then runs: a kept band of (-1, 0) as plain causal
    (``is_causal = left < 0 and right == 0``, whatever the causal flag), one with both sides
    bounded as a local window (``is_local = left >= 0 and right >= 0``), anything else without
    a band."""
    return tuple(-1 if side >= case.seqlen_k else side for side in case.band)


def flash_window_misapplied(case) -> bool:
    """A case whose sliding window flash_attention_forward gets wrong. [5.0.2, 2.11 H200, H100]
    ``mha_fwd`` (src/flag_gems/ops/flash_api.py) keeps the band as :func:`flash_band_kept` says
    and runs a window local only where both its sides are bounded, so a window with one side
    unbounded runs without any band: wrong where the side it ignores hides a key (a left side
    shorter than Nk - 1, a right side shorter than Nq - 1; a side at least the key length long is
    dropped, though with more queries than keys a right side that long still hides keys). A local
    window is right up to 50 queries and wrong with 200, beyond the first block of queries: the
    block bound of :func:`flash_keys_cut` (a window always runs flash_fwd_kernel), right at 256,
    384 and 512 queries and wrong at 129, 200 and 300 (docs/repros/flaggems_flash_window_blocks.py).
    Each of the 100 calls of docs/repros/flaggems_flash_windows.py is wrong exactly where this
    says, and (30, -1) with 31 queries and keys, whose left side hides nothing, is right (H100).
    Plain causal is right there, on the split-KV kernel those calls reach; on flash_fwd_kernel
    it is another finding (:func:`flash_causal_keys_cut`)."""
    if case.varlen:
        return False
    kept = flash_band_kept(case)
    if kept == (-1, 0):  # run as plain causal: flash_causal_keys_cut
        return False
    if min(kept) >= 0:  # local
        return flash_keys_cut(case.seqlen_q, case.seqlen_k, kept[1])
    left, right = case.band
    return 0 <= left < case.seqlen_k - 1 or 0 <= right < case.seqlen_q - 1  # run without a band


FLASH_WINDOWS = KnownDivergence(
    "flash_attention_forward gets sliding windows wrong: a window with one unbounded side runs without a band, "
    "at any length, and any window where the queries leave a 128-query block part filled ([5.0.2, 2.11 H200]; "
    "docs/repros/flaggems_flash_windows.py, flaggems_flash_window_blocks.py)",
    flash_window_misapplied, steer=flash_window_misapplied)


def flash_causal_keys_cut(case) -> bool:
    """A case ``mha_fwd`` runs as plain causal (:func:`flash_band_kept`: the causal flag, or a
    right side of 0 alone, with any left side at least the key length long) whose keys
    flash_fwd_kernel cuts short (:func:`flash_keys_cut`).
    [5.0.2, 2.11 H200] Measured with both dtypes and head dims 64 to 256: 307, 300 and 129
    queries wrong (16-57% of the output), 128, 256, 1024, and 100 queries with 307 keys right;
    every 128 x 32 configuration alike (docs/repros/flaggems_flash_causal_blocks.py). FlagGems
    runs calls of less than a wave of tasks on its split-KV kernel instead, which is right:
    declared whatever the dispatch, which depends on the device's count of SMs."""
    if case.varlen or flash_band_kept(case) != (-1, 0):  # windows mha_fwd keeps: FLASH_WINDOWS
        return False
    return flash_keys_cut(case.seqlen_q, case.seqlen_k, 0)


FLASH_CAUSAL_KEYS_CUT = KnownDivergence(
    "flash_attention_forward's flash_fwd_kernel cuts causal rows short of their keys where the queries do not fill "
    "whole 128-query blocks: wrong outputs and lse in every block but the last under its 128 x 32 configurations "
    "([5.0.2, 2.11 H200]; docs/repros/flaggems_flash_causal_blocks.py)",
    flash_causal_keys_cut, steer=flash_causal_keys_cut)


#: The widest key block (``BLOCK_N``) of the configurations FlagGems' SDPA forward times.
SDPA_WIDEST_KEY_BLOCK = 128


def negative_scale_past_a_key_block(case) -> bool:
    """[5.0.2, 2.11 H200] A negative scale with keys that do not fill whole key blocks, for some
    key block scaled_dot_product_attention's autotuner may choose (16 to 128: a multiple of 128
    fills every one)."""
    return negative_softmax_scale(case) and case.seqlen_k % SDPA_WIDEST_KEY_BLOCK != 0


#: [5.0.2, 2.11 H200] scaled_dot_product_attention's ``_attn_fwd_inner`` sets the logits of the
#: keys past the key length to -inf before it multiplies them by the scale: a negative scale
#: makes them +inf, the row's running maximum +inf and every probability NaN. Measured: NaN in
#: every row at key lengths 395, 392, 400, 1, 17, 129 and 1000 under a 32-key block, both
#: dtypes and float32, head dims 64 and 128, GQA or not, scales -1 to -0.001; right at 384,
#: 64, 128 and 1024 keys, and with positive scales (docs/repros/flaggems_sdpa_negative_scale.py).
#: Another mechanism than the flash kernels' (NEGATIVE_SCALE), in another kernel.
SDPA_NEGATIVE_SCALE = KnownDivergence(
    "scaled_dot_product_attention gives NaN for a negative scale where the keys do not fill whole key blocks: it "
    "hides the keys past the end with -inf before the scale multiplies them ([5.0.2, 2.11 H200]; "
    "docs/repros/flaggems_sdpa_negative_scale.py)",
    negative_scale_past_a_key_block, steer=negative_scale_past_a_key_block)


#: [5.0.2, 2.11 H200] scaled_dot_product_attention turns a boolean mask into
#: ``attn_mask.to(dtype) * -1.0e6`` (src/flag_gems/ops/attention.py): True, "may attend" in
#: torch's convention, hides the key. Confirmed: its output equals float64 attention under the
#: inverse mask (error 1.4e-7) and is 0.3 off under torch's (docs/repros/flaggems_layouts_and_masks.py).
SDPA_MASK_INVERTED = KnownDivergence(
    "scaled_dot_product_attention reads a boolean attn_mask inverted (True hides the key, as -1e6), the opposite of "
    "torch's convention ([5.0.2, 2.11 H200]; docs/repros/flaggems_layouts_and_masks.py)",
    passes_attn_mask, steer=passes_attn_mask)


def flags_native_band_as_mask(case) -> bool:
    """A case of mask_equal_to_band_matches_flag whose own call goes to the SDPA forward as
    ``is_causal`` (plain causal, equal lengths, no mask: :func:`passes_attn_mask` false) while
    the property's second call hands it the same band as a boolean mask, which it reads inverted
    (:data:`SDPA_MASK_INVERTED`). Where the case's own call passes a mask too, both calls are
    inverted alike and agree."""
    return not passes_attn_mask(case)


#: [5.0.2, 2.11 H200] :data:`SDPA_MASK_INVERTED`, met by mask_equal_to_band_matches_flag on cases
#: whose own call is plain causal: in float16 the allowed keys' ``True · -1e6`` rounds to -inf, so
#: a row that may see every key is NaN (a campaign's shrunk case: one query, one key; the
#: measurements of docs/measurements/campaign/h200-2026-12-04-pinned-autotuners/).
SDPA_BAND_AS_MASK_INVERTED = KnownDivergence(
    SDPA_MASK_INVERTED.reason + "; mask_equal_to_band_matches_flag hands it the band of a plain causal call as "
    "such a mask", flags_native_band_as_mask, steer=flags_native_band_as_mask)


def runs_the_native_causal_band(case) -> bool:
    """A case whose call goes to the SDPA forward as ``is_causal`` with no mask (plain causal,
    equal lengths: :func:`passes_attn_mask` false), so that the kernel's own causal band hides
    the future keys."""
    return case.band != (-1, -1) and not passes_attn_mask(case)


#: [5.0.2, 2.11 H200] The SDPA forward hides a future key of the diagonal block by adding -1e6 to
#: its logit in base 2 (``_attn_fwd_inner``, STAGE 2), not -inf: a hidden key whose logit leads the
#: row's visible ones by more than that wins the softmax. Measured: a lead of 8.25e5 leaves the
#: row exact, 2.48e6 and more put the hidden value in it, in every dtype, under FlagGems' own
#: tuning and under each of its 45 forward configurations; hidden keys past the diagonal block
#: (never loaded) do not leak. Only the huge-logit property makes such logits.
SDPA_CAUSAL_FINITE_MASK = KnownDivergence(
    "scaled_dot_product_attention's causal band hides the diagonal block's future keys with a finite -1e6 "
    "(in base 2): a hidden key whose logit leads the visible ones by more leaks into the row "
    "([5.0.2, 2.11 H200]; docs/repros/flaggems_sdpa_causal_finite_mask.py)",
    runs_the_native_causal_band, steer=runs_the_native_causal_band)


def values_strided_unlike_keys(case) -> bool:
    """A case whose values are stored with other strides than its keys: the ``mixed`` layout
    (its k and v are padded by different amounts); in every other layout k and v, of equal
    shapes, share their strides. (With gradients the translation hands the kernel row-major
    copies, which do share them.)"""
    return case.layout == "mixed"


def sdpa_value_offsets_misread(case) -> bool:
    """A case whose values the SDPA forward reads from the wrong rows: values strided unlike
    their keys (:func:`values_strided_unlike_keys`) with more than one batch entry or KV head,
    which ``_attn_fwd`` offsets by the keys' batch and head strides. With one of each the offsets
    are 0 whichever strides scale them (measured right, 2 query heads on one KV head, H100)."""
    return values_strided_unlike_keys(case) and (case.batch > 1 or case.kv_heads > 1)


#: [5.0.2, 2.11 H200] scaled_dot_product_attention's forward (``_attn_fwd``) offsets the values
#: by ``batch · stride_k_batch + kv_head · stride_k_head``, the keys' strides: values strided
#: otherwise are read from the wrong rows, the padding's NaN among them. Replayed on the H200 by
#: flashcheck's standalone script (NaN outputs, layout ``mixed``; docs/findings.md).
SDPA_VALUE_STRIDES = KnownDivergence(
    "scaled_dot_product_attention addresses the values with the keys' batch and head strides: values strided "
    "otherwise are read from the wrong rows (NaN where those are padding; [5.0.2, 2.11 H200]; docs/findings.md)",
    sdpa_value_offsets_misread, steer=sdpa_value_offsets_misread)

#: [5.0.2, 2.11 H200] scaled_dot_product_attention's backward (``_attn_bwd``) is the causal
#: fused backward of Triton's tutorial, run for every call: it gets neither ``is_causal`` nor the
#: mask, and always computes causal attention's gradients (dQ of a query block over the keys up
#: to the block's end, dK and dV of a key block over the queries from its start, the diagonal
#: blocks masked causally); its grid is ``cdiv(Nq, 128)`` programs, each writing dQ for BLOCK_M2
#: queries at ``pid · BLOCK_M2`` (64 in two of the three configurations its autotuner times, so
#: half the queries' dQ is never written); and it loads dO without a bound. On the H200 the
#: gradients were wrong or NaN on every shape the script tried, and one faulted
#: (docs/repros/flaggems_sdpa_backward.py). Even causal calls with Nq == Nk depend on the
#: configuration chosen by timing: declared on every case of the gradient properties, so that
#: once seen they are left and the forward's properties take the campaign's time.
SDPA_BACKWARD = KnownDivergence(
    "scaled_dot_product_attention's backward computes causal attention's gradients whatever the call (it gets "
    "neither is_causal nor the mask), writes dQ for part of the queries under two of its three tuned "
    "configurations, and loads dO unbounded: wrong or NaN gradients on every shape tried, and an illegal memory "
    "access or instruction on some ([5.0.2, 2.11 H200]; docs/repros/flaggems_sdpa_backward.py)",
    # The fault ends the process's cases; declared, so that a campaign replaces the process
    # without a finding and every worker leaves the gradient properties once it is seen. The same
    # call faulted as an illegal instruction in a campaign's process and as an illegal memory
    # access in its standalone script, under 3 of the 18 configurations FlagGems ships for it
    # (docs/measurements/campaign/h200-2026-12-04-pinned-autotuners/).
    raises=True, raising="CUDA error: an illegal ")


def sdpa_backward_tiles_beyond_shared_memory(case) -> bool:
    """A case whose SDPA backward's key and value tiles alone outgrow a GPU's shared memory:
    float32 at head dim 256 (:data:`SDPA_BACKWARD_SHARED_MEMORY`)."""
    return case.dtype == "float32" and case.head_dim >= 256


#: [5.0.2, 2.11 H100] Every configuration FlagGems ships for ``_attn_bwd``
#: (src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml, ``attention_bwd``: three block
#: shapes, each with BLOCK_N1 = 128, times 4 or 8 warps and 2 to 4 stages) holds a 128-key tile
#: of K and of V: in float32 at head dim 256 those two alone are 256 KiB, past the 227 KiB of an
#: H100 or H200. A campaign on the H100 met it (`OutOfResources ... Required: 591360, Hardware
#: limit: 232448`) where the pin had tried every candidate configuration in turn, each refused,
#: as the library's own autotuner would find them (docs/findings.md, "Campaigns alone on one
#: H100"). The error alone, on those cases.
SDPA_BACKWARD_SHARED_MEMORY = KnownDivergence(
    "scaled_dot_product_attention's backward raises OutOfResources in float32 at head dim 256: each of its "
    "configurations holds 128-key tiles of K and V, 256 KiB together, past a Hopper GPU's shared memory "
    "([5.0.2, 2.11 H100], campaign; all 18 shipped configurations refused: "
    "docs/repros/flaggems_sdpa_backward_head_dim_256.py)",
    sdpa_backward_tiles_beyond_shared_memory, steer=sdpa_backward_tiles_beyond_shared_memory,
    raises=True, raising="OutOfResources", wrong_results=False)


def varlen_head_dim_below_16(case) -> bool:
    """[5.0.2, 2.11 H200] flash_attn_varlen_func accepts head dim 8 (``mha_varlan_fwd`` asks a
    multiple of 8), then its kernel fails to compile (``tl.make_block_ptr`` of the values: a
    Triton CompilationError; 173 cases of one campaign)."""
    return case.head_dim < 16


VARLEN_HEAD_DIM_8 = KnownDivergence(
    "flash_attn_varlen_func accepts head dim 8, then its kernel fails to compile (Triton CompilationError at "
    "tl.make_block_ptr; [5.0.2, 2.11 H200])",
    varlen_head_dim_below_16, steer=varlen_head_dim_below_16, raises=True, raising="make_block_ptr")


def _varlen_sequences(case) -> tuple[tuple[int, int], ...]:
    """The ``(nq, nk)`` of each sequence flash_attn_varlen_func is given: a packed case's, or a
    dense batch's entries, one sequence each (:func:`flashcheck.peers.flaggems_call.varlen`)."""
    return case.seqlens if case.varlen else ((case.seqlen_q, case.seqlen_k),) * case.batch


def _varlen_band(case) -> tuple[int, int]:
    """The band ``mha_varlan_fwd`` passes on: a side at least the longest key length long dropped."""
    longest_keys = max(nk for _, nk in _varlen_sequences(case))
    return tuple(-1 if side >= longest_keys else side for side in case.band)


def varlen_window_misapplied(case) -> bool:
    """A case whose sliding window flash_attn_varlen_func gets wrong. [5.0.2, 2.11 H200]
    ``mha_varlan_fwd`` (src/flag_gems/ops/flash_api.py) drops a side at least the longest key
    length long, though with more queries than keys a right side that long still hides keys;
    calls a window local only where its left side is bounded; and (unlike ``mha_fwd``) turns only
    the ``causal`` flag into causal attention: a right side alone, (-1, 0) without the flag among
    them, is ignored, and a local window's unbounded right side reaches the kernel as the bound
    -1. Measured with ordinary inputs (docs/repros/flaggems_varlen_windows.py, packed and paged;
    docs/repros/flaggems_varlen_edges.py): (-1, 2), (-1, 0), (3, -1) wrong, and right sides of 20
    and 46 with 63 queries and 17 keys (errors 2.4-3.6, lse off or infinite); (2, 2), causal with
    left 4, plain causal, no window, and (-1, 40) with 30 queries and keys right."""
    sequences = _varlen_sequences(case)
    left, right = _varlen_band(case)
    if left >= 0:  # local: wrong only with its right side unbounded
        return right < 0 and any(nq > 0 and nk > 0 for nq, nk in sequences)
    wanted_right = case.band[1]
    if wanted_right < 0 or (case.causal and max(nq for nq, _ in sequences) > 1):
        return False  # no right side, or causal attention proper
    # The right side, ignored or dropped: wrong where it would hide a key from some query.
    return any(nk > 0 and wanted_right < nq - 1 for nq, nk in sequences)


VARLEN_WINDOWS = KnownDivergence(
    "flash_attn_varlen_func gets one-sided sliding windows wrong: a right side alone is ignored, and a left side "
    "alone hides the keys from the diagonal on ([5.0.2, 2.11 H200]; docs/repros/flaggems_varlen_windows.py)",
    varlen_window_misapplied, steer=varlen_window_misapplied)


#: [5.0.2, 2.11 H200] The same windows, reached through ``varlen_matches_separate_calls``' dense
#: call on one sequence: there a side is dropped at that sequence's own key length, so a window
#: the packed call keeps, (3, 1) with 896 keys in the longest sequence, runs as (-1, 1), a right side
#: alone, for a sequence of 3 keys (two campaign cases; by hand the packed call matched float64 and
#: the sequence's own call did not: docs/repros/flaggems_varlen_window_alone.py).
VARLEN_WINDOWS_ALONE = KnownDivergence(
    VARLEN_WINDOWS.reason + ", also where a sequence called alone drops a side at its own key length",
    or_alone(varlen_window_misapplied), steer=varlen_window_misapplied)


def varlen_query_groups_swapped(case) -> bool:
    """A case ``mha_varlan_fwd`` runs with its query groups swapped into the sequence axis
    (``seqlenq_ngroups_swapped``): one query at most a sequence, more query heads than key heads,
    no window left after the drop of long sides, no dropout."""
    left, right = _varlen_band(case)
    return (max(nq for nq, _ in _varlen_sequences(case)) == 1 and case.heads > case.kv_heads
            and left < 0 and right < 0)


def varlen_swapped_lse_misplaced(case) -> bool:
    """[5.0.2, 2.11 H200] The swapped cases of more than one sequence: lse comes back wrong (off by
    1.3-2.7 with 2 and 3 sequences, heads 8:2 and 7:1), the output right; one sequence is right
    (docs/repros/flaggems_varlen_edges.py)."""
    return varlen_query_groups_swapped(case) and len(_varlen_sequences(case)) > 1


VARLEN_SWAPPED_LSE = KnownDivergence(
    "flash_attn_varlen_func returns a wrong lse for sequences of one query under GQA when there are several "
    "(its query-group swap); the output is right ([5.0.2, 2.11 H200]; docs/repros/flaggems_varlen_edges.py)",
    varlen_swapped_lse_misplaced, steer=varlen_swapped_lse_misplaced)


def varlen_swapped_with_an_empty_sequence(case) -> bool:
    """[5.0.2, 2.11 H200] The swapped cases where a sequence has no query: the swap reshapes q as
    one query a sequence and fails (``RuntimeError: shape ... is invalid for input of size``)."""
    return varlen_query_groups_swapped(case) and any(nq == 0 for nq, _ in _varlen_sequences(case))


VARLEN_SWAPPED_EMPTY = KnownDivergence(
    "flash_attn_varlen_func raises (a reshape of q) on sequences of at most one query under GQA when one has none "
    "([5.0.2, 2.11 H200]; docs/repros/flaggems_varlen_edges.py)",
    varlen_swapped_with_an_empty_sequence, steer=varlen_swapped_with_an_empty_sequence, raises=True,
    raising="is invalid for input of size", wrong_results=False)

#: [5.0.2, 2.11 H200] flash_fwd_kernel reads the values at ``bid · k_batch_stride + kv_head ·
#: k_head_stride`` and steps through their rows by ``k_row_stride`` (src/flag_gems/ops/
#: flash_kernel.py): values stored otherwise than the keys are read from the wrong places (errors
#: 1.3-4.1 where the same numbers stored like the keys are right; docs/repros/
#: flaggems_flash_value_strides.py). In flashcheck's cases: the ``mixed`` layout.
FLASH_VALUE_STRIDES = KnownDivergence(
    "flash_attention_forward addresses the values with the keys' strides: values stored otherwise are read from "
    "the wrong places ([5.0.2, 2.11 H200]; docs/repros/flaggems_flash_value_strides.py)",
    values_strided_unlike_keys, steer=values_strided_unlike_keys)


def flash_tiles_of_128_or_more(case) -> bool:
    """A head dim whose key and value tiles flash_fwd_kernel pads to 128 columns or more (``BLOCK_K``
    is the head dim's next power of two: 96 pads to 128), where a 128 x 128 configuration it keeps
    asks more shared memory than an H100 or H200 has once its key loop is pipelined: 294912 bytes
    at 96 and 128 with 4 stages (a query tile and four of keys and values, 32 KiB each),
    327680-589824 above them."""
    return case.head_dim > 64


#: [5.0.2, 2.11 H200] flash_fwd_kernel's autotuner is keyed on the head dim, dropout and the
#: dtypes (``key=["d", "is_dropout"]``), while the inputs' 16-byte alignment selects another
#: compiled variant: tuned on a call with unaligned views, which a 128 x 128 configuration fits
#: (its loop not pipelined, by the byte counts), it keeps that configuration, and every later
#: aligned call of the head dim in the process raises OutOfResources (294912-589824 bytes asked,
#: 232448 there). Which configuration wins is timing: at head dim 256 it happened in every process
#: tried, at 192 in 3 of 4, at 128 in none of 6 (docs/repros/flaggems_flash_autotune_unaligned.py),
#: yet a campaign's worker raised at 128 on an aligned bfloat16 call asking 294912 bytes
#: (docs/measurements/campaign/h200-2026-11-29-keys/), and the pytest path's workers at 96, whose
#: tiles are padded to 128, asking the same (docs/measurements/campaign/h100-2026-12-06-888da79/).
#: A case alone cannot show it: the error is declared, at the head dims it can happen, and
#: nothing else.
FLASH_AUTOTUNE_REUSED = KnownDivergence(
    "flash_attention_forward's autotuner reuses a configuration tuned on unaligned views for aligned ones of the "
    "same head dim, which then raise OutOfResources ([5.0.2, 2.11 H200]; "
    "docs/repros/flaggems_flash_autotune_unaligned.py)",
    flash_tiles_of_128_or_more, raises=True, raising="OutOfResources: out of resource: shared memory",
    wrong_results=False)

SDPA_HEAD_DIMS = (16, 32, 64, 128, 256)
FLASH_HEAD_DIMS = (32, 64, 96, 128, 192, 256)


def _check_sdpa(q, request: Request) -> None:
    if request.head_dim not in SDPA_HEAD_DIMS:
        # Source: FlagOpen/FlagGems, src/flag_gems/ops/attention.py, ScaleDotProductAttention.forward.
        raise NotImplementedError(
            f"flaggems-sdpa: head dim {request.head_dim} not in {SDPA_HEAD_DIMS} (src/flag_gems/ops/attention.py, "
            "ScaleDotProductAttention.forward asserts HEAD_DIM_K in {16, 32, 64, 128, 256})")


def _check_flash(q, request: Request) -> None:
    if request.head_dim not in FLASH_HEAD_DIMS:
        # Source: FlagOpen/FlagGems, src/flag_gems/ops/attention.py, flash_attention_forward;
        # src/flag_gems/ops/flash_api.py, mha_fwd.
        raise NotImplementedError(
            f"flaggems-flash: head dim {request.head_dim} not in {FLASH_HEAD_DIMS} (src/flag_gems/ops/attention.py, "
            "flash_attention_forward asserts HEAD_DIM_K in {16, 32, 64, 96, 128, 192, 256}; flash_api.py mha_fwd: "
            "\"head_size must be rounded to 32\")")


def _check_varlen(q, request: Request) -> None:
    if request.head_dim > 256 or request.head_dim % 8:
        # Source: FlagOpen/FlagGems, src/flag_gems/ops/flash_api.py, mha_varlan_fwd.
        raise NotImplementedError(
            f"flaggems-varlen: head dim {request.head_dim} must be at most 256 and a multiple of 8 "
            "(src/flag_gems/ops/flash_api.py, mha_varlan_fwd asserts both)")


def _run_sdpa(module, q, k, v, request: Request):
    """flag_gems.ops.scaled_dot_product_attention (:func:`flashcheck.peers.flaggems_call.sdpa`); no lse."""
    return flaggems_call.sdpa(module.scaled_dot_product_attention, q, k, v, attn_mask=request.mask,
                              **request.plain_call_arguments())


def _run_flash(module, q, k, v, request: Request):
    """flag_gems.ops.flash_attention_forward: out (B, Nq, H, D), lse (B, H, Nq)
    (:func:`flashcheck.peers.flaggems_call.flash`)."""
    return flaggems_call.flash(module.flash_attention_forward, q, k, v, **request.plain_call_arguments())


def _run_varlen(module, q, k, v, request: Request):
    """flag_gems.ops.flash_attn_varlen_func on one-token pages: out (Tq, H, D), lse (H, Tq); a
    dense batch goes in packed as one sequence per batch entry and comes back dense
    (:func:`flashcheck.peers.flaggems_call.varlen`)."""
    return flaggems_call.varlen(module.flash_attn_varlen_func, q, k, v, **request.plain_call_arguments())


#: The Triton autotuner of FlagGems' SDPA forward is keyed on the key length and the head dim
#: (src/flag_gems/ops/attention.py, ``_attn_fwd``: ``key=["KV_CTX", "HEAD_DIM"]``): every new key
#: length autotunes afresh. The dtype and causality are compiled in. Each new Triton specialisation
#: (head counts, lengths and strides) compiled its 45 forward configurations again (counted on an
#: H200), which kept a campaign to a few cases; the adapter pins the autotuners
#: (:mod:`flashcheck.autotune_pin`), so that a class runs one configuration and a new
#: specialisation compiles that one (docs/measurements/campaign/h200-2026-12-04-pinned-autotuners/).
SDPA_COMPILE_KEY = ("dtype", "head_dim", "seqlen_k", "band", "mode", "gqa_ratio")
#: FlagGems' flash forward passes the softmax scale and both window bounds as ``tl.constexpr``
#: (src/flag_gems/ops/flash_kernel.py): a variant per scale and window. With Triton's
#: specialisation named too (``heads``, ``layout``, ``length_residues``) a campaign drew half
#: the cases (docs/measurements/speed/README.md): more classes, each compiled afresh, while the
#: kernel still compiled variants inside each.
FLASH_COMPILE_KEY = ("dtype", "head_dim", "softmax_scale", "window", "gqa_ratio")


def sdpa() -> Peer:
    """``flaggems-sdpa``: flag_gems.ops.scaled_dot_product_attention, forward and backward."""
    features = frozenset({"causal", "window", "gqa", "mask", "backward"}) | DTYPE_NAMES
    return Peer("flaggems-sdpa", LIBRARY, {"cuda": features}, _run_sdpa, check=_check_sdpa,
                known_divergences=declared_on(gradient_properties(),
                                              combined(SDPA_BACKWARD, SDPA_BACKWARD_SHARED_MEMORY),
                                              {"mask_equal_to_band_matches_flag": SDPA_BAND_AS_MASK_INVERTED,
                                               "masked_keys_with_huge_logits_change_nothing":
                                                   SDPA_CAUSAL_FINITE_MASK}),
                every_property=combined(SDPA_MASK_INVERTED, SDPA_VALUE_STRIDES, SDPA_NEGATIVE_SCALE),
                case_domain={"cuda": {"head_dims": SDPA_HEAD_DIMS}}, compile_key=SDPA_COMPILE_KEY)


def flash() -> Peer:
    """``flaggems-flash``: flag_gems.ops.flash_attention_forward, forward only, with lse."""
    return Peer("flaggems-flash", LIBRARY, {"cuda": frozenset({"causal", "window", "gqa", "lse"}) | HALF},
                _run_flash, check=_check_flash, known_divergences={"layout_invariance": FLASH_STRIDES_RELAID},
                every_property=combined(NEGATIVE_SCALE, EMPTY_ROWS_NAN, FLASH_STRIDES, FLASH_WINDOWS,
                                        FLASH_CAUSAL_KEYS_CUT, FLASH_VALUE_STRIDES, FLASH_AUTOTUNE_REUSED),
                case_domain={"cuda": {"head_dims": FLASH_HEAD_DIMS}}, compile_key=FLASH_COMPILE_KEY)


def varlen() -> Peer:
    """``flaggems-varlen``: flag_gems.ops.flash_attn_varlen_func, forward only, with lse."""
    return Peer("flaggems-varlen", LIBRARY,
                {"cuda": frozenset({"causal", "window", "gqa", "varlen", "lse"}) | HALF}, _run_varlen,
                check=_check_varlen, known_divergences={"varlen_matches_separate_calls": VARLEN_WINDOWS_ALONE},
                every_property=combined(NEGATIVE_SCALE, EMPTY_ROWS_LSE, VARLEN_HEAD_DIM_8, VARLEN_WINDOWS,
                                        VARLEN_SWAPPED_LSE, VARLEN_SWAPPED_EMPTY),
                case_domain={"cuda": {"head_dim_multiple": 8, "max_head_dim": 256}}, compile_key=FLASH_COMPILE_KEY)
