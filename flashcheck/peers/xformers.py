"""xformers' ``memory_efficient_attention`` (pip ``xformers``, module ``xformers.ops``) as a
flashcheck peer.

Read in facebookresearch/xformers, ``xformers/ops/fmha/__init__.py``, ``attn_bias.py``,
``dispatch.py`` and ``common.py`` (v0.0.28 to v0.0.35; later versions re-export the same API
from the ``mslk`` package):

* ``memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None)``: inputs
  ``[B, M, H, K]`` (the protocol's layout), "we only require the last dimension's stride to
  be 1"; it returns the output only, so the adapter declares no lse. GQA/MQA goes in the
  5-D format ``[B, M, G, H, K]`` with K/V expanded over each group's heads, which "is an
  experimental feature supported only for the forward pass" (its docstring).
* Masks are ``attn_bias`` objects: ``LowerTriangularFromBottomRightMask`` (causal aligned
  bottom-right), ``LowerTriangularFromBottomRightLocalAttentionMask(window_size)`` (that,
  keeping ``window_size`` keys: the protocol's ``(window_size - 1, 0)``),
  ``LocalAttentionFromBottomRightMask(window_left, window_right)`` ("the query at position q
  can attend the key at position k if q - window_left <= k + s <= q + window_right, with
  s = num_queries - num_keys": the protocol's band exactly), or an additive tensor
  ``[B, H, Mq, Mkv]`` (``[B, G, H, Mq, Mkv]`` with GQA).

The translation: no restriction is ``attn_bias=None``; a band without a mask is the bias
class above that expresses it (an unbounded side of a two-sided window becomes
``max(Nq, Nk)``, which bounds nothing); with a boolean mask, the band and the mask become one
additive tensor of 0 and ``-inf`` in q's dtype, its key axis stored padded to a multiple of
16 elements (xformers' alignment hint: "attn_bias.stride(-2) % alignment"). ``scale`` is
passed explicitly; an input whose last dimension is strided is copied contiguous (the one
layout requirement the docstring states).

Which operator runs is xformers' dispatch: each operator lists what it supports
(``SUPPORTED_DTYPES``, ``SUPPORTED_ATTN_BIAS_TYPES``, alignments, the GPU) and
``memory_efficient_attention`` raises NotImplementedError when none fits. The adapter asks
the same dispatch (``_dispatch_fw``, and ``_dispatch_bw`` with gradients) before the call
and declines with xformers' reasons, so that what xformers documents it cannot run is a
decline of the adapter's. It also declines GQA/MQA with gradients (the docstring above), and so
declares ``gqa_grads_match_repeated_kv``, all of whose cases are that, not applicable.

Not run on a GPU: in the first survey of other libraries' kernels (docs/findings.md)
xformers 0.0.35's CUDA operators did not load under the GPU machine's torch 2.11 ("xFormers
wasn't built with CUDA support"), so every case was declined.
"""

from __future__ import annotations

from flashcheck.peers import xformers_call
from flashcheck.peers.common import Library, Peer, Request
from flashcheck.protocol import DTYPE_NAMES

LIBRARY = Library("xformers.ops", ("xformers",), extra="xformers")
FEATURES = frozenset({"causal", "window", "gqa", "mask", "backward"}) | DTYPE_NAMES


def _check(q, request: Request) -> None:
    if request.gqa and request.grad:
        # Source: facebookresearch/xformers, xformers/ops/fmha/__init__.py, memory_efficient_attention's
        # docstring.
        raise NotImplementedError(
            f"xformers: GQA/MQA (H={request.heads}, Hkv={request.kv_heads}) with gradients: \"MQA/GQA is an "
            "experimental feature supported only for the forward pass\" (xformers/ops/fmha/__init__.py, "
            "memory_efficient_attention's docstring)")


def _dispatcher(fmha, name: str):
    found = getattr(fmha, name, None)
    return found if found is not None else getattr(fmha.dispatch, name)


def _reasons(error: NotImplementedError) -> str:
    """xformers' "No operator found" message on one line: each operator and why not."""
    lines = str(error).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("`")), len(lines))
    return " ".join(line.strip() for line in lines[start:] if line.strip()) or (lines[0] if lines else "")


def _run(module, q, k, v, request: Request):
    """xformers.ops.memory_efficient_attention (:mod:`flashcheck.peers.xformers_call`), after
    xformers' own dispatch has found an operator for the case; no lse."""
    fmha = module.fmha
    q, k, v, bias = xformers_call.arguments(fmha.attn_bias, q, k, v, left=request.left, right=request.right,
                                            attn_mask=request.mask)
    inputs = fmha.Inputs(query=q, key=k, value=v, attn_bias=bias, p=0.0, scale=request.scale)
    # As memory_efficient_attention decides (_memory_efficient_attention): by requires_grad,
    # whether or not autograd records.
    needs_gradient = any(t.requires_grad for t in (q, k, v))
    try:
        _dispatcher(fmha, "_dispatch_fw")(inputs, needs_gradient)
        if needs_gradient:
            _dispatcher(fmha, "_dispatch_bw")(inputs, varlen_lse_packed=None)
    except NotImplementedError as error:
        reasons = _reasons(error)
        raise NotImplementedError(f"xformers: no operator of this xformers supports the case: {reasons}") from None
    return xformers_call.call(module.memory_efficient_attention, q, k, v, bias, scale=request.scale)


#: Every case of gqa_grads_match_repeated_kv is GQA/MQA with gradients, which _check declines:
#: memory_efficient_attention's docstring (xformers/ops/fmha/__init__.py, v0.0.28 to v0.0.35):
#: "MQA/GQA is an experimental feature supported only for the forward pass".
NOT_APPLICABLE = {
    "gqa_grads_match_repeated_kv": "GQA/MQA with gradients: \"MQA/GQA is an experimental feature supported only "
                                   "for the forward pass\" (xformers/ops/fmha/__init__.py, "
                                   "memory_efficient_attention's docstring)",
}


def memory_efficient() -> Peer:
    """``xformers``: xformers.ops.memory_efficient_attention."""
    return Peer("xformers", LIBRARY, {"cuda": FEATURES}, _run, check=_check, not_applicable=NOT_APPLICABLE)
