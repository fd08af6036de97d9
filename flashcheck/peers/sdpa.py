"""torch's SDPA backends as flashcheck implementations: :class:`~flashcheck.peers.common.Peer`
adapters of torch itself, as every other adapter is.

Every adapter of torch's kernels is a callable with the implementation protocol's signature
(see docs/protocol.md)::

    attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None,
              attn_mask=None, cu_seqlens_q=None, cu_seqlens_k=None,
              max_seqlen_q=None, max_seqlen_k=None) -> (out, lse)

and carries ``name``, ``device_kinds`` (``{"cpu", "cuda"}`` or a subset),
``flashcheck_features`` (what it supports, dtype names included) and
``flashcheck_features_by_device`` (the same, narrowed per device kind).  A
request outside the declared features raises ``NotImplementedError`` naming the
argument; nothing is ever silently ignored.

Packed variable-length input ("varlen": ``sdpa-math`` and ``flex``) is run as a packed
batch of one, q ``(1, Tq, H, D)``, under the block-diagonal document mask with the
causal/window band applied per sequence (:func:`flashcheck.cases.masks.document`): SDPA math
gets it as its boolean ``attn_mask``, Flex as a ``mask_mod`` over per-token sequence ids
and positions.  out and lse come back in the packed layout.

The adapters translate conventions and nothing else: they never repair what the
peer returns (a NaN in a fully masked row is reported, not patched), so that
divergences between peers and the protocol are found rather than hidden.

Findings below (and in :mod:`flashcheck.peers.flex`) marked [2.13 CPU] were measured with torch 2.13 on CPU, those marked
[2.11 H100] with torch 2.11 + triton 3.6 on an H100.  A NotImplementedError from an
adapter means the case lies outside what the peer can express: skip it, never count
it as a pass or a failure.

Translations, adapter by adapter:

* Layout.  The protocol is ``(B, N, H, D)``; torch's SDPA and FlexAttention take
  ``(B, H, N, D)``.  Every adapter passes ``transpose(1, 2)`` views in and
  returns ``transpose(1, 2)`` views of the output (not necessarily contiguous).
* Scale.  ``softmax_scale=None`` becomes ``1/sqrt(D)`` explicitly, so every peer
  receives the same number.
* ``sdpa-math``: ``F.scaled_dot_product_attention`` forced to
  ``SDPBackend.MATH``.  Causal (bottom-right), window and the user's mask are
  folded into ONE explicit boolean mask (True = attend) -- torch's
  ``is_causal`` is top-left aligned and so is never used.  GQA through
  ``enable_gqa=True`` (torch >= 2.5; K/V heads repeated before).  The public API
  returns no lse, so ``lse`` is ``None`` and "lse" is not declared (computing it
  separately would not be the peer's).  Fully masked rows [2.13 CPU, 2.11 H100]:
  out = 0 (its "safe softmax") and zero gradients.  No keys at all (Nk = 0, or a
  packed batch without a key) [2.13 CPU]: the public frontend returns
  ``zeros + (q.sum() + k.sum() + v.sum())·0`` in the input dtype before any backend,
  NaN where that sum overflows (float16), and its backward ``dO.sum()·0``: a known
  divergence confined to those cases (see ``_EMPTY_KEYS_FORWARD``); torch 2.11 returned 0
  there [2.11 H100, on its CPU and GPU].
* ``sdpa-flash`` / ``sdpa-cudnn`` (CUDA only, float16/bfloat16): the private ops
  ``aten._scaled_dot_product_flash_attention`` /
  ``aten._scaled_dot_product_cudnn_attention``, which also return the
  logsumexp (natural log; cuDNN's is ``(B, H, Nq, 1)``, squeezed here).  These
  ops take no mask and no window.  Their ``is_causal`` alignment for
  ``Nq != Nk`` is no documented contract -- [2.11 H100] flash's was measured
  bottom-right (FlashAttention-2's own convention) and cuDNN's top-left -- so
  causal is accepted only for ``Nq == Nk``, where the two coincide; otherwise
  NotImplementedError.  GQA: K/V heads are repeated explicitly
  (``repeat_interleave`` on the head axis: query head h reads KV head
  ``h // (H // Hkv)``), which autograd sums back in the backward pass.
  With top-left causal as their only restriction no row is ever without a key,
  so ``empty_rows_exact`` and ``empty_rows_get_zero_dq``, every case of which
  would be declined, are declared not applicable (``flashcheck_not_applicable``).
* ``sdpa-efficient`` (CUDA only, all three dtypes): the private op
  ``aten._scaled_dot_product_efficient_attention``.  Its logsumexp is padded
  along the query axis to a multiple of 32 and is sliced back to ``Nq``.  Plain
  causal with ``Nq == Nk`` uses the kernel's own ``is_causal`` (top-left,
  [2.11 H100]); every other restriction (causal with ``Nq != Nk``, window, mask)
  is expressed exactly as an additive bias of 0 / -inf in the input dtype,
  stored with its key axis padded to a multiple of 16 (the kernel's alignment)
  and sliced back.  GQA as for flash.  Fully masked rows [2.11 H100]: out = 0
  and zero gradients, but lse = 0 instead of -inf -- a divergence from the
  protocol, reported as it is.
* The three private ops get their inputs as torch's public SDPA would give them:
  D zero-padded to a multiple of 8 (output sliced back) and storage that is not
  16-byte aligned copied contiguous; otherwise they fault with a sticky CUDA
  "misaligned address" error [2.11 H100] that poisons the process.
"""
from __future__ import annotations

