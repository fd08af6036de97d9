"""torch's public ``torch.nn.functional.scaled_dot_product_attention`` with one backend forced,
as flashcheck peers: ``sdpa-public-math``, ``-flash``, ``-efficient``, ``-cudnn``.

Beside flashcheck.peers.sdpa's ``sdpa-*`` adapters, which call the backends' private operators,
these call what users call: ``F.scaled_dot_product_attention`` under
``torch.nn.attention.sdpa_kernel(backend)``, so that torch's own preprocessing (the head dim
padded for flash, a boolean mask converted for each backend) is part of what is checked.

The translation: layout ``(B, N, H, D)`` to SDPA's ``(B, H, N, D)`` and back by
``transpose(1, 2)`` views; ``scale`` explicit; GQA through ``enable_gqa=True`` (torch >= 2.5;
K/V heads repeated before). torch documents ``is_causal`` as the top-left aligned mask
``ones(L, S).tril(diagonal=0)`` (the docstring's reference implementation); the protocol's
causal is bottom-right, and the two agree only for ``Nq == Nk``. So plain causal with
``Nq == Nk`` passes ``is_causal=True``, and every other restriction (causal with
``Nq != Nk``, a window, a mask) is one boolean ``attn_mask`` (True = may attend) with the
band folded in. The public API returns no lse: "lse" is not declared.

Declines: torch publishes which inputs each fused CUDA backend can run:
``torch.backends.cuda.can_use_flash_attention``, ``can_use_efficient_attention`` and
``can_use_cudnn_attention`` (``aten/src/ATen/native/transformers/cuda/sdp_utils.cpp``: flash
takes no ``attn_mask`` and no causal with ``Nq != Nk``, float16/bfloat16 only; efficient
needs its inputs' storage offsets aligned; cuDNN float16/bfloat16 on sm80 to sm121, ...).
Before the call, the adapter asks the same question, with the same arguments
``scaled_dot_product_attention`` hands its backend choice, and declines with torch's
reasons where the forced backend would refuse ("No available kernel"). The math backend
runs everything, on the CPU and CUDA. With flash, which takes no mask, every row without a key
would be declined: ``sdpa-public-flash`` declares ``empty_rows_exact`` and
``empty_rows_get_zero_dq`` not applicable (:data:`NOT_APPLICABLE`).

``sdpa-public-math`` is checked on the CPU in tests/test_peers_sdpa_public.py. Every backend
ran on an H100 (torch 2.11) in the first survey of other libraries' kernels: short
fuzz runs to the first counterexamples (math ran its whole budget without one); what they found
is in docs/findings.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings

import torch

from flashcheck.divergences import NEGATIVE_SCALE, KnownDivergence, combined
from flashcheck.oracle.case_predicates import (
    case_hidden_logit_lead, either, float16_backward_overflows, float16_subnormal_probabilities,
    hidden_logit_lead, is_float16, or_relaid, sdpa_no_keys_backward_overflows,
    sdpa_no_keys_forward_overflows, sdpa_no_keys_forward_overflows_in_either_call, under, with_empty_rows,
    with_unaligned_views, without_keys,
)
from flashcheck.peers import sdpa_public_call
from flashcheck.peers.common import HALF, TORCH, Peer, Request
from flashcheck.peers.sdpa import (
    CUDNN_LOW_ROW_SUMS_DQ, CUDNN_LOW_ROW_SUMS_DQ_DS_RANGE, CUDNN_SCALED_DELTA_DQ, CUDNN_SCALED_DELTA_DQ_DS_RANGE,
    FLASH_OFFSET_VALUES_DELTA, on_gradients,
)
from flashcheck.peers.sdpa_call import aligned
from flashcheck.protocol import DTYPE_NAMES

LIBRARY = TORCH

#: The backends, by adapter suffix: (SDPBackend member, torch.backends.cuda check, device kinds, features).
_FULL = frozenset({"causal", "window", "gqa", "mask", "backward"})
BACKENDS = {
    "math": ("MATH", None, ("cpu", "cuda"), _FULL | DTYPE_NAMES),
    "flash": ("FLASH_ATTENTION", "can_use_flash_attention", ("cuda",), frozenset({"causal", "gqa", "backward"}) | HALF),
    # No GQA: torch refuses enable_gqa for dense inputs here ("both fused kernels require query,
    # key and value to have the same num_heads", sdp_utils_cpp.h; measured, torch 2.11 H200).
    "efficient": ("EFFICIENT_ATTENTION", "can_use_efficient_attention", ("cuda",), (_FULL - {"gqa"}) | DTYPE_NAMES),
    "cudnn": ("CUDNN_ATTENTION", "can_use_cudnn_attention", ("cuda",), _FULL | HALF),
}

# Known divergences. These backends run the kernels of flashcheck.peers.sdpa's private-op
# adapters, whose divergences were measured there (docs/peers.md, "Known divergences");
# they are declared here for the same kernels, not measured through this API yet.
_STRIDE_DEPENDENT_MATMUL = KnownDivergence(
    "its matmuls sum in an order that depends on the operands' strides, so layouts differ in the last bit "
    "(measured as sdpa-math, the same math backend, [2.13 CPU])")
_ATOMIC_DQ = "dQ is accumulated with floating-point atomic adds, in an order that varies between runs (as sdpa-*)"
_FLOAT16_RANGE = KnownDivergence(
    "float16: rounds an intermediate of the backward to float16 where the exact one exceeds its range "
    "(flashcheck.oracle.case_predicates.float16_backward_overflows; measured as sdpa-flash/sdpa-cudnn)",
    float16_backward_overflows)
_FLOAT16_EFFICIENT = KnownDivergence(
    "float16: forms dS from probabilities rounded to float16 (subnormals), and overflows float16 where the "
    "exact backward exceeds its range (measured as sdpa-efficient)",
    either(float16_subnormal_probabilities, float16_backward_overflows))
_FLOAT16_RANGE_STRESSED = KnownDivergence(
    "float16: rounds dS to float16 where the property's scaled inputs make the exact |dS| exceed its range",
    under("ds_range", float16_backward_overflows), steer=is_float16)
_FLOAT16_EFFICIENT_STRESSED = KnownDivergence(
    "float16: as in grads_match_reference, on the property's scaled inputs",
    either(under("ds_range", float16_subnormal_probabilities), under("ds_range", float16_backward_overflows)),
    steer=is_float16)
#: torch's SDPA frontend itself, before any backend, on an empty key axis (measured as sdpa-math,
#: whose call is this one with the math backend forced: flashcheck.peers.sdpa, _EMPTY_KEYS_FORWARD).
#: The fused backends refuse an empty key axis (check_nonzero_sequence_lengths_dense): declined.
_EMPTY_KEYS_FORWARD = KnownDivergence(
    "on an empty key axis SDPA's frontend returns zeros + (q.sum() + k.sum() + v.sum())·0 in the input dtype, "
    "NaN where the sum of q overflows (flashcheck.oracle.case_predicates.sdpa_no_keys_forward_overflows; measured as "
    "sdpa-math, [2.13 CPU])", sdpa_no_keys_forward_overflows, steer=without_keys)
_EMPTY_KEYS_BACKWARD = KnownDivergence(
    "on an empty key axis SDPA's frontend backward gives dQ = dO.sum()·0 in the input dtype, NaN where the "
    "upstream gradient sums beyond the range (flashcheck.oracle.case_predicates.sdpa_no_keys_backward_overflows; measured "
    "as sdpa-math, [2.13 CPU])", sdpa_no_keys_backward_overflows, steer=without_keys)
_EMPTY_KEYS_STRESSED = KnownDivergence(_EMPTY_KEYS_BACKWARD.reason + ", on the property's scaled inputs",
                                       under("ds_range", sdpa_no_keys_backward_overflows), steer=without_keys)
_EMPTY_KEYS_EITHER_CALL = KnownDivergence(_EMPTY_KEYS_FORWARD.reason + ", in either of batch_head_independence's calls",
                                           sdpa_no_keys_forward_overflows_in_either_call, steer=without_keys)
_EMPTY_KEYS = {
    **{name: _EMPTY_KEYS_FORWARD for name in ("out_matches_reference", "outputs_finite", "empty_rows_exact",
                                              "key_shift_invariance", "value_linearity")},
    "batch_head_independence": _EMPTY_KEYS_EITHER_CALL,
    "grads_match_reference": _EMPTY_KEYS_BACKWARD, "empty_rows_get_zero_dq": _EMPTY_KEYS_BACKWARD,
    "grads_match_reference_where_ds_exceeds_float16": _EMPTY_KEYS_STRESSED,
}
#: torch's bug, shown without flashcheck by docs/repros/sdpa_efficient_unaligned_view.py: the
#: efficient backend's launch finds no kernel for views that are not 16-byte aligned, which
#: can_use_efficient_attention accepts. Declared on the layouts that make such views, and on that
#: error alone, so that a campaign goes past it.
_UNALIGNED_VIEWS = KnownDivergence(
    "views whose storage is not 16-byte aligned (layouts padded and mixed) pass can_use_efficient_attention, then "
    "the call raises 'cutlassF: no kernel found to launch!' "
    "([2.11 H100], docs/repros/sdpa_efficient_unaligned_view.py)",
    with_unaligned_views, steer=with_unaligned_views, raises=True, raising="no kernel found to launch")


_UNALIGNED_VIEWS_RELAID = KnownDivergence(
    _UNALIGNED_VIEWS.reason + "; layout_invariance compares a case with such views too",
    or_relaid(with_unaligned_views), raises=True, raising=_UNALIGNED_VIEWS.raising)
#: torch's bugs that end the process or give NaN (docs/findings.md, docs/repros/): the flash
#: backend faults with "CUDA error: misaligned address" on views whose storage is not 16-byte
#: aligned, and cuDNN returns NaN (or faults, with one query) on them; both pass
#: can_use_*_attention. The adapters decline such views with this reason rather than lose the
#: worker's CUDA context (cuDNN's domain leaves those layouts out).
_UNALIGNED_REFUSAL = {
    "flash": "torch's flash backend faults (CUDA error: misaligned address) on views not 16-byte aligned, which "
             "can_use_flash_attention accepts: a torch bug (docs/findings.md), declined so that the process lives on",
    "cudnn": "torch's cuDNN backend returns NaN (or faults) on views not 16-byte aligned, which "
             "can_use_cudnn_attention accepts: a torch bug (docs/repros/sdpa_cudnn_masks_and_views.py), declined so "
             "that the process lives on",
}
_ALIGNED_LAYOUTS = ("contiguous", "heads-first")
#: [2.11 H200] cuDNN gives a row whose mask allows no key the values' mean-like nonzero output
#: where torch's math backend (and the protocol, and float64) give 0: up to 3.3 in the script's
#: rows (docs/repros/sdpa_cudnn_masks_and_views.py).
_CUDNN_EMPTY_ROWS = KnownDivergence(
    "rows whose mask allows no key get nonzero outputs (and gradients) where torch's math backend gives 0 "
    "([2.11 H200]; docs/repros/sdpa_cudnn_masks_and_views.py)", with_empty_rows, steer=with_empty_rows)
#: [2.11 H200] Keys a boolean mask hides change cuDNN's output once their logits are huge: the
#: hidden values (float16's largest, as the property sets them) appear in the rows they are
#: hidden from. At hidden logits of about 1e5 nothing changed, at about 3e5 they did; the math
#: backend changes nothing at either (docs/repros/sdpa_cudnn_huge_hidden_logits.py). Every case
#: of the two properties it is declared on hides keys behind huge logits (padded_batch_matches_
#: unpadded's padding keys: the padding's values, -65504, in every element of a replayed case's
#: output), so it covers them all. In four campaign cases of outlier values behind a mask
#: (flashcheck's scripts, docs/measurements/campaign/h200-2026-11-29-declared/) the rows that went
#: wrong were exactly those where a hidden key's logit exceeded the best visible one by 66679 to
#: 94270; gaps of 56721 and below changed nothing, and in a campaign's case of fresh keys behind a
#: window (future_keys_cannot_change_output, offset values, visible scores near -65797) the one row
#: that changed had a hidden key 65604 above its best visible one: the mask acts as a finite bias of
#: float16's largest value, -65504. Declared on every property where the case's own inputs have a
#: hidden key that far ahead (less the scores' rounding, :data:`_LEAD_SLACK`), and on
#: future_keys_cannot_change_output where its fresh keys have.
_CUDNN_HUGE_HIDDEN_LOGITS = KnownDivergence(
    "keys the mask hides leak into the output once their logits are huge (about 3e5; none at 1e5), where torch's "
    "math backend is unchanged ([2.11 H200]; docs/repros/sdpa_cudnn_huge_hidden_logits.py)")
#: The lead of a hidden key over a row's best visible one past which it leaks: float16's largest.
_MASK_BIAS = 65504.0
#: The scores' own rounding at that size (float32 dots of float16 inputs: 2^-11 of it is 32).
_LEAD_SLACK = 1024.0


def _outliers(case) -> bool:
    """Outlier values: the value family whose hidden keys lead that far (a description alone:
    the drawing steers off it once the leak is seen)."""
    return case.values == "outliers"


def _outliers_behind_a_mask(case) -> bool:
    """:func:`_outliers` behind a boolean mask (:func:`passes_attn_mask`)."""
    return _outliers(case) and passes_attn_mask(case)


def _past_the_bias(lead: float) -> bool:
    """Whether a hidden key leading its row's best visible one by ``lead`` leaks past the mask."""
    return lead > _MASK_BIAS - _LEAD_SLACK


