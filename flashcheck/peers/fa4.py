"""FlashAttention-4 (pip ``flash-attn-4``, module ``flash_attn.cute``) as flashcheck peers.

Read in Dao-AILab/flash-attention, ``flash_attn/cute/interface.py`` (tags fa4-v4.0.0.beta4 to
beta27: the signatures used here are the same throughout):

* ``flash_attn_func(q, k, v, softmax_scale=None, causal=False, window_size=(None, None),
  ..., deterministic=False, ..., return_lse=False) -> (out, lse)``: q ``(B, Nq, H, D)``, k and
  v ``(B, Nk, Hkv, D)``, ``H % Hkv == 0`` (GQA: head ``h`` reads KV head ``h // (H // Hkv)``),
  out ``(B, Nq, H, D)`` in q's dtype, lse ``(B, H, Nq)`` float32. Masking is aligned
  bottom-right (``flash_attn/cute/mask.py``: the causal limit is ``row + seqlen_k -
  seqlen_q``); ``window_size`` is ``(left, right)`` with ``None`` unbounded;
  ``_resolve_causal_local_window`` makes ``causal=True`` the window ``(left, 0)``.
* ``flash_attn_varlen_func(q, k, v, cu_seqlens_q=, cu_seqlens_k=, max_seqlen_q=,
  max_seqlen_k=, ...)``: q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)``, int32 offsets, lse
  ``(H, Tq)``.
* The lse is the natural log: the kernels keep base-2 statistics and write
  ``(row_max_scaled + log2(row_sum)) * ln 2`` (``flash_attn/cute/softmax.py``, ``finalize``),
  ``-inf`` for a row without keys; with ``return_lse=True`` it is differentiable (the
  backward takes ``dlse``).

The translation: ``window=(-1, ...)`` sides become ``None``; ``causal`` is passed as it is;
``softmax_scale`` explicitly; ``return_lse=True``. q, k, v go in as they are (FA4 makes
inputs it cannot address contiguous itself, ``cute_dsl_utils.maybe_contiguous``).
``fa4-varlen`` calls ``flash_attn_varlen_func`` for packed cases and for dense ones, a
dense batch packed as one sequence per batch entry (a reshape) and unpacked back.

What it declines (before importing the library), with where FA4 says so:

* a GPU older than Hopper or newer than compute capability 12.x: the README says
  "FlashAttention-4 ... for Hopper and Blackwell GPUs" (``flash_attn/cute/README.md``) and
  the backward asserts ``arch // 10 in [9, 10, 11, 12]`` (``interface.py``,
  ``_flash_attn_bwd``); the forward asserts ``arch // 10 in [8, 9, 10, 11, 12]``
  (``_flash_attn_fwd``);
* head dims outside ``_validate_head_dims`` (``interface.py``): on sm90 between 8 and 256
  and a multiple of 8 (16 bytes of a 16-bit dtype); on sm100/sm110 between 8 and 128 and a
  multiple of 8, or 256;
* float32: ``_flash_attn_fwd`` asserts "inputs must be float16, bfloat16, fp8 e4m3fn, or
  fp8 e5m2" and ``_flash_attn_bwd`` "inputs must be float16 or bfloat16" (fp8 is outside
  the protocol);
* ``attn_mask``: the API takes no boolean mask (``mask_mod`` is a CuTe DSL callable);
* ``fa4-deterministic`` with gradients on sm12x: ``_flash_attn_bwd`` asserts
  "deterministic backward not supported on SM 12.0".

Run on an H100 (4.0.0b36, torch 2.11; docs/findings.md): besides the declines above, what
the survey found is declared below as known divergences, each confined to the cases it
covers.
"""

from __future__ import annotations

import torch

from flashcheck.divergences import NEGATIVE_SCALE, KnownDivergence, combined
from flashcheck.oracle.case_predicates import float16_backward_overflows, float16_with_offset_values, is_float16, under
from flashcheck.peers import fa4_call
from flashcheck.peers.common import HALF, Library, Peer, Request, declared_on, gpu_capability_read, gradient_properties

#: FA4 keeps compiled kernels in memory only, unless ``FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1``
#: when it is imported (``flash_attn/cute/cache_utils.py``): then it exports each to
#: ``FLASH_ATTENTION_CUTE_DSL_CACHE_DIR`` (default ``$TMPDIR/$USER/flash_attention_cute_dsl_cache``)
#: under file locks, and any process loads it from there. Without it every fuzz or xdist worker
#: compiles each variant itself, for seconds, however many others already have.
LIBRARY = Library("flash_attn.cute", ("flash-attn-4",), extra="fa4",
                  environment=(("FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", "1"),))
#: ``lse_grad``: with ``return_lse=True`` FA4's lse is differentiable (its autograd functions'
#: backward takes ``dlse``; ``flash_attn/cute/interface.py``).
FEATURES = frozenset({"causal", "window", "gqa", "backward", "lse", "lse_grad"}) | HALF

