"""What every peer adapter shares: the library it needs, the validated request, the adapter.

A peer adapter is a protocol implementation (docs/protocol.md) wrapping another library's
attention kernel. :class:`Peer` does the part that is the same for every library:

* it validates the call (shapes, dtypes, the window, the mask, the packed arguments) and
  raises ``ValueError``/``TypeError`` for invalid input, as the protocol asks;
* it declines, with ``NotImplementedError`` naming the argument, whatever lies outside the
  features the adapter declares for the device kind of q (a dtype, causal, a window, a
  mask, GQA, gradients, packed input), and then whatever the library documents it does
  not support (the adapter's ``check``, run before the library is imported or called);
* it imports the library at call time (:meth:`Library.load`), never when flashcheck or the
  adapter module is imported, and hands the validated :class:`Request` to the adapter's
  ``run``, which translates conventions (layout, scale, window encoding, lse units and
  shape) and nothing else: a result is never repaired.

Every ``raise NotImplementedError`` of an adapter is a statement in flashcheck/peers/, so
that flashcheck's verdict counts it as the implementation's deliberate decline
(:func:`flashcheck.engine.attribution.deliberate_decline`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import math
import os
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import torch

from flashcheck.cases import masks, packing
from flashcheck.divergences import as_known_divergence, combined, KnownDivergence
from flashcheck.protocol import ALL_FEATURES, DTYPE_NAMES

VARLEN_ARGUMENTS = packing.VARLEN_ARGUMENTS
HALF = frozenset({"float16", "bfloat16"})


class LibraryMissing(ImportError, ValueError):
    """A peer's library is not installed, or cannot be imported. One line that names the
    pip command installing it.

    Both an ImportError (the speed benchmark reports such a provider as unavailable) and a
    ValueError (``flashcheck fuzz``/``check`` print it and exit 2; the pytest plugin
    reports it as a usage error)."""


@dataclass(frozen=True)
class Library:
    """The library an adapter calls: the module imported at call time, the pip
    distributions that provide it, and flashcheck's extra that installs it.

    ``environment``: ``(variable, value)`` pairs set before the module is first imported,
    where the user has not set the variable: switches a library reads once at import, such
    as its persistent compile cache, which lets a run's worker processes (fuzz workers,
    pytest-xdist workers) and later runs load a variant one of them compiled instead of
    compiling it again."""

    module: str
    distributions: tuple[str, ...]
    extra: str | None = None
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def install(self) -> str:
        """The pip command that installs the library with flashcheck."""
        return f"pip install 'flashcheck[{self.extra}]'" if self.extra else f"pip install {self.distributions[0]}"

    def version(self) -> str | None:
        """The installed version (from the distribution's metadata, without importing the
        library), the module's ``__version__`` if it is already imported without
        metadata (a test's fake), or None when it is not installed."""
        for distribution in self.distributions:
            try:
                return importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                continue
        module = sys.modules.get(self.module)
        if module is not None:
            return str(getattr(module, "__version__", "unknown"))
        return None

    def require(self, adapter: str) -> None:
        """Raise :class:`LibraryMissing` unless the library is installed (imports nothing)."""
        if self.version() is None:
            raise LibraryMissing(
                f"{adapter} needs {self.distributions[0]} (module {self.module}), which is not installed: "
                f"{self.install}"
            )

    def load(self):
        """The library's module, imported now (after :attr:`environment` is set);
        :class:`LibraryMissing` when it cannot be."""
        for variable, value in self.environment:
            os.environ.setdefault(variable, value)
        try:
            return importlib.import_module(self.module)
        except ImportError as error:
            first = str(error).strip().splitlines()
            raise LibraryMissing(f"cannot import {self.module}: {type(error).__name__}"
                                 f"{': ' + first[0] if first else ''} ({self.install})") from error


#: torch itself, whose SDPA backends and FlexAttention come with it.
TORCH = Library("torch", ("torch",))


@dataclass(frozen=True)
class Packed:
    """The packed arguments of a varlen call, validated, with the per-sequence lengths."""

    cu_seqlens_q: torch.Tensor
    cu_seqlens_k: torch.Tensor
    max_seqlen_q: int
    max_seqlen_k: int
    lengths_q: tuple[int, ...]
    lengths_k: tuple[int, ...]


@dataclass(frozen=True)
class Request:
    """A validated call. Dense: ``batch``, ``nq``, ``nk`` are B, Nq, Nk. Packed
    (``packed`` set): ``batch`` is the number of sequences and ``nq``, ``nk`` the token
    counts Tq, Tk. ``left``/``right`` are the band that ``causal`` and ``window`` give
    together (:func:`flashcheck.cases.masks.effective_window`, -1 unbounded); ``mask`` the
    boolean attn_mask viewed as 4-D, or None; ``scale`` the softmax scale, never None;
    ``grad`` whether autograd will differentiate the call."""

    batch: int
    nq: int
    nk: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype: torch.dtype
    device: torch.device
    scale: float
    causal: bool
    left: int
    right: int
    mask: torch.Tensor | None = None
    packed: Packed | None = None
    grad: bool = False

    @property
    def banded(self) -> bool:
        return self.left != masks.UNBOUNDED or self.right != masks.UNBOUNDED

    @property
    def gqa(self) -> bool:
        return self.heads != self.kv_heads

    def plain_call_arguments(self) -> dict:
        """What the plain-call modules (:mod:`flashcheck.peers.fa4_call`,
        :mod:`~flashcheck.peers.flaggems_call`) take besides the tensors: the scale and the band,
        as a standalone script builds them (:mod:`flashcheck.repro.calls`), and a packed call's
        offsets and longest lengths."""
        band = dict(scale=self.scale, causal=self.causal, left=self.left, right=self.right)
        if self.packed is None:
            return band
        return dict(band, cu_seqlens_q=self.packed.cu_seqlens_q, cu_seqlens_k=self.packed.cu_seqlens_k,
                    max_seqlen_q=self.packed.max_seqlen_q, max_seqlen_k=self.packed.max_seqlen_k)


#: The compute capability that GPU-dependent declarations read as, where :func:`reading_as_gpu`
#: pins one; None: the GPU found here.
_READ_AS: list[tuple[int, int]] = []


@contextlib.contextmanager
def reading_as_gpu(capability: tuple[int, int]):
    """Read the adapters' GPU-dependent declarations as on a GPU of compute ``capability``, not
    the one found here (or none): for ``flashcheck triage`` of a result from another machine."""
    _READ_AS.append(tuple(capability))
    try:
        yield
    finally:
        _READ_AS.pop()


def gpu_capability_read(query: Callable[[], tuple[int, int]]) -> tuple[int, int] | None:
    """The compute capability a GPU-dependent declaration reads: the one :func:`reading_as_gpu`
    pins, else ``query()`` where torch sees a GPU, else None."""
    if _READ_AS:
        return _READ_AS[-1]
    return tuple(query()) if torch.cuda.is_available() else None


def dtype_name(dtype: torch.dtype) -> str:
    """The feature name of a torch dtype: ``torch.bfloat16`` -> ``"bfloat16"``."""
    return str(dtype).removeprefix("torch.")


def check_features(declared) -> frozenset:
    """``declared`` as a frozenset, every name one of the protocol's."""
    declared = frozenset(declared)
    unknown = declared - ALL_FEATURES - DTYPE_NAMES
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}")
    return declared