def cudnn_mask_outscored(case) -> bool:
    """A case passed a boolean mask (:func:`passes_attn_mask`) with a key hidden from a row that
    outscores the row's best visible key by about :data:`_MASK_BIAS` or more, on its own inputs."""
    return passes_attn_mask(case) and cudnn_band_as_mask_outscored(case)


def cudnn_mask_outscored_by_fresh_keys(case) -> bool:
    """:func:`cudnn_mask_outscored`, or the same on the inputs of future_keys_cannot_change_output,
    whose hidden keys are replaced by fresh ones."""
    if cudnn_mask_outscored(case):
        return True
    if not passes_attn_mask(case):
        return False
    from flashcheck.properties.masking import fresh_keys, hidden_keys_replaced  # at call time: above the peers

    _, changed, _, _ = hidden_keys_replaced(case, "cpu", fresh_keys(case))
    return _past_the_bias(hidden_logit_lead(case, *changed[:2]))


def cudnn_band_as_mask_outscored(case) -> bool:
    """:func:`cudnn_mask_outscored` for mask_equal_to_band_matches_flag's own call, which hands
    the case's band to the backend as a boolean mask whatever the case's translation does
    (plain causal with equal lengths, :func:`passes_attn_mask` false, among its cases)."""
    return _past_the_bias(case_hidden_logit_lead(case))


