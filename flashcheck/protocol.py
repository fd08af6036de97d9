"""Calling an implementation through the protocol and checking what it returns.

An implementation is ``attention(q, k, v, *, causal, window, softmax_scale, attn_mask,
cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> (out, lse)`` (see docs/protocol.md).
It may carry ``flashcheck_features``, a set naming what it supports, and
``flashcheck_known_divergences``, a mapping from property name to the reason the
implementation is known to break it, optionally confined to some cases (see
:func:`known_divergences`).
"""

from __future__ import annotations

import os

import torch

from flashcheck.compare import Violation
from flashcheck.divergences import KnownDivergence, as_known_divergence

#: The protocol's features, plus two extensions: "out" (accepts preallocated ``out=`` and
#: ``lse_out=`` tensors and writes them in place) and "tf32" (multiplies float32 operands as
#: TF32, which the tolerance model then allows for).
ALL_FEATURES = frozenset({"causal", "window", "gqa", "varlen", "mask", "backward", "lse", "out", "tf32"})
PROTOCOL_FEATURES = frozenset({"causal", "window", "gqa", "varlen", "mask", "backward", "lse"})
DTYPE_NAMES = frozenset({"float16", "bfloat16", "float32"})
#: Held against an implementation that declares nothing; see :func:`features_of`.
DEFAULT_FEATURES = frozenset({"causal", "window", "gqa", "mask", "backward", "lse"}) | DTYPE_NAMES


def features_of(impl, device=None) -> frozenset:
    """What ``impl`` supports, as a frozenset of ALL_FEATURES and DTYPE_NAMES.

    * With ``device`` (a torch.device or string, e.g. ``"cuda:0"``) and an impl
      carrying ``flashcheck_features_by_device`` (as the adapters here do): that
      device kind's set, empty where the impl cannot run.
    * Otherwise ``flashcheck_features``.  The protocol lists dtypes only when
      limited, so a declared set naming no dtype gets all of DTYPE_NAMES.
    * A declared name outside ALL_FEATURES and DTYPE_NAMES is a ValueError (see
      :func:`check_declaration`).
    * Without any declaration: DEFAULT_FEATURES, the whole dense protocol
      (causal, window, gqa, mask, lse, backward, every dtype) but not varlen.
      Conservative in a verifier's sense: an undeclared implementation is held
      to everything the dense protocol promises, lse and autograd included, so
      no part of its contract goes silently untested; if it lacks a part, the
      failure says which and its author declares the features.  Varlen is left
      out because it is another layout (packed 3-D tensors) that a dense-only
      implementation would misread rather than reject.
    """
    try:
        by_device = getattr(impl, "flashcheck_features_by_device", None)
        if device is not None and by_device is not None:
            return _checked("flashcheck_features_by_device", by_device.get(torch.device(device).type, frozenset()))
        declared = getattr(impl, "flashcheck_features", None)
        if declared is None:
            return DEFAULT_FEATURES
        declared = _checked("flashcheck_features", declared)
    except ValueError as error:
        raise ValueError(f"{_describe(impl)}: {error}") from None
    return declared if declared & DTYPE_NAMES else declared | DTYPE_NAMES


def check_declaration(impl) -> None:
    """Raise ValueError, one line naming the offending feature (the caller names the
    implementation), unless every feature ``impl`` declares (``flashcheck_features``, each
    set of ``flashcheck_features_by_device``) is one of :data:`ALL_FEATURES` or
    :data:`DTYPE_NAMES`: a misspelt feature would otherwise leave a property silently
    undrawn, or fail deep inside a run."""
    declared = getattr(impl, "flashcheck_features", None)
    if declared is not None:
        _checked("flashcheck_features", declared)
    by_device = getattr(impl, "flashcheck_features_by_device", None)
    if by_device is not None:
        for kind, features in dict(by_device).items():
            _check_device_kind(kind)
            _checked("flashcheck_features_by_device", features)


def _check_device_kind(kind) -> None:
    """ValueError unless ``kind`` is a device kind as torch names it (``torch.device(x).type``):
    a misspelt one ("gpu") would leave the real kind without features, every property but the
    plain dense ones silently off there."""
    try:
        device = torch.device(kind) if isinstance(kind, str) else None
    except RuntimeError:
        device = None
    if device is None or device.type != kind:
        expected = f"'{device.type}'" if device is not None else "a kind such as 'cpu' or 'cuda'"
        raise ValueError(f"flashcheck_features_by_device names {kind!r}, not a device kind torch knows; "
                         f"expected {expected}")


