"""How a standalone script calls the kernel: the lines that define ``attention(q, k, v, **kwargs)
-> (out, lse)`` in it, as flashcheck calls the implementation.

- ``module:attr`` (the user's own implementation) is imported as flashcheck imports it, from the
  folder it was imported from when the script was written where that is not an installed
  package, and called with the protocol's arguments: the script calls exactly what flashcheck
  called, the Triton autotuners it declares pinned as flashcheck pins them (the script carries
  :mod:`flashcheck.autotune_pin`).
- ``flash``, the project kernel, is the protocol function of its own package,
  ``flashcheck.kernels`` (torch and triton only).
- A built-in adapter of another library whose translation lives in a module of plain torch
  (:data:`PLAIN`, e.g. :mod:`flashcheck.peers.fa4_call`) calls the library itself: the script
  carries that module's source, and turns the protocol's arguments into the scale and band the
  adapter hands it, as :class:`flashcheck.peers.common.Peer` does.
- Any other built-in adapter is flashcheck's translation of the protocol into its library's call
  (:mod:`flashcheck.peers`): the script imports that adapter, and only it, and says so (``needs``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass

from flashcheck import autotune_pin, peers, protocol
from flashcheck.peers import (
    fa2_call, fa4_call, flaggems_call, flex_call, sdpa_call, sdpa_public, sdpa_public_call, xformers_call,
)


@dataclass(frozen=True)
class Plain:
    """A built-in adapter's call in plain torch: ``imports`` the library's function,
    ``translation`` the module (torch only) whose source the script carries, and ``call`` the
    expression that calls its functions, in terms of q, k, v, the protocol's arguments and
    ``request`` (``scale``, ``causal``, ``left``, ``right``)."""

    library: str
    imports: str
    translation: object
    call: str


_FA4_VARLEN = ("varlen(flash_attn_varlen_func, q, k, v, cu_seqlens_q=cu_seqlens_q, "
               "cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, **request)")

#: The adapters whose scripts call their library without flashcheck.
PLAIN = {
    "fa4": Plain("flash-attn-4 (flash_attn.cute)", "from flash_attn.cute import flash_attn_func", fa4_call,
                 "dense(flash_attn_func, q, k, v, deterministic=False, **request)"),
    "fa4-deterministic": Plain("flash-attn-4 (flash_attn.cute)", "from flash_attn.cute import flash_attn_func",
                               fa4_call, "dense(flash_attn_func, q, k, v, deterministic=True, **request)"),
    "fa4-varlen": Plain("flash-attn-4 (flash_attn.cute)", "from flash_attn.cute import flash_attn_varlen_func",
                        fa4_call, _FA4_VARLEN),
}

#: FlashAttention-2 (flashcheck.peers.fa2).
PLAIN.update({
    "fa2": Plain("flash-attn (flash_attn)", "from flash_attn import flash_attn_func", fa2_call,
                 "dense(flash_attn_func, q, k, v, **request)"),
    "fa2-varlen": Plain("flash-attn (flash_attn)", "from flash_attn import flash_attn_varlen_func", fa2_call,
                        "varlen(flash_attn_varlen_func, q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, "
                        "max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, **request)"),
})

#: FlagGems (flashcheck.peers.flaggems).
PLAIN.update({
    "flaggems-sdpa": Plain("flag-gems (flag_gems.ops)", "from flag_gems.ops import scaled_dot_product_attention",
                           flaggems_call,
                           "sdpa(scaled_dot_product_attention, q, k, v, attn_mask=attn_mask, **request)"),
    "flaggems-flash": Plain("flag-gems (flag_gems.ops)", "from flag_gems.ops import flash_attention_forward",
                            flaggems_call, "flash(flash_attention_forward, q, k, v, **request)"),
    "flaggems-varlen": Plain("flag-gems (flag_gems.ops)", "from flag_gems.ops import flash_attn_varlen_func",
                             flaggems_call,
                             "varlen(flash_attn_varlen_func, q, k, v, cu_seqlens_q=cu_seqlens_q, "
                             "cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, "
                             "**request)"),
})

#: xformers' memory_efficient_attention (flashcheck.peers.xformers).
PLAIN["xformers"] = Plain("xformers (xformers.ops)", "from xformers.ops import fmha, memory_efficient_attention",
                          xformers_call,
                          "memory_efficient(memory_efficient_attention, fmha.attn_bias, q, k, v, attn_mask=attn_mask, "
                          "**request)")

#: torch's public SDPA with one backend forced (flashcheck.peers.sdpa_public), by adapter name.
PLAIN.update({
    f"sdpa-public-{suffix}": Plain(
        "torch's scaled_dot_product_attention", "", sdpa_public_call,
        f"run_backend({backend!r}, *arguments(q, k, v, causal=request['causal'], left=request['left'], "
        f"right=request['right'], attn_mask=attn_mask), scale=request['scale'])")
    for suffix, (backend, *_) in sdpa_public.BACKENDS.items()
})

#: torch's private fused operators and the math backend (flashcheck.peers.sdpa): flash and cuDNN
#: are called with causal only where Nq == Nk (the adapters decline the rest before calling).
_BAND = "left=request['left'], right=request['right'], attn_mask=attn_mask"
PLAIN.update({
    "sdpa-math": Plain("torch's scaled_dot_product_attention (math backend)", "", sdpa_call,
                       f"run_math(q, k, v, scale=request['scale'], {_BAND}, cu_seqlens_q=cu_seqlens_q, "
                       "cu_seqlens_k=cu_seqlens_k)"),
    "sdpa-flash": Plain("torch's aten._scaled_dot_product_flash_attention", "", sdpa_call,
                        "run_flash(q, k, v, scale=request['scale'], causal=request['causal'])"),
    "sdpa-cudnn": Plain("torch's aten._scaled_dot_product_cudnn_attention", "", sdpa_call,
                        "run_cudnn(q, k, v, scale=request['scale'], causal=request['causal'])"),
    "sdpa-efficient": Plain("torch's aten._scaled_dot_product_efficient_attention", "", sdpa_call,
                            f"run_efficient(q, k, v, scale=request['scale'], causal=request['causal'], {_BAND})"),
})

#: FlexAttention (flashcheck.peers.flex): compiled on CUDA, eager on the CPU, as the adapter runs it.
PLAIN["flex"] = Plain("torch's FlexAttention (torch.nn.attention.flex_attention)", "", flex_call,
                      f"run_flex(q, k, v, scale=request['scale'], {_BAND}, cu_seqlens_q=cu_seqlens_q, "
                      "cu_seqlens_k=cu_seqlens_k)")

#: How a script turns the protocol's arguments into what an adapter hands its translation, as
#: flashcheck.peers.common.Peer.request does: the scale in effect and the band.
_PROTOCOL = '''

def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None, cu_seqlens_q=None,
              cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None):
    """The protocol's call, translated as flashcheck's adapter {name!r} translates it."""
    left, right = window
    if causal:
        right = 0  # causal is the band (left, 0), aligned bottom-right
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else float(softmax_scale)
    request = dict(scale=scale, causal=bool(causal), left=left, right=right)
    return {call}
'''


#: A plain-call module's import of another plain-call module (torch only, or
#: :mod:`flashcheck.autotune_pin`, torch and triton), whose source a script carries before it instead.
_PLAIN_IMPORT = re.compile(r"^from (flashcheck\.peers\.\w+|flashcheck\.autotune_pin) import .*$", re.MULTILINE)


def _carried_source(translation) -> tuple[list[str], str]:
    """The source of the plain-call module ``translation`` without its imports of other
    plain-call modules, and before it the sources of those modules, and of the ones they
    import in turn, each once, before its first user, without such imports and commented with
    its name: so that the script imports nothing of flashcheck."""
    carried, seen = [], set()

    def carry(module_name: str) -> None:
        if module_name in seen:
            return
        seen.add(module_name)
        source = inspect.getsource(importlib.import_module(module_name))
        for dependency in _PLAIN_IMPORT.findall(source):
            carry(dependency)
        carried.extend([f"# {module_name}, which the translation below uses.",
                        _PLAIN_IMPORT.sub("", source).rstrip(), ""])

    source = inspect.getsource(translation)
    for dependency in _PLAIN_IMPORT.findall(source):
        carry(dependency)
    return carried, _PLAIN_IMPORT.sub("", source).rstrip()


@dataclass(frozen=True)
class Call:
    """The lines of a script that define ``attention``, and what they need besides torch."""

    source: str
    needs: str


def call_section(impl_name: str) -> Call:
    """The :class:`Call` of the implementation ``impl_name`` (a built-in name or ``module:attr``)."""
    if ":" in impl_name:
        module_name, _, attr = impl_name.partition(":")
        root = peers.import_root(module_name)
        lines = ["import importlib", "import sys", ""]
        if root is not None:
            lines += [f"# Where {module_name} was imported from when this script was written.",
                      f"sys.path.insert(0, {root!r})"]
        lines += [
            "",
            "",
            "def _load():",
            f"    kernel = importlib.import_module({module_name!r})",
            f"    for part in {attr!r}.split('.'):",
            "        kernel = getattr(kernel, part)",
            "    return kernel",
            "",
            "",
            "attention = _load()",
        ]
        if protocol.autotuners_of(peers.resolve(impl_name)):
            lines += [
                "",
                "# flashcheck.autotune_pin: the Triton autotuners the implementation declares",
                "# (flashcheck_autotuners) run pinned, each variant the configuration flashcheck ran.",
                _PLAIN_IMPORT.sub("", inspect.getsource(autotune_pin)).rstrip(),
                "",
                "",
                "for _declared in attention.flashcheck_autotuners:",
                "    pin(_declared)",
            ]
        return Call("\n".join(lines), f"{module_name} (the implementation)")
    if impl_name == "flash":
        return Call("import sys\n\nfrom flashcheck.kernels import flash_attention as attention  # the project kernel",
                    "the project kernel (flashcheck.kernels: torch and triton)")
    if impl_name not in peers.REGISTRY and impl_name not in peers.PEERS:
        raise ValueError(f"--impl: unknown implementation {impl_name!r}")
    if impl_name in PLAIN:
        plain = PLAIN[impl_name]
        carried, translation = _carried_source(plain.translation)
        source = "\n".join([
            "import math",
            "import sys",
            "",
            *([plain.imports, ""] if plain.imports else []),
            *carried,
            f"# flashcheck's translation of the protocol into this library's call ({plain.translation.__name__}).",
            translation,
            _PROTOCOL.format(name=impl_name, call=plain.call).rstrip(),
        ])
        return Call(source, plain.library)
    return Call(
        "import sys\n\nfrom flashcheck import peers\n\n"
        f"# flashcheck's adapter {impl_name!r} translates the protocol into its library's call.\n"
        f"attention = peers.resolve({impl_name!r})",
        f"flashcheck's adapter {impl_name} and its library",
    )