import math

import torch

from flashcheck.divergences import NEGATIVE_SCALE, KnownDivergence
from flashcheck.oracle.case_predicates import (
    backward_extremes, either, float16_backward_overflows, float16_subnormal_probabilities, float16_with_offset_values,
    is_float16, sdpa_no_keys_backward_overflows, sdpa_no_keys_forward_overflows,
    sdpa_no_keys_forward_overflows_in_either_call, under, with_empty_rows, without_keys,
)
from flashcheck.oracle.expectation import overflow_threshold
from flashcheck.peers import sdpa_call
from flashcheck.peers.common import HALF, TORCH, Peer, Request, declared_on, gradient_properties
from flashcheck.protocol import DTYPE_NAMES

__all__ = ["sdpa_math", "sdpa_flash", "sdpa_efficient", "sdpa_cudnn"]


# ---------------------------------------------------------------- sdpa peers
# Each adapter's call is a function of flashcheck.peers.sdpa_call (plain torch, which a
# reproduction script carries); what a library's contract excludes is declined here first.


def _run_sdpa_math(torch_module, q, k, v, req: Request):
    """SDPA forced to the math backend; explicit bool mask; lse is None (not exposed)."""
    return sdpa_call.run_math(q, k, v, scale=req.scale, left=req.left, right=req.right, attn_mask=req.mask)


# Found by flashcheck's GPU runs (H100, torch 2.11.0+cu130), and declared as known divergences
# confined to the cases they cover, so that everything else about the peer is still checked:
#   sdpa-flash, sdpa-cudnn: a negative softmax_scale gives NaN outputs and +inf lse, even for
#     one query and one key (flashcheck.divergences.NEGATIVE_SCALE).
#   sdpa-efficient: a row with no allowed key gets lse 0 instead of -inf (its output is 0)
#     (EMPTY_ROWS_LSE_ZERO).
# And declined, since the backend refuses them itself:
#   sdpa-cudnn: the backward refuses one query and one key ("cuDNN Frontend error: s_q = s_kv
#     = 1 is not supported"), and under `flashcheck fuzz` once took its worker process down
#     there with SIGSEGV ([2.11 H200], backward_deterministic, Nq = Nk = 1, D = 16, float16).


#: [2.11 H100] sdpa-efficient: a row without an allowed key gets lse 0 where the protocol's is
#: -inf (its output is 0); on every property, for the cases that have such rows.
EMPTY_ROWS_LSE_ZERO = KnownDivergence(
    "a row without an allowed key gets lse 0 instead of -inf (its output is 0) ([2.11 H100])",
    with_empty_rows, steer=with_empty_rows,
)