#: Why FA4's default backward is not expected to be bitwise reproducible.
NONDETERMINISTIC_BACKWARD = (
    "its backward orders the accumulation of dQ (and of dK, dV with GQA) only with deterministic=True "
    "(flash_attn/cute/interface.py, _flash_attn_bwd allocates the semaphores that order it only then); "
    "fa4-deterministic checks that mode"
)


#: [4.0.0b36, 2.11 H100] float16: NaN and -inf gradients where the exact backward holds a |dS|
#: beyond float16's range (exact |dS| 1.4e5 and 6.9e4 on the two cases the survey found, fa4-varlen
#: and fa4-deterministic, GQA 7:1 and 9:3), as torch SDPA's flash backend: dS is rounded to
#: float16 for the dQ and dK products. First observed on the property that drives |dS| there; then
#: [4.0.0b36, 2.11 H200] on grads_match_reference's own inputs (fa4-deterministic campaign,
#: outlier values, head dim 64, window (0, 300): dK NaN where float64 gives 18513.6, exact |dS|
#: 1.39e5; docs/measurements/campaign/h200-2026-11-29-survey-3/).
_FLOAT16_RANGE_REASON = ("float16: rounds dS to float16 where the exact |dS| exceeds its range, giving NaN and infinite "
                         "gradients (flashcheck.oracle.case_predicates.float16_backward_overflows; [4.0.0b36, 2.11 H100])")
FLOAT16_RANGE = {
    "grads_match_reference_where_ds_exceeds_float16": KnownDivergence(
        _FLOAT16_RANGE_REASON, under("ds_range", float16_backward_overflows), steer=is_float16),
    **{name: KnownDivergence(_FLOAT16_RANGE_REASON, float16_backward_overflows)
       for name in ("grads_match_reference", "gqa_grads_match_repeated_kv")},
}


def _capability(device: torch.device) -> tuple[int, int]:
    """The compute capability of ``device`` (a function of its own, so that the tests can
    stand in for a GPU)."""
    return torch.cuda.get_device_capability(device)


def sm90_backward_head_dim(case) -> bool:
    """A case whose gradients FA4's Hopper backward gets wrong: a head dim that is not a
    multiple of 32, on an sm90 GPU. [4.0.0b36, 2.11 H200] Head dims 48, 72 and 80: dQ off by
    O(1) in about half its elements, and dK, dV too with GQA; 104 and 112: the backward fails to
    compile ("failed to partition ... with tiled_mma"); 64, 96, 128 and 160 right
    (docs/repros/fa4_sm90_backward_head_dims.py). Read from the source: the backward rounds the
    head dim to a multiple of 16 for its float32 accumulators' rows where the buffers and the
    post-processing use a multiple of 32 (docs/findings.md)."""
    return case.head_dim % 32 != 0 and _gpu_major() == 9


def _gpu_major() -> int | None:
    """The major compute capability a declaration reads (:func:`flashcheck.peers.common.gpu_capability_read`)."""
    capability = gpu_capability_read(lambda: _capability(torch.device("cuda")))
    return None if capability is None else capability[0]


SM90_BACKWARD = KnownDivergence(
    "on Hopper (sm90), head dims that are not multiples of 32 get wrong dQ (and dK, dV with GQA), and at 104 and 112 "
    "a backward that fails to compile ([4.0.0b36, 2.11 H200]; docs/repros/fa4_sm90_backward_head_dims.py)",
    sm90_backward_head_dim, steer=sm90_backward_head_dim, raises=True, raising="failed to partition")


#: [4.0.0b36, 2.11 H200] float16 with keys and values sharing large offsets (``offset-values``):
#: infinite dQ (or dK) where float64 is finite (head dims 128 and 224, dense and packed, causal,
#: GQA 4:1; docs/measurements/campaign/h200-2026-11-29-fa4-offset-values/). Not an error of its
#: implementation: a plain float16 backward overflows on the same inputs (flashcheck's own, and
#: torch autograd), and flashcheck lets no non-finite result pass where float64 is finite
#: (docs/tolerance.md). Read from the source: flash_bwd_preprocess.py forms delta = rowsum(dO·O)
#: from O as stored in float16, as the plain backward does, so O's rounding error times the
#: values' offset reaches every dS of the row and meets K's shared offset in dQ.
OFFSET_VALUES_DELTA = KnownDivergence(
    "float16, keys and values sharing large offsets: infinite dQ or dK where float64 is finite, as a plain float16 "
    "backward gives (delta formed from the float16-rounded output; [4.0.0b36, 2.11 H200]; "
    "docs/measurements/campaign/h200-2026-11-29-fa4-offset-values/)",
    float16_with_offset_values, steer=float16_with_offset_values)


def _known(own: dict) -> dict:
    """``own`` with the backward's divergences (sm90 head dims, float16 offsets) declared on
    every gradient property."""
    return declared_on(gradient_properties(), combined(SM90_BACKWARD, OFFSET_VALUES_DELTA), own)


