"""Does Triton's CPU interpreter work with the installed numpy? Asked once, before any case runs.

Triton 3.6's interpreter turns one-element arrays into Python ints with ``int()``, which
numpy 2.4 refuses ("only 0-dimensional arrays can be converted to Python scalars"). Every
kernel with a loop bound or branch on a program id then raises inside the interpreter, and
a fuzzer would report a correct kernel as failing. A tiny kernel of that shape, run once,
turns this into a usage error that says what to install instead.

Import this module only with ``TRITON_INTERPRET=1`` already set (it imports triton).
"""

from __future__ import annotations

import functools

import numpy
import torch
import triton
import triton.language as tl


@triton.jit
def _loop_to_program_id(out):
    # A loop bounded by a program-id value: the shape that trips the interpreter.
    for i in range(0, tl.program_id(0) + 1):
        tl.store(out + i, i)


@functools.cache
def problem() -> str | None:
    """None when the interpreter runs the probe kernel; otherwise what failed and the fix."""
    out = torch.zeros(1, dtype=torch.int32)
    try:
        _loop_to_program_id[(1,)](out)
    except Exception as error:  # the interpreter wraps whatever went wrong
        return (f"Triton {triton.__version__}'s interpreter does not run with numpy {numpy.__version__} "
                f"({type(error).__name__}: {str(error)[:160]}); install numpy<2.4, as ci/constraints-cpu.txt does")
    return None