def _square_causal(name: str, req: Request) -> bool:
    """Native ``is_causal`` is used only where top-left and bottom-right agree (Nq == Nk)."""
    if req.causal and req.nq != req.nk:
        raise NotImplementedError(
            f"{name}: causal with Nq != Nk ({req.nq} vs {req.nk}) is not expressible exactly "
            "(the private op's is_causal alignment is not a documented contract)"
        )
    return req.causal


def _run_sdpa_flash(torch_module, q, k, v, req: Request):
    """aten._scaled_dot_product_flash_attention; causal only for Nq == Nk; GQA by repeating KV."""
    return sdpa_call.run_flash(q, k, v, scale=req.scale, causal=_square_causal("sdpa-flash", req))


def _run_sdpa_cudnn(torch_module, q, k, v, req: Request):
    """aten._scaled_dot_product_cudnn_attention; causal only for Nq == Nk; GQA by repeating KV."""
    if req.nq == req.nk == 1 and any(t.requires_grad for t in (q, k, v)):
        raise NotImplementedError(
            "sdpa-cudnn: one query and one key with gradients is declined: its backward refuses them, "
            "and crashed its process once (known divergence, see flashcheck.peers.sdpa)"
        )
    return sdpa_call.run_cudnn(q, k, v, scale=req.scale, causal=_square_causal("sdpa-cudnn", req))


def _run_sdpa_efficient(torch_module, q, k, v, req: Request):
    """aten._scaled_dot_product_efficient_attention; restrictions as a 0/-inf bias; lse sliced to Nq."""
    return sdpa_call.run_efficient(q, k, v, scale=req.scale, causal=req.causal, left=req.left, right=req.right,
                               attn_mask=req.mask)


# ---------------------------------------------------------------- known divergences and the factories

_BASIC = frozenset({"causal", "gqa", "backward", "lse"})


#: [2.13 CPU] sdpa-math is not layout invariant in the last bit, in any dtype: found at head
#: dim 1 (float32, 31 queries and keys, V padded: 2 of 31 outputs), then by CI's draws at
#: one query and head dim 256 (float16, heads-first: 1 of 1024); a probe of 600 random cases
#: (lengths 1-80, head dims 1-256, three dtypes) failed 2 heads-first, 2 mixed and 1 padded,
#: and a grid of 324 small ones (1-7 queries, 2 or 9 keys, head dims 8-256) failed 42, all
#: heads-first. Its matmuls presumably sum in an order that depends on the operands'
#: strides; no property of the case (shape, dtype, layout) confines it.
_STRIDE_DEPENDENT_MATMUL = KnownDivergence(
    "its matmuls sum in an order that depends on the operands' strides, so layouts differ in "
    "the last bit ([2.13 CPU], every dtype and layout)",
)


