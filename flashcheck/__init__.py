"""flashcheck: property-based numerical verification of flash attention kernels.

Importing this package imports neither triton nor the project kernel: implementations are
reached through :mod:`flashcheck.peers` by name.
"""

from flashcheck.case import Case

__all__ = ["Case"]