def _checked(attribute: str, declared) -> frozenset:
    """``declared`` as a frozenset of feature names; ValueError for a name the protocol
    does not have (a plain string is a common slip: it would read as its letters)."""
    if isinstance(declared, str):
        raise ValueError(f"{attribute} must be a set of feature names, got the string {declared!r}")
    declared = frozenset(declared)
    unknown = sorted(str(feature) for feature in declared - ALL_FEATURES - DTYPE_NAMES)
    if unknown:
        raise ValueError(f"{attribute} names unknown feature{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; known: {', '.join(sorted(ALL_FEATURES | DTYPE_NAMES))}")
    return declared


def _describe(impl) -> str:
    module, name = getattr(impl, "__module__", None), getattr(impl, "__qualname__", None)
    return f"{module}:{name}" if module and name else repr(impl)


def known_divergences(impl) -> dict[str, KnownDivergence]:
    """Properties ``impl`` is known to break, each as a :class:`KnownDivergence` (empty
    when none): the reason, and the cases it covers.

    A known divergence is a documented finding about a peer (e.g. a backward that
    accumulates dQ with atomics is not bitwise deterministic), not a licence to pass: the
    property still runs; a failure on a case the divergence covers is reported as an
    expected failure with the evidence, a failure on any other case as a failure, and a
    run that never shows a whole-property divergence as a pass worth a warning. Declared
    values are reasons (strings, covering every case) or KnownDivergence objects (see
    :mod:`flashcheck.divergences`).
    """
    declared = getattr(impl, "flashcheck_known_divergences", None) or {}
    return {str(name): as_known_divergence(value) for name, value in dict(declared).items()}


def default_device() -> str:
    """"cuda" when a GPU is usable by Triton here, else "cpu" (the interpreter)."""
    if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def call(impl, inputs, case, **extra):
    """Call ``impl`` on ``inputs`` with ``case``'s arguments (tensors on q's device), any of
    them replaced by ``extra``; check what it returned, raising
    :class:`~flashcheck.compare.Violation` unless it is ``(out, lse)`` with out a tensor of
    q's shape, dtype and device and lse None or a float32 tensor on q's device (packed: out
    ``(Tq, H, D)``, lse ``(H, Tq)``). Every property calls the implementation through here,
    so that what flashcheck goes on to compute with the results is well formed."""
    q, k, v = inputs
    result = impl(q, k, v, **{**case.attention_kwargs(q.device), **extra})
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Violation(f"protocol: expected (out, lse) from the implementation, got {type(result).__name__}")
    out, lse = result
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise Violation(
            f"protocol: out must be a tensor of shape {tuple(q.shape)} and dtype {q.dtype}, got "
            f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}"
            f"{'' if not isinstance(out, torch.Tensor) else ' ' + str(out.dtype)}"
        )
    if out.device != q.device:
        raise Violation(f"protocol: out must be on q's device {q.device}, got a tensor on {out.device}")
    if lse is not None:
        lse_shape = (q.shape[1], q.shape[0]) if q.dim() == 3 else (q.shape[0], q.shape[2], q.shape[1])
        if not isinstance(lse, torch.Tensor) or tuple(lse.shape) != lse_shape or lse.dtype != torch.float32:
            raise Violation(
                f"protocol: lse must be a float32 tensor of shape {lse_shape}, got "
                f"{f'{tuple(lse.shape)} {lse.dtype}' if isinstance(lse, torch.Tensor) else type(lse).__name__}"
            )
        if lse.device != q.device:
            raise Violation(f"protocol: lse must be on q's device {q.device}, got a tensor on {lse.device}")
    return out, lse


def release_cached_memory(device) -> None:
    """Give the CUDA caching allocator's unused blocks back to the driver, after a case.

    Test workers share a GPU (pytest-xdist, ``flashcheck fuzz --workers``), and what one
    worker's allocator keeps cached after a large case, the others cannot allocate: on an
    H100 with 16 workers under the ``gpu`` profile, two cases failed with CUDA out of
    memory (once in a kernel's module load) while the other workers held 1.5 to 7.7 GB
    each, and passed when rerun. A no-op on the CPU and before CUDA is initialised.
    """
    if torch.device(device).type == "cuda" and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