#: [2.13 CPU] torch's SDPA frontend, on an empty key axis, returns NaN where the sum of q in
#: the input dtype overflows. Found by flashcheck: out_matches_reference on
#: 'batch=1 seqlen_q=29 seqlen_k=0 heads=8 kv_heads=2 head_dim=16 dtype=float16
#: values=offset-logits seed=0 seqlens=29:0' gave NaN in all 3712 output elements, where a
#: float64 computation gives 0 (no keys: an empty softmax, out 0, lse -inf). The adapter
#: passes torch exactly that problem (q (1, 8, 29, 16), k and v (1, 2, 0, 16), a boolean mask
#: of shape (1, 1, 29, 0)); without the mask, with contiguous copies, and with fresh empty k
#: and v it is NaN all the same, and the private op aten._scaled_dot_product_attention_math
#: returns 0 on the same inputs. A dispatch trace of the public call shows why: zeros, the
#: sums of k, v and q, two additions, a multiplication by 0 and an addition, before any
#: backend, i.e. ``zeros + (q.sum() + k.sum() + v.sum())·0`` in float16; there Σq is 65593.5
#: (float64), which rounds to inf in float16, and inf·0 = NaN. Constant q of 255 and 256 in
#: (1, 2, 8, 16) (sums 65280 and 65536) give 0 and NaN: the threshold is the sum's overflow.
#: The backward is the same shortcut: dQ = dO.sum()·0, NaN where the upstream gradient sums
#: beyond the range (dO of 1000 over 256 elements). Not an adapter translation (the math
#: itself is right), so reported, confined to cases without any key whose sum overflows.
#: torch 2.11 returned 0 there, on the CPU and on an H100 ([2.11 H100], the public call with
#: and without the math backend forced, and this adapter on the found case): the shortcut is
#: newer than 2.11, and under 2.11 the divergence never shows.
_EMPTY_KEYS_FORWARD = KnownDivergence(
    "on an empty key axis SDPA's frontend returns zeros + (q.sum() + k.sum() + v.sum())·0 in the "
    "input dtype, NaN where the sum of q overflows (flashcheck.oracle.case_predicates.sdpa_no_keys_forward_overflows; "
    "[2.13 CPU])",
    sdpa_no_keys_forward_overflows, steer=without_keys,
)
_EMPTY_KEYS_EITHER_CALL = KnownDivergence(
    _EMPTY_KEYS_FORWARD.reason + ", in either of batch_head_independence's calls",
    sdpa_no_keys_forward_overflows_in_either_call, steer=without_keys,
)
_EMPTY_KEYS_BACKWARD = KnownDivergence(
    "on an empty key axis SDPA's frontend backward gives dQ = dO.sum()·0 in the input dtype, NaN where "
    "the upstream gradient sums beyond the range (flashcheck.oracle.case_predicates.sdpa_no_keys_backward_overflows; "
    "[2.13 CPU])",
    sdpa_no_keys_backward_overflows, steer=without_keys,
)
_EMPTY_KEYS_STRESSED = KnownDivergence(
    _EMPTY_KEYS_BACKWARD.reason + ", on the property's scaled inputs and upstream gradient",
    under("ds_range", sdpa_no_keys_backward_overflows), steer=without_keys,
)
_EMPTY_KEYS_BOTH = KnownDivergence(
    "on an empty key axis SDPA's frontend returns zeros + (q.sum() + k.sum() + v.sum())·0 and its "
    "backward dQ = dO.sum()·0, in the input dtype: NaN where either sum overflows "
    "(flashcheck.oracle.case_predicates.sdpa_no_keys_forward_overflows, sdpa_no_keys_backward_overflows; [2.13 CPU])",
    either(sdpa_no_keys_forward_overflows, sdpa_no_keys_backward_overflows), steer=without_keys,
)


def sdpa_math() -> Peer:
    features = frozenset({"causal", "window", "gqa", "mask", "varlen", "backward"}) | DTYPE_NAMES
    forward = ("out_matches_reference", "outputs_finite", "empty_rows_exact", "key_shift_invariance",
               "value_linearity")
    return Peer("sdpa-math", TORCH, {"cpu": features, "cuda": features}, _run_sdpa_math, compile_key=(),
                packed_as_dense=True, known_divergences={"layout_invariance": _STRIDE_DEPENDENT_MATMUL,
                                      **{name: _EMPTY_KEYS_FORWARD for name in forward},
                                      "batch_head_independence": _EMPTY_KEYS_EITHER_CALL,
                                      "grads_match_reference": _EMPTY_KEYS_BACKWARD,
                                      "empty_rows_get_zero_dq": _EMPTY_KEYS_BACKWARD,
                                      "grads_match_reference_where_ds_exceeds_float16": _EMPTY_KEYS_STRESSED,
                                      "varlen_matches_separate_calls": _EMPTY_KEYS_BOTH})


