"""How a standalone script calls the kernel: the lines that define ``attention(q, k, v, **kwargs)
-> (out, lse)`` in it, as flashcheck calls the implementation.

- ``module:attr`` (the user's own implementation) is imported as flashcheck imports it, from the
  folder it was imported from when the script was written where that is not an installed
  package, and called with the protocol's arguments: the script calls exactly what flashcheck
  called.
- ``flash``, the project kernel, is the protocol function of its own package,
  ``flashcheck.kernels`` (torch and triton only).
- A built-in adapter of another library is flashcheck's translation of the protocol into that
  library's call (:mod:`flashcheck.peers`): the script imports that adapter, and only it, and
  says so (``needs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from flashcheck import peers


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
        return Call("\n".join(lines), f"{module_name} (the implementation)")
    if impl_name == "flash":
        return Call("import sys\n\nfrom flashcheck.kernels import flash_attention as attention  # the project kernel",
                    "the project kernel (flashcheck.kernels: torch and triton)")
    if impl_name not in peers.REGISTRY and impl_name not in peers.PEERS:
        raise ValueError(f"--impl: unknown implementation {impl_name!r}")
    return Call(
        "import sys\n\nfrom flashcheck import peers\n\n"
        f"# flashcheck's adapter {impl_name!r} translates the protocol into its library's call.\n"
        f"attention = peers.resolve({impl_name!r})",
        f"flashcheck's adapter {impl_name} and its library",
    )
