"""FlashAttention-2 (pip ``flash-attn``, module ``flash_attn``) as flashcheck peers.

Read in Dao-AILab/flash-attention, ``flash_attn/flash_attn_interface.py`` and
``csrc/flash_attn/flash_api.cpp`` (v2.6.0 to 2.8.x):

* ``flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
  window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
  return_attn_probs=False)``: q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)`` with
  ``H % Hkv == 0`` (its docstring: head ``h`` reads KV head ``h // (H // Hkv)``), out
  ``(B, Nq, H, D)``. Its docstring: causal "is aligned to the bottom right corner of the
  attention matrix"; a window lets query ``i`` attend keys ``[i + Nk - Nq - left,
  i + Nk - Nq + right]``, ``-1`` meaning unbounded: the protocol's own encoding.
* With ``return_attn_probs=True`` it returns ``(out, softmax_lse, S_dmask)``, softmax_lse
  ``(B, H, Nq)`` float32, "the logsumexp of each row of the matrix QK^T * scaling" (natural
  log). ``flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
  max_seqlen_k, ...)`` takes q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)`` and returns
  softmax_lse ``(H, Tq)`` (since v2.6.0; ``(B, H, max_seqlen_q)`` before, hence the extra's
  lower bound).
* Its autograd functions discard the lse's gradient (``FlashAttnFunc.backward(ctx, dout,
  *args)``): the lse is returned detached, a constant, as the protocol allows, rather than
  as a tensor that autograd tracks without a gradient.

The translation: window and causal pass as they are, ``softmax_scale`` explicitly,
``dropout_p=0.0``, ``return_attn_probs=True`` for the lse. ``fa2-varlen`` calls
``flash_attn_varlen_func`` for packed cases and for dense ones, a dense batch packed as one
sequence per batch entry (a reshape) and unpacked back.

What it declines (before importing the library), with where FA2 says so:

* a GPU older than Ampere: README "FlashAttention-2 with CUDA currently supports: 1. Ampere,
  Ada, or Hopper GPUs"; ``flash_api.cpp`` ``mha_fwd``: "FlashAttention only supports Ampere
  GPUs or newer.";
* head dims above 256: README "3. All head dimensions up to 256"; ``flash_api.cpp``
  ``mha_fwd``: "FlashAttention forward only supports head dimension at most 256";
* float32: README "2. Datatype fp16 and bf16"; ``mha_fwd`` checks "FlashAttention only
  support fp16 and bf16 data type";
* ``attn_mask``: the API takes none.

From the source, to be confirmed on a GPU: a row without keys gets lse ``+inf``, not the
protocol's ``-inf`` (``csrc/flash_attn/src/softmax.h``: ``(sum == 0.f || sum != sum) ?
(Split ? -INFINITY : INFINITY)``; ``mha_fwd`` fills ``+inf`` when ``seqlen_k == 0``).
flashcheck reports that as it is. Not run on a GPU: in the first survey of other libraries'
kernels (docs/findings.md) no FlashAttention-2 wheel matched the GPU machine's torch.
"""

from __future__ import annotations

import torch

from flashcheck.peers import fa2_call
from flashcheck.peers.common import HALF, Library, Peer, Request

LIBRARY = Library("flash_attn", ("flash-attn",), extra="fa2")
FEATURES = frozenset({"causal", "window", "gqa", "backward", "lse"}) | HALF

NONDETERMINISTIC_BACKWARD = (
    "its backward is deterministic only with deterministic=True (flash_attn_func's docstring: "
    "\"Whether to use the deterministic implementation of the backward pass\"); by default dQ is "
    "accumulated with atomic adds"
)


def _capability(device: torch.device) -> tuple[int, int]:
    """The compute capability of ``device`` (a function of its own, so that the tests can
    stand in for a GPU)."""
    return torch.cuda.get_device_capability(device)


def _check(name: str):
    def check(q, request: Request) -> None:
        major, minor = _capability(q.device)
        if major < 8:
            # Source: Dao-AILab/flash-attention, csrc/flash_attn/flash_api.cpp, mha_fwd; its README.
            raise NotImplementedError(
                f"{name}: FlashAttention-2 runs on Ampere (sm80) or newer GPUs, got sm{major}{minor} "
                "(README; csrc/flash_attn/flash_api.cpp mha_fwd: \"FlashAttention only supports Ampere GPUs or newer.\")")
        if request.head_dim > 256:
            # Source: Dao-AILab/flash-attention, csrc/flash_attn/flash_api.cpp, mha_fwd; its README.
            raise NotImplementedError(
                f"{name}: head dim {request.head_dim} > 256 (README: \"All head dimensions up to 256\"; "
                "csrc/flash_attn/flash_api.cpp mha_fwd)")
    return check


def _run_dense(module, q, k, v, request: Request):
    """flash_attn.flash_attn_func (:func:`flashcheck.peers.fa2_call.dense`)."""
    return fa2_call.dense(module.flash_attn_func, q, k, v, **request.plain_call_arguments())


def _run_varlen(module, q, k, v, request: Request):
    """flash_attn.flash_attn_varlen_func (:func:`flashcheck.peers.fa2_call.varlen`): packed
    cases as they are, a dense batch as one packed sequence per batch entry."""
    return fa2_call.varlen(module.flash_attn_varlen_func, q, k, v, **request.plain_call_arguments())


def dense() -> Peer:
    """``fa2``: flash_attn.flash_attn_func."""
    return Peer("fa2", LIBRARY, {"cuda": FEATURES}, _run_dense, check=_check("fa2"),
                known_divergences={"backward_deterministic": NONDETERMINISTIC_BACKWARD})


def varlen() -> Peer:
    """``fa2-varlen``: flash_attn.flash_attn_varlen_func, packed and dense cases."""
    return Peer("fa2-varlen", LIBRARY, {"cuda": FEATURES | {"varlen"}}, _run_varlen, check=_check("fa2-varlen"),
                known_divergences={"backward_deterministic": NONDETERMINISTIC_BACKWARD})
