"""Calling an implementation through the protocol and checking what it returns.

An implementation is ``attention(q, k, v, *, causal, window, softmax_scale, attn_mask,
cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> (out, lse)`` (see DESIGN.md).
It may carry ``flashcheck_features``, a set naming what it supports.
"""

from __future__ import annotations

import os

import torch

from flashcheck.compare import PropertyFailure

#: The protocol's features, plus two extensions: "out" (accepts preallocated ``out=`` and
#: ``lse_out=`` tensors and writes them in place) and "tf32" (multiplies float32 operands as
#: TF32, which the tolerance model then allows for).
ALL_FEATURES = frozenset({"causal", "window", "gqa", "varlen", "mask", "backward", "lse", "out", "tf32"})
DTYPE_NAMES = ("float16", "bfloat16", "float32")


def features_of(impl) -> frozenset:
    """The features ``impl`` declares; without a declaration, dense attention with lse in
    every dtype (the protocol's core), and nothing optional beyond it."""
    declared = getattr(impl, "flashcheck_features", None)
    if declared is None:
        return frozenset({"causal", "window", "gqa", "lse", *DTYPE_NAMES})
    declared = frozenset(declared)
    if not declared & set(DTYPE_NAMES):
        declared |= set(DTYPE_NAMES)
    return declared


def default_device() -> str:
    """"cuda" when a GPU is usable by Triton here, else "cpu" (the interpreter)."""
    if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def call(impl, inputs, case, **extra):
    """Call ``impl`` on ``inputs`` with ``case``'s arguments; check the returned shapes."""
    q, k, v = inputs
    result = impl(q, k, v, **case.attention_kwargs(), **extra)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise PropertyFailure(f"protocol: expected (out, lse) from the implementation, got {type(result).__name__}")
    out, lse = result
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise PropertyFailure(
            f"protocol: out must be a tensor of shape {tuple(q.shape)} and dtype {q.dtype}, got "
            f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}"
            f"{'' if not isinstance(out, torch.Tensor) else ' ' + str(out.dtype)}"
        )
    if lse is not None:
        lse_shape = (q.shape[0], q.shape[2], q.shape[1])
        if not isinstance(lse, torch.Tensor) or tuple(lse.shape) != lse_shape or lse.dtype != torch.float32:
            raise PropertyFailure(
                f"protocol: lse must be a float32 tensor of shape {lse_shape}, got "
                f"{tuple(lse.shape) if isinstance(lse, torch.Tensor) else type(lse).__name__}"
            )
    return out, lse
