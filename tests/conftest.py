"""Shared pytest configuration for the flashcheck test suite.

flashcheck's pytest plugin (:mod:`flashcheck.pytest_plugin`, installed through its entry
point) does the process-wide setup before this file is imported: TRITON_INTERPRET=1 without
CUDA, GPU pinning of xdist workers, flashcheck's hypothesis profiles, the gpu and slow markers.
"""
from __future__ import annotations

import pytest
import torch


@pytest.fixture
def device() -> str:
    """The device the kernels run on: "cuda" when available, else "cpu" (interpreter)."""
    return "cuda" if torch.cuda.is_available() else "cpu"