def _check(name: str, deterministic: bool):
    def check(q, request: Request) -> None:
        major, minor = _capability(q.device)
        if not 9 <= major <= 12:
            # Source: Dao-AILab/flash-attention, flash_attn/cute/README.md; flash_attn/cute/interface.py,
            # _flash_attn_bwd.
            raise NotImplementedError(
                f"{name}: FlashAttention-4 runs on Hopper (sm90) to sm12x GPUs, got sm{major}{minor} "
                "(flash_attn/cute/README.md; interface.py _flash_attn_bwd asserts arch // 10 in [9, 10, 11, 12])")
        d = request.head_dim
        if major == 9 and not (8 <= d <= 256 and d % 8 == 0):
            # Source: Dao-AILab/flash-attention, flash_attn/cute/interface.py, _validate_head_dims.
            raise NotImplementedError(
                f"{name}: head dim {d} is not supported on sm90: it must lie between 8 and 256 and be a multiple "
                "of 8 (flash_attn/cute/interface.py, _validate_head_dims)")
        if major in (10, 11) and not ((8 <= d <= 128 and d % 8 == 0) or d == 256):
            # Source: Dao-AILab/flash-attention, flash_attn/cute/interface.py, _validate_head_dims.
            raise NotImplementedError(
                f"{name}: head dim {d} is not supported on sm{major}x: it must lie between 8 and 128 and be a "
                "multiple of 8, or be 256 (flash_attn/cute/interface.py, _validate_head_dims)")
        if deterministic and request.grad and major == 12:
            # Source: Dao-AILab/flash-attention, flash_attn/cute/interface.py, _flash_attn_bwd.
            raise NotImplementedError(
                f"{name}: the deterministic backward is not supported on sm12x "
                "(flash_attn/cute/interface.py, _flash_attn_bwd asserts deterministic is False on SM 12.0)")
    return check


#: What selects one of FA4's compiled kernels: ``_flash_attn_fwd`` and ``_flash_attn_bwd`` key
#: their compile caches on the dtype, the head dim, the query heads per KV head (pack_gqa), causal
#: and the presence of each window side, the lse, and whether the call is packed
#: (``cu_seqlens_q is None``); the scale and the lengths are runtime arguments.
COMPILE_KEY = ("dtype", "head_dim", "gqa_ratio", "band", "mode")


def case_domain() -> dict:
    """The head dims ``_validate_head_dims`` (``flash_attn/cute/interface.py``) accepts on the GPU
    here: on sm100/sm110 between 8 and 128 and a multiple of 8, or 256; elsewhere (sm90, or no GPU
    yet) between 8 and 256 and a multiple of 8."""
    if _gpu_major() in (10, 11):
        return {"cuda": {"head_dims": tuple(range(8, 129, 8)) + (256,)}}
    return {"cuda": {"head_dim_multiple": 8, "min_head_dim": 8, "max_head_dim": 256}}


def _run_dense(deterministic: bool):
    def run(module, q, k, v, request: Request):
        """flash_attn.cute.flash_attn_func (:func:`flashcheck.peers.fa4_call.dense`)."""
        return fa4_call.dense(module.flash_attn_func, q, k, v, deterministic=deterministic,
                              **request.plain_call_arguments())
    return run


def _run_varlen(module, q, k, v, request: Request):
    """flash_attn.cute.flash_attn_varlen_func (:func:`flashcheck.peers.fa4_call.varlen`): packed
    cases as they are, a dense batch packed as one sequence per batch entry and unpacked back."""
    return fa4_call.varlen(module.flash_attn_varlen_func, q, k, v, **request.plain_call_arguments())


def dense() -> Peer:
    """``fa4``: flash_attn.cute.flash_attn_func."""
    return Peer("fa4", LIBRARY, {"cuda": FEATURES}, _run_dense(False), check=_check("fa4", False),
                known_divergences=_known({"backward_deterministic": NONDETERMINISTIC_BACKWARD, **FLOAT16_RANGE}),
                every_property=NEGATIVE_SCALE, case_domain=case_domain, compile_key=COMPILE_KEY)


def deterministic() -> Peer:
    """``fa4-deterministic``: flash_attn.cute.flash_attn_func with deterministic=True."""
    return Peer("fa4-deterministic", LIBRARY, {"cuda": FEATURES}, _run_dense(True),
                check=_check("fa4-deterministic", True), known_divergences=_known(FLOAT16_RANGE),
                every_property=NEGATIVE_SCALE,
                case_domain=case_domain, compile_key=COMPILE_KEY)


def varlen() -> Peer:
    """``fa4-varlen``: flash_attn.cute.flash_attn_varlen_func, packed and dense cases."""
    return Peer("fa4-varlen", LIBRARY, {"cuda": FEATURES | {"varlen"}}, _run_varlen, check=_check("fa4-varlen", False),
                known_divergences=_known({"backward_deterministic": NONDETERMINISTIC_BACKWARD, **FLOAT16_RANGE}),
                every_property=NEGATIVE_SCALE, case_domain=case_domain, compile_key=COMPILE_KEY)