def gradient_properties() -> tuple[str, ...]:
    """The properties that differentiate through an implementation that declares
    ``backward``: those that require it, and those that use it where it is declared (the
    packed ones comparing gradients too, the memory one calling the backward)."""
    from flashcheck.properties import PROPERTIES  # at call time, as below

    return tuple(name for name, prop in PROPERTIES.items() if prop.exercises("backward"))


def declared_on(names: Iterable[str], divergence: KnownDivergence,
                known: Mapping[str, KnownDivergence | str] | None = None) -> dict[str, KnownDivergence | str]:
    """``known`` (property name -> divergence) with ``divergence`` declared on each property of
    ``names`` too, combined with a property's own (:func:`flashcheck.divergences.combined`)."""
    spread = dict(known or {})
    for name in names:
        own = spread.get(name)
        spread[name] = divergence if own is None else combined(as_known_divergence(own), divergence)
    return spread


def on_every_property(known: Mapping[str, KnownDivergence],
                      every_property: KnownDivergence | None) -> dict[str, KnownDivergence]:
    """``known`` (property name -> divergence) with ``every_property``, when given, declared on
    every registered property too (:func:`declared_on`): for a finding that shows in whatever
    property meets its cases, such as NaN outputs for every negative scale."""
    if every_property is None:
        return dict(known)
    from flashcheck.properties import PROPERTIES  # at call time: the properties import the peers' layers below

    return declared_on(PROPERTIES, every_property, known)