#: Why the backward passes of SDPA's flash and efficient backends are not expected to be
#: bitwise reproducible: both accumulate dQ across key blocks with floating-point atomic
#: adds by default (torch warns so for the efficient backend), so the order of the
#: additions, and with it the rounding, changes from run to run.
_ATOMIC_DQ = "dQ is accumulated with floating-point atomic adds, in an order that varies between runs"


#: [2.11 H100] SDPA flash and cuDNN, float16: NaN gradients where the exact ones are
#: finite, on cases whose exact backward passes through values beyond float16's range.
#: Found by the property suite (gpu.sh, ci profile): cuDNN, dQ NaN where -9147.75 is exact
#: (outliers, softmax_scale 1, dO of scale 1e3; exact |dS| up to 1.0e5); flash with GQA,
#: dK NaN where -12235.5 is exact (logits offset by 2e4, dO of scale 1e3; exact per-head
#: |dK| up to 3.0e5, the KV heads being repeated here and autograd summing float16 parts).
FLOAT16_RANGE = KnownDivergence(
    "float16: rounds an intermediate of the backward to float16 where the exact one exceeds "
    "its range (|dS|, or a single query head's dK/dV summed afterwards for GQA), giving inf "
    "and NaN where the exact gradient is finite (flashcheck.oracle.case_predicates.float16_backward_overflows)",
    float16_backward_overflows,
)

#: [2.11 H100] SDPA efficient, float16: dK 1.91x the allowed error at 11 of 496 elements
#: (31 queries and keys, logits about 800, dO of scale 1e3): -0.000637 where -0.000930 is
#: exact. Forming dS from probabilities rounded to float16 reproduces -0.000637 on the CPU;
#: rounding them to 11 bits without float16's subnormal range gives -0.000930: the
#: probabilities below 2^-14 (96% of them in that case) carry the error.
_FLOAT16_EFFICIENT = KnownDivergence(
    "float16: forms dS from probabilities rounded to float16, whose subnormals (P < 2^-14) "
    "err by up to 2^-25 each, times |dP - delta| (flashcheck.divergences."
    "float16_subnormal_probabilities); and as flash and cuDNN, overflows float16 in the "
    "backward where the exact intermediates exceed its range (float16_backward_overflows)",
    either(float16_subnormal_probabilities, float16_backward_overflows),
)


#: [2.11 H100] SDPA flash, efficient and cuDNN on grads_match_reference_where_ds_exceeds_float16
#: (gpu.sh survey, profile ci): dK -inf where -628.6 is exact (flash, 2 queries and keys),
#: -inf where -375.6 is exact (efficient, window (0, 1)), NaN where 379.6 is exact (cuDNN,
#: 2049 causal queries, softmax_scale 1). The property's inputs are scaled to make exactly
#: this happen, so the cause is computed on those inputs, not on the case's own. Compiled
#: FlexAttention the same (flex survey, profile smoke): dK NaN where 8742 is exact (float16,
#: packed 1589 queries and 980 keys, GQA 12:3, D = 96; exact |dS| 7.1e5 on the scaled inputs).
FLOAT16_RANGE_STRESSED = KnownDivergence(
    "float16: rounds dS to float16 where the property's scaled inputs make the exact |dS| "
    "exceed its range (float16_backward_overflows on the inputs of the dS-range property)",
    under("ds_range", float16_backward_overflows), steer=is_float16,
)
_FLOAT16_EFFICIENT_STRESSED = KnownDivergence(
    "float16: as in grads_match_reference (subnormal probabilities, dS beyond float16's "
    "range), on the property's scaled inputs",
    either(under("ds_range", float16_subnormal_probabilities), under("ds_range", float16_backward_overflows)),
    steer=is_float16,
)