_MASK_OUTSCORED = _CUDNN_HUGE_HIDDEN_LOGITS.reason + "; from a hidden key about 65504 above the row's best visible " \
    "one, as if the mask were a finite bias (docs/findings.md)"
_CUDNN_MASK_OUTSCORED = KnownDivergence(_MASK_OUTSCORED, cudnn_mask_outscored, steer=_outliers_behind_a_mask)
_CUDNN_MASK_OUTSCORED_BY_FRESH_KEYS = KnownDivergence(_MASK_OUTSCORED, cudnn_mask_outscored_by_fresh_keys,
                                                      steer=_outliers_behind_a_mask)
#: [2.11 H100] The same leak through the property's mask call: a campaign's plain causal case
#: (is_causal on the first call) whose one hidden key led its row's best visible one by 66320 gave
#: that row exactly the hidden key's value with the mask, float64's row with is_causal
#: (docs/findings.md, "Campaigns alone on one H100").
_CUDNN_BAND_AS_MASK_OUTSCORED = KnownDivergence(
    _MASK_OUTSCORED + "; here in the property's call with the band as a boolean mask", cudnn_band_as_mask_outscored,
    steer=_outliers)
#: What the flash backend's documented constraints exclude entirely. It declares causal but no
#: window and no mask, so a row without an allowed key arises only from the protocol's
#: bottom-right causal with Nq > Nk, which the adapter passes as a boolean attn_mask (is_causal
#: is top-left: F.scaled_dot_product_attention's docstring, "the upper left causal bias ... when
#: the mask is a non-square matrix", under which every row has a key); torch's
#: can_use_flash_attention refuses any attn_mask (sdp_utils.cpp, check_for_attn_mask), is_causal
#: with seqlen_q != seqlen_k (check_flash_causal_non_square_seqlens) and an empty key axis
#: (check_nonzero_sequence_lengths_dense). Every case the two properties draw is declined.
_FLASH_NO_EMPTY_ROWS = (
    "a row without an allowed key cannot be expressed with the flash backend: it takes no attn_mask and no "
    "is_causal with seqlen_q != seqlen_k (torch's sdp_utils.cpp, check_for_attn_mask and "
    "check_flash_causal_non_square_seqlens), and its top-left is_causal leaves every row a key"
)
#: [2.11 H200] Two identical backward calls differed in 2 of 231744 elements of dQ, by one ulp (a
#: campaign's case, 1207 tokens, a block mask); its replay held. The same backward measured
#: through the private op (sdpa-cudnn) differed so too (docs/findings.md, "Nondeterministic
#: backwards"); torch does not document it.
_CUDNN_NONDETERMINISTIC_DQ = (
    "dQ can differ in the last bit between identical backward calls (2 of 231744 elements once, 1 ulp; "
    "[2.11 H200]; as sdpa-cudnn: docs/findings.md, Nondeterministic backwards)")
