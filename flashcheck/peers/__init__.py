"""Implementations by name: the project kernel, torch's attention and other libraries'
kernels (docs/peers.md).

:data:`REGISTRY` maps every built-in name to a zero-argument factory, and :func:`resolve`
turns a name or ``"module:attr"`` into an implementation. Importing this package imports
neither triton nor the project kernel nor a peer's library, and compiles nothing: a factory
imports what it needs when it is called.

``flash`` is the project's Triton kernel (:mod:`flashcheck.kernels`). torch's own kernels:
:mod:`~flashcheck.peers.sdpa` (``sdpa-math``, and SDPA's fused backends through their private
operators: ``sdpa-flash``, ``sdpa-efficient``, ``sdpa-cudnn``) and :mod:`~flashcheck.peers.flex`
(``flex``).

Other libraries, one module each: :mod:`~flashcheck.peers.fa4` (FlashAttention-4,
``flash_attn.cute``), :mod:`~flashcheck.peers.fa2` (FlashAttention-2, ``flash_attn``),
:mod:`~flashcheck.peers.flaggems` (FlagGems, ``flag_gems``), :mod:`~flashcheck.peers.xformers`
(``xformers.ops``) and :mod:`~flashcheck.peers.sdpa_public` (torch's public
``scaled_dot_product_attention`` with each backend forced). Every adapter, torch's included, is a
:class:`~flashcheck.peers.common.Peer`: it declares its
features from the library's documented contract and source, declines what the library
documents it does not support, and translates conventions only.

:data:`PEERS` names the factory of each of these, which checks the library is installed
(from its distribution's metadata) and builds the adapter, which imports the library at its
first call. A missing library is a
:class:`~flashcheck.peers.common.LibraryMissing` naming its pip extra.
"""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path
from typing import Callable

from flashcheck.peers import flex, sdpa

#: Adapter name -> (module of flashcheck.peers, builder function in it).
PEERS: dict[str, tuple[str, str]] = {
    "fa4": ("fa4", "dense"),
    "fa4-varlen": ("fa4", "varlen"),
    "fa4-deterministic": ("fa4", "deterministic"),
    "fa2": ("fa2", "dense"),
    "fa2-varlen": ("fa2", "varlen"),
    "flaggems-sdpa": ("flaggems", "sdpa"),
    "flaggems-flash": ("flaggems", "flash"),
    "flaggems-varlen": ("flaggems", "varlen"),
    "xformers": ("xformers", "memory_efficient"),
    "sdpa-public-math": ("sdpa_public", "math"),
    "sdpa-public-flash": ("sdpa_public", "flash"),
    "sdpa-public-efficient": ("sdpa_public", "efficient"),
    "sdpa-public-cudnn": ("sdpa_public", "cudnn"),
}


def describe(name: str):
    """The adapter called ``name``, built whether or not its library is installed (for
    ``flashcheck list`` and the tests); calling it without the library raises
    :class:`~flashcheck.peers.common.LibraryMissing`."""
    module, builder = PEERS[name]
    return getattr(importlib.import_module(f"flashcheck.peers.{module}"), builder)()


def load(name: str):
    """The adapter called ``name``; :class:`~flashcheck.peers.common.LibraryMissing` (one
    line with the pip command) when its library is not installed."""
    adapter = describe(name)
    adapter.library.require(name)
    return adapter


def _flash():
    """The project's own Triton kernel (flashcheck.kernels), imported only when asked for."""
    return importlib.import_module("flashcheck.kernels").flash_attention


REGISTRY: dict[str, Callable[[], Callable]] = {
    "flash": _flash,
    "sdpa-math": sdpa.sdpa_math,
    "sdpa-flash": sdpa.sdpa_flash,
    "sdpa-efficient": sdpa.sdpa_efficient,
    "sdpa-cudnn": sdpa.sdpa_cudnn,
    "flex": flex.flex,
    **{name: functools.partial(load, name) for name in PEERS},
}


def resolve(spec: str) -> Callable:
    """The implementation named by ``spec``: a REGISTRY name or ``"module:attr"``.

    ``attr`` may be dotted (``"pkg.mod:Class.method"``).  Raises ValueError, one line, for
    an unknown name, a module that cannot be imported (whatever it raises at import, any
    BaseException but KeyboardInterrupt, which stays the user's Ctrl-C), a missing attribute
    or a non-callable.
    Errors raised by a registry factory itself (e.g. triton missing for
    ``"flash"``) propagate unchanged.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"implementation spec must be a non-empty string, got {spec!r}")
    if ":" not in spec:
        if spec not in REGISTRY:
            raise ValueError(
                f"unknown implementation {spec!r}; known names: {', '.join(sorted(REGISTRY))} "
                "(or 'module:attr')"
            )
        return REGISTRY[spec]()
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"bad implementation spec {spec!r}: expected 'module:attr'")
    try:
        obj = importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - whatever the module raises at import, it cannot be used
        message = str(error).strip().splitlines()
        raise ValueError(f"cannot import module {module_name!r} of {spec!r}: {type(error).__name__}"
                         f"{': ' + message[0] if message else ''}") from error
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{spec!r}: {getattr(obj, '__name__', obj)!r} has no attribute {part!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{spec!r} names a {type(obj).__name__}, not a callable")
    return obj


def import_root(module_name: str) -> str | None:
    """The sys.path entry a subprocess needs to import ``module_name`` as this process did,
    or None when the module's file does not sit at its dotted path under any directory
    (an installed package with its own package-dir mapping)."""
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    path = Path(getattr(module, "__file__", "") or "").resolve()
    if not path.name:
        return None
    parts = module_name.split(".")
    package = path.name == "__init__.py"
    try:
        root = (path.parent if package else path).parents[len(parts) - 1]
    except IndexError:
        return None
    expected = root.joinpath(*parts, "__init__.py") if package else root.joinpath(*parts[:-1], path.name)
    return str(root) if expected == path else None
