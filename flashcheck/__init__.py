"""flashcheck: property-based numerical verification of flash attention kernels.

Importing this package imports neither triton nor the project kernel: implementations are
reached through :mod:`flashcheck.peers` by name. Nor does it import torch: ``Case`` is
imported when first asked for, so that the ``flashcheck`` command handles Ctrl-C from its
first instruction on, before it imports torch (:mod:`flashcheck.engine.interruption`).
"""

__all__ = ["Case"]


def __getattr__(name):
    if name == "Case":
        from flashcheck.cases.case import Case

        return Case
    raise AttributeError(f"module 'flashcheck' has no attribute {name!r}")