NOT_APPLICABLE = {
    "flash": {"empty_rows_exact": _FLASH_NO_EMPTY_ROWS, "empty_rows_get_zero_dq": _FLASH_NO_EMPTY_ROWS},
}
KNOWN = {
    "math": {"layout_invariance": _STRIDE_DEPENDENT_MATMUL, **_EMPTY_KEYS},
    "flash": {"backward_deterministic": _ATOMIC_DQ, "grads_match_reference": _FLOAT16_RANGE,
              "grads_match_reference_where_ds_exceeds_float16": _FLOAT16_RANGE_STRESSED,
              "gqa_grads_match_repeated_kv": _FLOAT16_RANGE},
    "efficient": {"backward_deterministic": _ATOMIC_DQ, "grads_match_reference": _FLOAT16_EFFICIENT,
                  "grads_match_reference_where_ds_exceeds_float16": _FLOAT16_EFFICIENT_STRESSED,
                  "layout_invariance": _UNALIGNED_VIEWS_RELAID},
    "cudnn": {"masked_keys_with_huge_logits_change_nothing": _CUDNN_HUGE_HIDDEN_LOGITS,
              "future_keys_cannot_change_output": _CUDNN_MASK_OUTSCORED_BY_FRESH_KEYS,
              "mask_equal_to_band_matches_flag": _CUDNN_BAND_AS_MASK_OUTSCORED,
              "padded_batch_matches_unpadded": _CUDNN_HUGE_HIDDEN_LOGITS,
              "backward_deterministic": _CUDNN_NONDETERMINISTIC_DQ,
              "grads_match_reference": _FLOAT16_RANGE,
              "grads_match_reference_where_ds_exceeds_float16": _FLOAT16_RANGE_STRESSED,
              "gqa_grads_match_repeated_kv": _FLOAT16_RANGE},
}


