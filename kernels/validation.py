"""Input validation for the public attention function.

Every check runs before any launch and before any output is touched; each error names the
argument and says what was expected. A packed variable-length call costs one device -> host
copy here: the offsets are read to check them.
"""

from __future__ import annotations

import math
import numbers

import torch

from flashcheck.kernels import config

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256


VARLEN_ARGUMENTS = ("cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k")


def check_inputs(q, k, v, *, causal, window, softmax_scale, attn_mask=None, cu_seqlens_q=None,
                 cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, out=None, lse_out=None) -> tuple[int, int]:
    """Validate a dense or packed call; return the band ``(left, right)`` with -1 unbounded.

    A packed call (all four ``cu_seqlens_*``/``max_seqlen_*`` given) reads the offsets to the
    host once (one device -> host copy on a GPU) to check them."""
    varlen = _varlen_given(cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                           max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)
    layouts = {"q": "(Tq, H, D)", "k": "(Tk, Hkv, D)", "v": "(Tk, Hkv, D)"} if varlen else \
        {"q": "(B, Nq, H, D)", "k": "(B, Nk, Hkv, D)", "v": "(B, Nk, Hkv, D)"}
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(tensor).__name__}")
        if tensor.dim() != (3 if varlen else 4):
            call = "a packed variable-length call" if varlen else "a dense call"
            raise ValueError(
                f"{name}: expected {3 if varlen else 4} dimensions {layouts[name]} for {call}, "
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
    # The dense shapes without their batch dim are the packed ones.
    q_shape, k_shape = (q.shape, k.shape) if varlen else (q.shape[1:], k.shape[1:])
    _, heads, head_dim = q_shape
    if not varlen and k.shape[0] != q.shape[0]:
        raise ValueError(f"k: expected batch {q.shape[0]} like q, got shape {tuple(k.shape)}")
    if v.shape != k.shape:
        raise ValueError(f"v: expected shape {tuple(k.shape)} like k, got {tuple(v.shape)}")
    if k_shape[2] != head_dim:
        raise ValueError(f"k: expected head dim {head_dim} like q, got shape {tuple(k.shape)}")
    if not 1 <= head_dim <= MAX_HEAD_DIM:
        raise ValueError(f"q: head dim must be between 1 and {MAX_HEAD_DIM}, got {head_dim}")
    kv_heads = k_shape[1]
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
    if varlen:
        if attn_mask is not None:
            raise ValueError(
                "attn_mask: a boolean mask is supported for dense calls only, not with packed "
                "variable-length sequences (cu_seqlens_*); pass None or express it as causal/window"
            )
        _check_packed(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
        _check_output("out", out, tuple(q.shape), q.dtype, q.device)
        _check_output("lse_out", lse_out, (heads, q.shape[0]), torch.float32, q.device)
    else:
        _check_mask(attn_mask, (q.shape[0], heads, q.shape[1], k.shape[1]), q.device)
        _check_output("out", out, tuple(q.shape), q.dtype, q.device)
        _check_output("lse_out", lse_out, (q.shape[0], heads, q.shape[1]), torch.float32, q.device)
    return band


def _varlen_given(**arguments) -> bool:
    """True when all four packed-sequence arguments are given, False when none is; any other
    combination is an error naming the first missing one."""
    given = [name for name, value in arguments.items() if value is not None]
    if given and len(given) != len(arguments):
        missing = next(name for name, value in arguments.items() if value is None)
        raise ValueError(
            f"{missing}: packed variable-length calls need cu_seqlens_q, cu_seqlens_k, max_seqlen_q "
            f"and max_seqlen_k together; got {', '.join(given)} without {missing}"
        )
    return bool(given)


def _check_packed(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> None:
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(cu, torch.Tensor):
            raise TypeError(f"{name}: expected an int32 torch.Tensor (S+1,), got {type(cu).__name__}")
        if cu.dtype != torch.int32:
            raise TypeError(f"{name}: expected dtype torch.int32, got {cu.dtype}")
        if cu.dim() != 1 or cu.shape[0] == 0:
            raise ValueError(f"{name}: expected shape (S+1,) with S >= 0 sequences, got {tuple(cu.shape)}")
        if cu.device != q.device:
            raise ValueError(f"{name}: expected device {q.device} like q, got {cu.device}")
    if cu_seqlens_k.shape != cu_seqlens_q.shape:
        raise ValueError(
            f"cu_seqlens_k: expected {cu_seqlens_q.shape[0]} offsets like cu_seqlens_q (one sequence "
            f"each side), got {cu_seqlens_k.shape[0]}"
        )
    for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name}: expected a non-negative int, got {value!r}")
    # The one device -> host copy of a packed call.
    offsets = torch.stack((cu_seqlens_q, cu_seqlens_k)).cpu().tolist()
    for name, cu, tokens, max_name, longest in (
        ("cu_seqlens_q", offsets[0], q.shape[0], "max_seqlen_q", max_seqlen_q),
        ("cu_seqlens_k", offsets[1], k.shape[0], "max_seqlen_k", max_seqlen_k),
    ):
        if cu[0] != 0:
            raise ValueError(f"{name}: expected the first offset to be 0, got {cu[0]}")
        lengths = [end - start for start, end in zip(cu, cu[1:])]
        if any(length < 0 for length in lengths):
            at = next(i for i, length in enumerate(lengths) if length < 0)
            raise ValueError(f"{name}: expected non-decreasing offsets, got {cu[at]} then {cu[at + 1]} at {at}")
        if cu[-1] != tokens:
            raise ValueError(
                f"{name}: expected the last offset to equal the number of tokens ({tokens}), got {cu[-1]}"
            )
        if lengths and max(lengths) > longest:
            raise ValueError(
                f"{max_name}: expected at least the longest sequence ({max(lengths)} in {name}), got {longest}"
            )


def _check_mask(mask, shape, device) -> None:
    """A bool tensor on ``device`` broadcastable to ``shape`` = (B, H, Nq, Nk)."""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"attn_mask: expected a bool torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"attn_mask: expected dtype torch.bool (True = attend), got {mask.dtype}")
    if mask.device != device:
        raise ValueError(f"attn_mask: expected device {device} like q, got {mask.device}")
    if mask.dim() > 4:
        raise ValueError(
            f"attn_mask: expected at most 4 dimensions broadcastable to (B, H, Nq, Nk) = {shape}, "
            f"got shape {tuple(mask.shape)}"
        )
    for name, size, target in zip(("B", "H", "Nq", "Nk")[4 - mask.dim():], mask.shape, shape[4 - mask.dim():]):
        if size not in (1, target):
            raise ValueError(
                f"attn_mask: shape {tuple(mask.shape)} is not broadcastable to (B, H, Nq, Nk) = {shape}: "
                f"dim {name} has size {size}, expected 1 or {target}"
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
