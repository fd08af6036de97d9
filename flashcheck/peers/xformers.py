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

import torch

from flashcheck.cases import masks
from flashcheck.peers.common import Library, Peer, Request, allowed, last_dim_contiguous
from flashcheck.protocol import DTYPE_NAMES

LIBRARY = Library("xformers.ops", ("xformers",), extra="xformers")
FEATURES = frozenset({"causal", "window", "gqa", "mask", "backward"}) | DTYPE_NAMES

#: The key axis of a tensor bias is stored padded to this many elements.
BIAS_ALIGNMENT = 16


def _check(q, request: Request) -> None:
    if request.gqa and request.grad:
        # Source: facebookresearch/xformers, xformers/ops/fmha/__init__.py, memory_efficient_attention's
        # docstring.
        raise NotImplementedError(
            f"xformers: GQA/MQA (H={request.heads}, Hkv={request.kv_heads}) with gradients: \"MQA/GQA is an "
            "experimental feature supported only for the forward pass\" (xformers/ops/fmha/__init__.py, "
            "memory_efficient_attention's docstring)")


def tensor_bias(request: Request) -> torch.Tensor:
    """The band AND the mask as an additive bias, 0 where a key may be attended and -inf
    elsewhere, in q's dtype: ``(B, H, Nq, Nk)`` broadcast views of storage whose key axis
    is padded to :data:`BIAS_ALIGNMENT`."""
    keep = masks.as_4d(allowed(request))
    bm, hm = keep.shape[0], keep.shape[1]
    padded = -(-request.nk // BIAS_ALIGNMENT) * BIAS_ALIGNMENT
    storage = torch.zeros(bm, hm, request.nq, max(padded, BIAS_ALIGNMENT), dtype=request.dtype, device=request.device)
    bias = storage[..., : request.nk]
    bias.masked_fill_(~keep.expand(bm, hm, request.nq, request.nk), float("-inf"))
    return bias.expand(request.batch, request.heads, request.nq, request.nk)


def attention_bias(attn_bias, request: Request):
    """The ``attn_bias`` that expresses the request's band and mask (module docstring);
    ``attn_bias`` is ``xformers.ops.fmha.attn_bias``."""
    if request.mask is not None:
        return tensor_bias(request)
    left, right = request.left, request.right
    if not request.banded:
        return None
    if right == 0 and left == masks.UNBOUNDED:
        return attn_bias.LowerTriangularFromBottomRightMask()
    if right == 0:
        return attn_bias.LowerTriangularFromBottomRightMask().make_local_attention(left + 1)
    far = max(request.nq, request.nk)
    return attn_bias.LocalAttentionFromBottomRightMask(window_left=far if left == masks.UNBOUNDED else left,
                                                       window_right=far if right == masks.UNBOUNDED else right)


def _dispatcher(fmha, name: str):
    found = getattr(fmha, name, None)
    return found if found is not None else getattr(fmha.dispatch, name)


def _reasons(error: NotImplementedError) -> str:
    """xformers' "No operator found" message on one line: each operator and why not."""
    lines = str(error).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("`")), len(lines))
    return " ".join(line.strip() for line in lines[start:] if line.strip()) or (lines[0] if lines else "")


def _run(module, q, k, v, request: Request):
    """xformers.ops.memory_efficient_attention; no lse."""
    fmha = module.fmha
    bias = attention_bias(fmha.attn_bias, request)
    q, k, v = (last_dim_contiguous(t) for t in (q, k, v))
    if request.gqa:
        group = request.heads // request.kv_heads
        b, nq, nk, hkv, d = request.batch, request.nq, request.nk, request.kv_heads, request.head_dim
        q = q.reshape(b, nq, hkv, group, d)
        k, v = (t.unsqueeze(3).expand(b, nk, hkv, group, d) for t in (k, v))
        if isinstance(bias, torch.Tensor):
            bias = bias.reshape(b, hkv, group, nq, nk)
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
    out = module.memory_efficient_attention(q, k, v, attn_bias=bias, p=0.0, scale=request.scale)
    return out.reshape(request.batch, request.nq, request.heads, out.shape[-1]), None


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