#: Divergences declared on every gradient property, by backend: on the properties' own inputs,
#: and on the dS-range property's scaled inputs (:func:`flashcheck.peers.sdpa.on_gradients`).
GRADIENTS = {"cudnn": (combined(CUDNN_LOW_ROW_SUMS_DQ, CUDNN_SCALED_DELTA_DQ),
                       combined(CUDNN_LOW_ROW_SUMS_DQ_DS_RANGE, CUDNN_SCALED_DELTA_DQ_DS_RANGE)),
             "flash": (FLASH_OFFSET_VALUES_DELTA, FLASH_OFFSET_VALUES_DELTA)}
#: Divergences declared on every property, by backend.
EVERY_PROPERTY = {"flash": NEGATIVE_SCALE,
                  "cudnn": combined(NEGATIVE_SCALE, _CUDNN_EMPTY_ROWS, _CUDNN_MASK_OUTSCORED),
                  "efficient": _UNALIGNED_VIEWS}


def passes_attn_mask(case) -> bool:
    """Whether the SDPA translation (:func:`flashcheck.peers.sdpa_public_call.arguments`) passes
    ``case`` a boolean ``attn_mask``: every band or mask but plain causal with equal lengths."""
    left, right = case.band
    native = sdpa_public_call.native_causal(case.causal, case.seqlen_q, case.seqlen_k, left, not case.mask.is_none)
    return not native and ((left, right) != (-1, -1) or not case.mask.is_none)