#: Why sdpa-flash and sdpa-cudnn cannot have a row without an allowed key: declaring causal but
#: no window and no mask, their only such rows would be those of bottom-right causal with
#: Nq > Nk, which they decline (_square_causal). torch documents is_causal as top-left aligned
#: for a non-square mask (F.scaled_dot_product_attention's docstring: "the upper left causal
#: bias ... when the mask is a non-square matrix"; its reference code ones(L, S).tril(diagonal=0)),
#: under which query i attends keys 0..i, so every row has a key whenever Nk >= 1; an empty key
#: axis is refused by torch's fused backends (sdp_utils.cpp, check_nonzero_sequence_lengths_dense),
#: and flash refuses is_causal with seqlen_q != seqlen_k outright (sdp_utils.cpp,
#: check_flash_causal_non_square_seqlens: "Flash attention does not support the is_causal flag
#: when seqlen_q != seqlen_k"). Every case the two properties draw is declined, so they are
#: declared not applicable rather than reported as "nothing checked".
_NO_EMPTY_ROWS_SDPA_CAUSAL = (
    "a row without an allowed key cannot be expressed: the op takes no mask or window here, and its "
    "is_causal is torch's top-left aligned mask (F.scaled_dot_product_attention's docstring), under which "
    "every row has a key; bottom-right causal with Nq > Nk, the only source of such rows, is declined "
    "(sdp_utils.cpp refuses flash's is_causal with seqlen_q != seqlen_k and an empty key axis)"
)
_SDPA_CAUSAL_ONLY_NOT_APPLICABLE = {"empty_rows_exact": _NO_EMPTY_ROWS_SDPA_CAUSAL,
                                    "empty_rows_get_zero_dq": _NO_EMPTY_ROWS_SDPA_CAUSAL}


#: [2.11 H200] cuDNN's backward gives dQ NaN on the rows whose softmax denominator over their
#: allowed keys, ``e^lse`` (lse the row's log-sum-exp of scaled scores), is about the input dtype's
#: smallest normal number or below it, where the output, dK, dV and the math backend are right. By
#: hand (docs/repros/sdpa_cudnn_low_row_sums.py: every score of a row equal, one, four or all 64
#: keys allowed, head dim 16): float16 rows NaN from lse -9 (some rows; none at -8) to every row by
#: -20, bfloat16 from lse -87 (none at -85.6); the threshold ln(smallest normal) = -9.70 and -87.34.
#: So a shared offset of -1e3 makes every element NaN (docs/repros/sdpa_cudnn_offset_logits_backward.py),
#: and so does a window of one key whose score is -11.4 in a campaign's ordinary float16 case (head
#: dim 16, scale 1). Every NaN-dQ case of the campaigns has a row's lse below -11
#: (docs/measurements/campaign/h200-2026-11-29-declared/). Declared where some row's lse is below
#: ln(smallest normal) + 1.5; not every such row fails (head dim 64 at 128 keys held at -20).
#: Through the private op the same: dQ -inf where float64 gives 313.8 on a campaign's 2 x 2
#: offset-values case whose lowest row lse is -1627 (docs/measurements/campaign/h200-2026-11-29-survey-3/).
_ROW_SUM_MARGIN = 1.5
#: The value families whose rows' sums are that low: what the drawing steers off once it is seen
#: (a description alone, no tensors).
_LARGE_LOGIT_VALUES = ("offset-logits", "large-logits", "offset-values")


def _large_logit_values(case) -> bool:
    """A case of one of the value families whose logits are large."""
    return case.values in _LARGE_LOGIT_VALUES


def cudnn_row_sum_underflows(case, stress: str = "plain") -> bool:
    """A float16 or bfloat16 case (on the inputs of ``stress``) with a row whose log-sum-exp over its
    allowed keys is below ``ln`` of the dtype's smallest normal number plus :data:`_ROW_SUM_MARGIN`."""
    if case.dtype not in ("float16", "bfloat16"):
        return False
    threshold = math.log(torch.finfo(case.torch_dtype).tiny) + _ROW_SUM_MARGIN
    return backward_extremes(case, stress).lowest_lse < threshold


_CUDNN_LOW_ROW_SUMS = "dQ NaN on rows whose softmax denominator is below the dtype's smallest normal number, " \
    "where the math backend is finite ([2.11 H200]; docs/repros/sdpa_cudnn_low_row_sums.py)"
