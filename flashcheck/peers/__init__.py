"""Other libraries' attention kernels as flashcheck implementations (docs/peers.md).

One module per library: :mod:`~flashcheck.peers.fa4` (FlashAttention-4, ``flash_attn.cute``),
:mod:`~flashcheck.peers.fa2` (FlashAttention-2, ``flash_attn``),
:mod:`~flashcheck.peers.flaggems` (FlagGems, ``flag_gems``),
:mod:`~flashcheck.peers.xformers` (``xformers.ops``) and
:mod:`~flashcheck.peers.sdpa_public` (torch's public ``scaled_dot_product_attention`` with each
backend forced). Each adapter is a :class:`~flashcheck.peers.common.Peer`: it declares its
features from the library's documented contract and source, declines what the library
documents it does not support, and translates conventions only.

Nothing here imports a library: :data:`REGISTRY` maps each name to a factory that checks the
library is installed (from its distribution's metadata) and builds the adapter, which
imports the library at its first call. A missing library is a
:class:`~flashcheck.peers.common.LibraryMissing` naming its pip extra.
"""

from __future__ import annotations

import functools
import importlib

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


#: The factories that flashcheck.adapters.REGISTRY takes in.
REGISTRY = {name: functools.partial(load, name) for name in PEERS}