def sdpa_arguments(q, k, v, request: Request):
    """``(q, k, v, attn_mask, is_causal, gqa_kwargs)`` as this adapter hands them to
    ``F.scaled_dot_product_attention`` (:func:`flashcheck.peers.sdpa_public_call.arguments`)."""
    return sdpa_public_call.arguments(q, k, v, causal=request.causal, left=request.left, right=request.right,
                                      attn_mask=request.mask)


def backend_refusal(check: str, q, k, v, mask, is_causal: bool, gqa: dict) -> str | None:
    """torch's reasons why ``torch.backends.cuda.<check>`` refuses these SDPA arguments, or
    None when the backend can run them."""
    from torch.backends.cuda import SDPAParams

    arguments = (q, k, v, mask, 0.0, is_causal) + ((gqa["enable_gqa"],) if gqa else ())
    params = SDPAParams(*arguments)
    can_use = getattr(torch.backends.cuda, check)
    if can_use(params, False):
        return None
    # Asked again, with its reasons, only where it refuses: every case a backend runs would
    # otherwise redirect stderr through a file of its own.
    with warnings.catch_warnings(record=True) as caught, _stderr_lines() as stderr:
        warnings.simplefilter("always")
        can_use(params, True)
    reasons = [" ".join(str(w.message).split()) for w in caught] + _cpp_warnings(stderr)
    return "; ".join(reasons) or "no reason given"