CUDNN_LOW_ROW_SUMS_DQ = KnownDivergence(_CUDNN_LOW_ROW_SUMS, cudnn_row_sum_underflows,
                                         steer=_large_logit_values)
CUDNN_LOW_ROW_SUMS_DQ_DS_RANGE = KnownDivergence(
    _CUDNN_LOW_ROW_SUMS, under("ds_range", cudnn_row_sum_underflows), steer=_large_logit_values)

#: [2.11 H200] The same backward, through the public API, gives float16 dQ NaN on the rows where
#: ``|scale·delta_i|·e^-lse_i`` (``delta_i = dO_i·O_i``; ``e^lse_i`` the row's softmax denominator)
#: reaches float16's overflow, whatever the row's exact dS: by hand
#: (docs/repros/sdpa_cudnn_float16_scaled_delta.py), rows that attend one key with every logit 0
#: hold at 65472 and turn NaN at 65536; with random logits the NaN rows are the rows this quotient
#: predicts in 30 of 30 calls, from 6400 up where a row's lse is -2.7; hidden keys' logits change
#: nothing; bfloat16 and the math backend stay finite. A campaign's case (one key a row, dS exactly
#: 0) turned NaN in just the predicted rows at five scales. The low row sums above fit the same
#: quotient (|scale·delta| of a few units over ``e^lse`` below float16's smallest normal number),
#: and stay declared as measured. Declared where some row's quotient comes within 1% of the
#: input dtype's overflow.
_DELTA_QUOTIENT_MARGIN = 0.01


def cudnn_scaled_delta_overflows(case, stress: str = "plain") -> bool:
    """A float16 or bfloat16 case (on the inputs of ``stress``) with a row whose ``|scale·delta|
    / e^lse`` comes within :data:`_DELTA_QUOTIENT_MARGIN` of the dtype's overflow."""
    if case.dtype not in ("float16", "bfloat16"):
        return False
    limit = math.log(overflow_threshold(case.torch_dtype)) + math.log1p(-_DELTA_QUOTIENT_MARGIN)
    return backward_extremes(case, stress).log_scaled_delta_over_row_sum >= limit


_CUDNN_SCALED_DELTA = "dQ NaN on rows whose |scale * delta| over their softmax denominator e^lse exceeds the " \
    "dtype's range, where the exact dS may be 0 and the math backend is finite ([2.11 H200]; " \
    "docs/repros/sdpa_cudnn_float16_scaled_delta.py)"
CUDNN_SCALED_DELTA_DQ = KnownDivergence(_CUDNN_SCALED_DELTA, cudnn_scaled_delta_overflows)
CUDNN_SCALED_DELTA_DQ_DS_RANGE = KnownDivergence(_CUDNN_SCALED_DELTA, under("ds_range", cudnn_scaled_delta_overflows))

#: The property whose backward runs on scaled inputs (flashcheck.oracle.backward_inputs.ds_range_inputs).
_DS_RANGE_PROPERTY = "grads_match_reference_where_ds_exceeds_float16"


def on_gradients(plain: KnownDivergence, ds_range: KnownDivergence, known: dict) -> dict:
    """``known`` with a backward's divergence declared on every gradient property: ``plain`` on
    the properties' own inputs, ``ds_range`` on the dS-range property's scaled inputs."""
    spread = declared_on([name for name in gradient_properties() if name != _DS_RANGE_PROPERTY], plain, known)
    return declared_on((_DS_RANGE_PROPERTY,), ds_range, spread)


#: [2.11 H200] torch's flash backend (sdpa-flash, sdpa-public-flash), float16 with keys and values
#: sharing large offsets (``offset-values``): dQ inf where float64 gives -3347.0 (2 queries and
#: keys, head dim 16) and -350.0 (31, causal), in campaigns of both adapters
#: (docs/measurements/campaign/h200-2026-11-29-survey-3/).
#: As FlashAttention-4's (flashcheck.peers.fa4.OFFSET_VALUES_DELTA), not an error beyond plain
#: float16: flashcheck's plain same-precision backward and torch's math backend in float16 are
#: infinite on the same dQ elements of both cases (the folder's plain_float16_check output).
FLASH_OFFSET_VALUES_DELTA = KnownDivergence(
    "float16, keys and values sharing large offsets: infinite dQ where float64 is finite, as a plain float16 "
    "backward gives (delta formed from the float16-rounded output; [2.11 H200]; "
    "docs/measurements/campaign/h200-2026-11-29-survey-3/)",
    float16_with_offset_values, steer=float16_with_offset_values)
