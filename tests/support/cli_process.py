"""Run the ``flashcheck`` command line from a test, in this process when it can be.

``--device cpu`` selects Triton's interpreter by setting ``TRITON_INTERPRET=1``, which
Triton reads only when kernels are defined. In a test process that runs GPU kernels (the GPU
CI) that can work neither way: kernels already defined stay compiled, and kernels defined
later would be interpreted, breaking the GPU tests that follow in the same process. So
unless this process already runs under the interpreter (the CPU runs, where flashcheck's
pytest plugin sets it), the command runs in a fresh Python process, its output copied to
this one's stdout and stderr (where ``capsys`` sees it).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from flashcheck import cli

REPO = Path(__file__).resolve().parents[2]

#: For tests that run Triton kernels under the interpreter in a fresh process: Triton 3.6's
#: interpreter converts one-element arrays with int(), which numpy 2.4 rejects. The CPU CI pins
#: numpy below 2.4 (ci/constraints-cpu.txt); a GPU machine brings its own numpy.
INTERPRETER_NUMPY_BROKEN = tuple(int(part) for part in numpy.__version__.split(".")[:2]) >= (2, 4)
INTERPRETER_NUMPY_REASON = (f"Triton's interpreter fails under numpy {numpy.__version__} (int() of a one-element "
                            "array), and --device cpu refuses to start there; the CPU CI, which pins numpy 2.3, "
                            "runs this test")
needs_interpreter_numpy = pytest.mark.skipif(INTERPRETER_NUMPY_BROKEN, reason=INTERPRETER_NUMPY_REASON)


def flashcheck(argv: list[str], *, timeout: float = 600) -> int:
    """``flashcheck ARGV``'s exit status; its output goes to this process's stdout/stderr.
    A ``--device cpu`` command skips the test where numpy breaks Triton's interpreter (the
    command would stop at its interpreter check, see :mod:`flashcheck.cli.interpreter_check`)."""
    if os.environ.get("TRITON_INTERPRET") == "1" or "cpu" not in argv:
        return cli.main(argv)
    if INTERPRETER_NUMPY_BROKEN:
        pytest.skip(INTERPRETER_NUMPY_REASON)
    run = subprocess.run([sys.executable, "-m", "flashcheck.cli", *argv], capture_output=True, text=True,
                         timeout=timeout, cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1"})
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return run.returncode