@contextlib.contextmanager
def _stderr_lines():
    """The lines the process writes to file descriptor 2 meanwhile, in the list yielded (filled
    at the block's end): torch's checks report their reasons as C++ warnings, written there and
    not raised as Python warnings. Lines that are no such warning go on to stderr after all."""
    lines: list[str] = []
    sys.stderr.flush()
    with tempfile.TemporaryFile() as file:
        saved = os.dup(2)
        os.dup2(file.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            file.seek(0)
            lines.extend(file.read().decode(errors="replace").splitlines())
    others = [line for line in lines if "Warning: " not in line]
    if others:
        print("\n".join(others), file=sys.stderr)


def _cpp_warnings(lines: list[str]) -> list[str]:
    """The messages of torch's C++ warnings among ``lines`` ("[W... file:line] Warning: MESSAGE
    (function ...)"), one line each, without their location."""
    reasons = []
    for line in lines:
        _, marker, message = line.partition("Warning: ")
        if marker:
            reasons.append(" ".join(message.split(" (function ")[0].split()))
    return reasons


def _run(suffix: str):
    member, check, _, _ = BACKENDS[suffix]

    def run(module, q, k, v, request: Request):
        """torch.nn.functional.scaled_dot_product_attention under sdpa_kernel(backend); no lse
        (:func:`flashcheck.peers.sdpa_public_call.run_backend`)."""
        arguments = sdpa_arguments(q, k, v, request)
        if suffix in _UNALIGNED_REFUSAL and not all(aligned(t) for t in arguments[:3]) and q.shape[-1] % 8 == 0:
            # torch pads a head dim off a multiple of 8 into a new, aligned tensor before the kernel.
            raise NotImplementedError(f"sdpa-public-{suffix}: {_UNALIGNED_REFUSAL[suffix]}")
        if check is not None:
            refusal = backend_refusal(check, *arguments)
            if refusal is not None:
                raise NotImplementedError(f"sdpa-public-{suffix}: torch.backends.cuda.{check} refuses this case: "
                                          f"{refusal}")
        return sdpa_public_call.run_backend(member, *arguments, scale=request.scale)
    return run


def cudnn_domain() -> dict:
    """The values torch's ``check_cudnn_tensor_shapes`` (``sdp_utils.cpp``) lets the cuDNN backend
    run: head dims that are multiples of 8, up to 256 with cuDNN 9.10 or newer on sm90 and up to
    128 elsewhere, and key lengths other than 1 ("cudnn SDPA does not support key/value sequence
    length 1")."""
    limit = 128
    if torch.cuda.is_available() and (torch.backends.cudnn.version() or 0) >= 91000 \
            and torch.cuda.get_device_capability() == (9, 0):
        limit = 256
    return {"cuda": {"head_dim_multiple": 8, "max_head_dim": limit, "min_seqlen_k": 2, "layouts": _ALIGNED_LAYOUTS}}


#: The declared case domains, by backend. The efficient backend's head dims: multiples of 8
#: ("Mem efficient attention requires last dimension of inputs to be divisible by 8", 4 in
#: float32: the narrower). The flash backend's: no mask, which the translation passes for a causal
#: case of unequal lengths (torch's is_causal is aligned at the top left, the protocol's at the
#: bottom right), and views whose rows are 16-byte aligned (declined above, where it faults);
#: without them 52% of a campaign's drawn cases were declined (docs/measurements/campaign/h200-2026-11-29-survey-3/).
DOMAINS = {"cudnn": cudnn_domain, "efficient": {"cuda": {"head_dim_multiple": 8}},
           "flash": {"cuda": {"layouts": _ALIGNED_LAYOUTS, "causal_equal_lengths": True}}}


def _known(suffix: str) -> dict:
    """The backend's declarations by property: its own, with its gradient ones spread over
    every gradient property."""
    if suffix not in GRADIENTS:
        return KNOWN[suffix]
    plain, ds_range = GRADIENTS[suffix]
    return on_gradients(plain, ds_range, KNOWN[suffix])


def _build(suffix: str) -> Peer:
    _, _, kinds, features = BACKENDS[suffix]
    # torch's fused SDPA kernels are compiled ahead of time: nothing is compiled per case.
    return Peer(f"sdpa-public-{suffix}", LIBRARY, {kind: features for kind in kinds}, _run(suffix), compile_key=(),
                known_divergences=_known(suffix), not_applicable=NOT_APPLICABLE.get(suffix),
                every_property=EVERY_PROPERTY.get(suffix),
                case_domain=DOMAINS.get(suffix))


def math() -> Peer:
    """``sdpa-public-math``: the math backend, on the CPU and CUDA."""
    return _build("math")


def flash() -> Peer:
    """``sdpa-public-flash``: the FlashAttention-2 backend (CUDA)."""
    return _build("flash")


def efficient() -> Peer:
    """``sdpa-public-efficient``: the memory-efficient backend (CUDA)."""
    return _build("efficient")


def cudnn() -> Peer:
    """``sdpa-public-cudnn``: the cuDNN backend (CUDA)."""
    return _build("cudnn")