class Peer:
    """A protocol implementation wrapping one library's attention function.

    ``features`` maps each device kind the kernel runs on to what it supports there
    (``flashcheck_features_by_device``; ``flashcheck_features`` is their union).
    ``check(q, request)`` raises NotImplementedError for what the library documents it does
    not support, before the library is imported; ``run(module, q, k, v, request)`` calls
    the library (``module``, imported by :meth:`Library.load`) and returns ``(out, lse)``
    in the protocol's layout and units (lse None where the adapter does not declare it).
    ``not_applicable``: the properties whose every case the library's documented contract
    excludes, with the reason (``flashcheck_not_applicable``, docs/protocol.md).
    ``case_domain``: by device kind, the values of a case the library documents it runs
    (``flashcheck_case_domain_by_device``, :mod:`flashcheck.cases.domain`), or a function giving
    that mapping, for a contract that depends on the GPU found at run time.
    ``compile_key``: the case attributes that select one of the library's compiled variants
    (``flashcheck_compile_key``, :func:`flashcheck.protocol.compile_key_of`); None: Triton's
    specialisation; empty: nothing is compiled per case.
    ``packed_as_dense``: the library takes dense input only, and a packed call (``varlen``
    declared) runs as a dense batch of one under the document mask
    (:func:`flashcheck.cases.packing.as_dense`; ``mask`` must be declared too), its out and lse
    returned packed; ``run`` then sees dense requests only.
    """

    def __init__(self, name: str, library: Library, features: Mapping[str, Iterable[str]], run: Callable,
                 *, check: Callable | None = None, doc: str = "",
                 known_divergences: Mapping[str, str | KnownDivergence] | None = None,
                 every_property: KnownDivergence | None = None,
                 not_applicable: Mapping[str, str] | None = None,
                 case_domain: Mapping[str, Mapping] | Callable[[], Mapping[str, Mapping]] | None = None,
                 compile_key: tuple[str, ...] | None = None, packed_as_dense: bool = False):
        self.name = name
        self._packed_as_dense = packed_as_dense
        self.library = library
        self.flashcheck_features_by_device = {kind: check_features(f) for kind, f in features.items()}
        self._known = {name: as_known_divergence(value) for name, value in (known_divergences or {}).items()}
        self._every_property = every_property
        self.flashcheck_not_applicable = dict(not_applicable or {})
        self._run = run
        self._check = check
        self._case_domain = case_domain
        self.flashcheck_compile_key = compile_key
        self.__doc__ = doc or run.__doc__

    @property
    def flashcheck_known_divergences(self) -> dict[str, KnownDivergence]:
        """The declared known divergences (:func:`on_every_property`)."""
        return on_every_property(self._known, self._every_property)

    @property
    def flashcheck_case_domain_by_device(self) -> Mapping[str, Mapping] | None:
        """The declared case domain by device kind (see the class docstring)."""
        return self._case_domain() if callable(self._case_domain) else self._case_domain

    @property
    def flashcheck_features(self) -> frozenset:
        return frozenset().union(*self.flashcheck_features_by_device.values())

    @property
    def device_kinds(self) -> frozenset:
        return frozenset(self.flashcheck_features_by_device)

    def __repr__(self) -> str:
        return f"<flashcheck peer {self.name!r} ({self.library.module}) on {sorted(self.device_kinds)}>"

    def flashcheck_prepare(self) -> None:
        """Import the library now (:func:`flashcheck.protocol.prepare`): :class:`LibraryMissing`
        when it cannot be, e.g. a package it needs is missing."""
        self.library.load()

    def __call__(self, q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None,
                 attn_mask=None, cu_seqlens_q=None, cu_seqlens_k=None,
                 max_seqlen_q=None, max_seqlen_k=None):
        request = self.request(q, k, v, causal=causal, window=window, softmax_scale=softmax_scale,
                               attn_mask=attn_mask, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                               max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)
        if request.packed is not None and self._packed_as_dense:
            kwargs = dict(causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask,
                          cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
                          max_seqlen_k=max_seqlen_k)
            q4, k4, v4, dense, _ = packing.as_dense(q, k, v, kwargs)  # builds the document mask
            out, lse = self(q4, k4, v4, **dense)
            return out[0], None if lse is None else lse[0]
        if self._check is not None:
            self._check(q, request)
        return self._run(self.library.load(), q, k, v, request)

    def request(self, q, k, v, *, causal, window, softmax_scale, attn_mask,
                cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> Request:
        """Validate the call (ValueError/TypeError for invalid input) and decline what
        the declared features exclude (NotImplementedError naming the argument)."""
        for name, t in (("q", q), ("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}: expected a tensor, got {type(t).__name__}")
        kind = q.device.type
        if kind not in self.device_kinds:
            raise NotImplementedError(f"{self.name} runs on {', '.join(sorted(self.device_kinds))} only, "
                                      f"got q on {q.device}")
        features = self.flashcheck_features_by_device[kind]
        varlen = dict(cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                      max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)
        given = [name for name, value in varlen.items() if value is not None]
        if given and len(given) != len(varlen):
            raise ValueError(f"packed input needs all of {', '.join(VARLEN_ARGUMENTS)}; got only {', '.join(given)}")
        packed = None
        if given:
            self._refuse(features, "varlen", "cu_seqlens_q/cu_seqlens_k (packed variable-length input)")
            if attn_mask is not None:
                raise ValueError("attn_mask: the protocol's attn_mask is dense only; not with cu_seqlens_q/cu_seqlens_k")
            offsets = packing.check_varlen_arguments(q, k, v, **varlen)
            lengths_q, lengths_k = (tuple(b - a for a, b in zip(o, o[1:])) for o in (offsets.offsets_q, offsets.offsets_k))
            packed = Packed(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, lengths_q, lengths_k)
            batch, nq, heads, head_dim = len(lengths_q), q.shape[0], q.shape[1], q.shape[2]
            nk, kv_heads = k.shape[0], k.shape[1]
            if k.shape != v.shape or k.shape[2] != head_dim:
                raise ValueError(f"incompatible q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
        else:
            if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
                raise ValueError("dense layout needs q (B, Nq, H, D) and k, v (B, Nk, Hkv, D); got shapes "
                                 f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
            if k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
                raise ValueError(f"incompatible q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
            batch, nq, heads, head_dim = q.shape
            nk, kv_heads = k.shape[1], k.shape[2]
        if kv_heads == 0 or heads % kv_heads:
            raise ValueError(f"H={heads} must be a multiple of Hkv={kv_heads}")
        if not (q.dtype == k.dtype == v.dtype):
            raise ValueError(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
        if not (q.device == k.device == v.device):
            raise ValueError(f"q, k, v devices differ: {q.device}, {k.device}, {v.device}")
        left, right = masks.effective_window(bool(causal), window)
        if dtype_name(q.dtype) not in features:
            raise NotImplementedError(f"{self.name} does not support q.dtype={dtype_name(q.dtype)} on {kind}")
        if causal:
            self._refuse(features, "causal", "causal=True")
        if left != masks.UNBOUNDED or (right != masks.UNBOUNDED and not causal):
            self._refuse(features, "window", f"window=({left}, {right})")
        if attn_mask is not None:
            self._refuse(features, "mask", "attn_mask")
            attn_mask = masks.check_attn_mask(attn_mask, batch, heads, nq, nk)
            if attn_mask.device != q.device:
                raise ValueError(f"attn_mask is on {attn_mask.device}, q on {q.device}")
        if heads != kv_heads:
            self._refuse(features, "gqa", f"H={heads} != Hkv={kv_heads} (GQA/MQA)")
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        if grad:
            self._refuse(features, "backward", f"gradients on {kind} (inputs require grad)")
        scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else float(softmax_scale)
        return Request(batch, nq, nk, heads, kv_heads, head_dim, q.dtype, q.device, scale, bool(causal),
                       left, right, attn_mask, packed, grad)

    def _refuse(self, features: frozenset, needed: str, what: str) -> None:
        if needed not in features:
            raise NotImplementedError(f"{self.name} does not support {what} (feature {needed!r} not declared)")


# ---------------------------------------------------------------- shared translations


def allowed(request: Request) -> torch.Tensor | None:
    """The dense request's band AND its mask as one boolean tensor broadcastable to
    ``(B, H, Nq, Nk)`` (True = may attend), or None when every key is allowed."""
    if not request.banded and request.mask is None:
        return None
    rows = torch.arange(request.nq, device=request.device)
    band = masks.band(rows, request.nq, request.nk, request.left, request.right)[None, None]
    return band if request.mask is None else band & request.mask


def bhnd(t: torch.Tensor) -> torch.Tensor:
    """``(B, N, H, D)`` as ``(B, H, N, D)`` and back (a view): torch's SDPA layout."""
    return t.transpose(1, 2)


def last_dim_contiguous(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when its last dimension has stride 1, else a contiguous copy: for
    libraries that document that requirement of their inputs."""
    return t if t.stride(-1) == 1 or t.shape[-1] <= 1 else t.contiguous()

