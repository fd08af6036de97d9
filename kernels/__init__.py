"""The project's Triton flash attention kernel, importable as ``flashcheck.kernels``.

Set ``TRITON_INTERPRET=1`` before importing this package to run it on the CPU.
"""

from flashcheck.kernels.interface import flash_attention

__all__ = ["flash_attention"]
