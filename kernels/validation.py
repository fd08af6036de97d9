"""Input validation for the public attention function.

Every check runs before any launch and before any output is touched; each error names the
argument and says what was expected.
"""

from __future__ import annotations

import math
import numbers

import torch

from flashcheck.kernels import config

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256


def check_inputs(q, k, v, *, causal, window, softmax_scale, out, lse_out) -> tuple[int, int]:
    """Validate a dense call; return the band ``(left, right)`` with -1 unbounded."""
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dim() != 4:
            raise ValueError(
                f"{name}: expected 4 dimensions {'(B, Nq, H, D)' if name == 'q' else '(B, Nk, Hkv, D)'}, "
                f"got shape {tuple(tensor.shape)}"
            )
    if q.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"q: expected dtype float16, bfloat16 or float32, got {q.dtype}")
    for name, tensor in (("k", k), ("v", v)):
        if tensor.dtype != q.dtype:
            raise TypeError(f"{name}: expected dtype {q.dtype} like q, got {tensor.dtype}")
        if tensor.device != q.device:
            raise ValueError(f"{name}: expected device {q.device} like q, got {tensor.device}")
    _check_device(q.device)
    batch, _, heads, head_dim = q.shape
    if k.shape[0] != batch:
        raise ValueError(f"k: expected batch {batch} like q, got shape {tuple(k.shape)}")
    if v.shape != k.shape:
        raise ValueError(f"v: expected shape {tuple(k.shape)} like k, got {tuple(v.shape)}")
    if k.shape[3] != head_dim:
        raise ValueError(f"k: expected head dim {head_dim} like q, got shape {tuple(k.shape)}")
    if not 1 <= head_dim <= MAX_HEAD_DIM:
        raise ValueError(f"q: head dim must be between 1 and {MAX_HEAD_DIM}, got {head_dim}")
    kv_heads = k.shape[2]
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(f"k: the number of query heads ({heads}) must be a multiple of the KV heads ({kv_heads})")
    if not isinstance(causal, bool):
        raise TypeError(f"causal: expected a bool, got {causal!r}")
    if softmax_scale is not None and (
        isinstance(softmax_scale, bool)
        or not isinstance(softmax_scale, numbers.Real)
        or not math.isfinite(softmax_scale)
    ):
        raise ValueError(f"softmax_scale: expected None or a finite real number, got {softmax_scale!r}")
    band = _effective_window(causal, window)
    _check_output("out", out, tuple(q.shape), q.dtype, q.device)
    _check_output("lse_out", lse_out, (batch, heads, q.shape[1]), torch.float32, q.device)
    return band


def reject_unsupported(attn_mask, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k):
    """Raise NotImplementedError for protocol arguments this kernel does not support yet."""
    for name, value in (
        ("attn_mask", attn_mask),
        ("cu_seqlens_q", cu_seqlens_q),
        ("cu_seqlens_k", cu_seqlens_k),
        ("max_seqlen_q", max_seqlen_q),
        ("max_seqlen_k", max_seqlen_k),
    ):
        if value is not None:
            raise NotImplementedError(
                f"{name}: boolean masks and packed variable-length sequences are not supported "
                "by this kernel yet; pass None"
            )


def _check_device(device: torch.device) -> None:
    if device.type == "cuda":
        if config.INTERPRETER:
            raise ValueError(
                "q: CUDA tensors given while TRITON_INTERPRET=1 selects the CPU interpreter; "
                "pass CPU tensors or unset TRITON_INTERPRET before importing triton"
            )
        return
    if device.type == "cpu" and config.INTERPRETER:
        return
    raise ValueError(
        f"q: expected CUDA tensors (or CPU tensors with TRITON_INTERPRET=1 set before triton "
        f"is imported), got device {device}"
    )


def _effective_window(causal: bool, window) -> tuple[int, int]:
    if (
        not isinstance(window, (tuple, list))
        or len(window) != 2
        or not all(isinstance(w, int) and not isinstance(w, bool) for w in window)
    ):
        raise TypeError(f"window: expected a pair of ints (left, right), got {window!r}")
    left, right = window
    if left < -1 or right < -1:
        raise ValueError(f"window: each bound must be -1 (unbounded) or >= 0, got {tuple(window)!r}")
    if causal:
        if right not in (-1, 0):
            raise ValueError(
                f"window: causal=True fixes the right bound to 0, got window={tuple(window)!r}; "
                "pass (left, -1) or (left, 0) with causal, or drop causal"
            )
        right = 0
    return left, right


def _check_output(name, tensor, shape, dtype, device) -> None:
    if tensor is None:
        return
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor or None, got {type(tensor).__name__}")
    if tuple(tensor.shape) != shape or tensor.dtype != dtype or tensor.device != device:
        raise ValueError(
            f"{name}: expected shape {shape}, dtype {dtype}, device {device}; got shape "
            f"{tuple(tensor.shape)}, dtype {tensor.dtype}, device {tensor.device}"
        )
    if any(stride == 0 for size, stride in zip(tensor.shape, tensor.stride()) if size > 1):
        raise ValueError(f"{name}: expected a tensor whose elements do not overlap (a stride is 0)")
