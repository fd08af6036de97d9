"""Shared pytest configuration for the flashcheck test suite."""
from __future__ import annotations

import os
import sys

import pytest
import torch

# -- Triton interpreter -------------------------------------------------------------------
# Triton reads TRITON_INTERPRET when a kernel is defined, and flashcheck.kernels.config reads
# it at import, so it must be set here, before any test module imports triton. Without a
# CUDA device the Triton kernels run in the CPU interpreter.
CUDA = torch.cuda.is_available()
if not CUDA:
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise pytest.UsageError(
            "triton was imported before tests/conftest.py could set TRITON_INTERPRET=1; "
            "export TRITON_INTERPRET=1 before running pytest on a machine without CUDA"
        )
    os.environ["TRITON_INTERPRET"] = "1"


# -- Hypothesis profiles ------------------------------------------------------------------
# flashcheck's "ci", "dev", "gpu", "fuzz" and "smoke" profiles; "ci" replaces hypothesis's own profile
# of that name, which hypothesis activates by itself when the CI variable is set.
# FLASHCHECK_HYPOTHESIS_PROFILE picks one explicitly (the GPU run uses "gpu").
from flashcheck import profiles  # noqa: E402  (after TRITON_INTERPRET is settled)

profiles.load_hypothesis_profile()


# -- Fixtures -----------------------------------------------------------------------------
@pytest.fixture
def device() -> str:
    """The device the kernels run on: "cuda" when available, else "cpu" (interpreter)."""
    return "cuda" if CUDA else "cpu"