#: Causal cases of equal lengths only: _square_causal declines the others.
_SQUARE_CAUSAL_DOMAIN = {"cuda": {"causal_equal_lengths": True}}
#: cuDNN's besides: key lengths from 2, as torch's check_cudnn_tensor_shapes says of the public
#: backend ("cudnn SDPA does not support key/value sequence length 1"); its backward refuses one
#: query and one key, which the adapter declines (_run_sdpa_cudnn).
_CUDNN_DOMAIN = {"cuda": {"causal_equal_lengths": True, "min_seqlen_k": 2}}


def sdpa_flash() -> Peer:
    known = {"backward_deterministic": _ATOMIC_DQ, "grads_match_reference": FLOAT16_RANGE,
             "grads_match_reference_where_ds_exceeds_float16": FLOAT16_RANGE_STRESSED,
             "gqa_grads_match_repeated_kv": FLOAT16_RANGE}
    return Peer("sdpa-flash", TORCH, {"cuda": _BASIC | HALF}, _run_sdpa_flash, compile_key=(),
                known_divergences=on_gradients(FLASH_OFFSET_VALUES_DELTA, FLASH_OFFSET_VALUES_DELTA, known),
                every_property=NEGATIVE_SCALE, not_applicable=_SDPA_CAUSAL_ONLY_NOT_APPLICABLE,
                case_domain=_SQUARE_CAUSAL_DOMAIN)


def sdpa_efficient() -> Peer:
    features = _BASIC | {"window", "mask"} | DTYPE_NAMES
    return Peer("sdpa-efficient", TORCH, {"cuda": features}, _run_sdpa_efficient, compile_key=(),
                known_divergences={"backward_deterministic": _ATOMIC_DQ,
                                      "grads_match_reference": _FLOAT16_EFFICIENT,
                                      "grads_match_reference_where_ds_exceeds_float16": _FLOAT16_EFFICIENT_STRESSED,
                                      "gqa_grads_match_repeated_kv": FLOAT16_RANGE},
                   every_property=EMPTY_ROWS_LSE_ZERO)


#: Found by tests/test_determinism_at_scale.py, not documented by torch.
_CUDNN_DQ = ("its backward is not bitwise reproducible at scale: [2.11 H100] dQ differed in 1 to 2896 of 33.5M "
             "elements between two identical backward passes (B=4, H=32, N=2048, D=128, bfloat16; "
             "docs/repros/sdpa_cudnn_backward_nondeterministic.py)")


def sdpa_cudnn() -> Peer:
    known = {"backward_deterministic": _CUDNN_DQ, "grads_match_reference": FLOAT16_RANGE,
             "grads_match_reference_where_ds_exceeds_float16": FLOAT16_RANGE_STRESSED,
             "gqa_grads_match_repeated_kv": FLOAT16_RANGE}
    return Peer("sdpa-cudnn", TORCH, {"cuda": _BASIC | HALF}, _run_sdpa_cudnn, compile_key=(),
                known_divergences=on_gradients(CUDNN_LOW_ROW_SUMS_DQ, CUDNN_LOW_ROW_SUMS_DQ_DS_RANGE, known),
                   every_property=NEGATIVE_SCALE,
                   # See _NO_EMPTY_ROWS_SDPA_CAUSAL: attn_bias=None, is_causal top-left (torch's docstring).
                   not_applicable=_SDPA_CAUSAL_ONLY_NOT_APPLICABLE, case_domain=_CUDNN_DOMAIN)
