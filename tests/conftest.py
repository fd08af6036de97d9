"""Shared pytest configuration for the flashcheck test suite.

flashcheck's pytest plugin (:mod:`flashcheck.pytest_plugin`, installed through its entry
point) does the process-wide setup before this file is imported: TRITON_INTERPRET=1 without
CUDA, GPU pinning of xdist workers, flashcheck's hypothesis profiles, the gpu and slow markers.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

TESTS = Path(__file__).resolve().parent

#: Test modules of flashcheck's own bookkeeping (drawing cases, the command line's outcomes and
#: files, baselines, reports, campaigns, mutation testing, the pytest plugin's reporting, the
#: layering, the adapters against fakes of their libraries): what they check does not depend on
#: the device their kernels run on, only their cost does (on a GPU, compiling Triton variants
#: for cases whose outcome CPU CI already decides). They are marked ``device_independent``; GPU CI (``ci/gpu.sh``) deselects
#: them (``-m "not device_independent"``) and leaves them to CPU CI, which runs every test. A
#: test among them marked ``gpu`` (a crash on the device, workers spread over GPUs) stays.
DEVICE_INDEPENDENT_MODULES = frozenset({
    "test_autotune_pin", "test_baseline", "test_bench", "test_campaign", "test_case_domain", "test_case_masks", "test_compare",
    "test_compile_clock", "test_compile_count", "test_counterexamples", "test_corpus", "test_corpus_workers", "test_divergences",
    "test_error_report", "test_focus", "test_fuzz_command", "test_fuzz_events", "test_impl_argument",
    "test_launcher", "test_layers", "test_lse_claim", "test_mutate", "test_peers_flaggems", "test_peers_flash_attn",
    "test_peers_xformers", "test_property_power", "test_pytest_plugin", "test_shared_database",
    "test_specialisations", "test_strategies", "test_triage_command", "test_worker_deaths",
})


def pytest_configure(config):
    missing = sorted(name for name in DEVICE_INDEPENDENT_MODULES if not (TESTS / f"{name}.py").is_file())
    if missing:  # a renamed module would otherwise silently run on GPU CI again, or a typo never match
        raise pytest.UsageError(f"tests/conftest.py DEVICE_INDEPENDENT_MODULES names no test module: {missing}")
    config.addinivalue_line(
        "markers", "device_independent: checks flashcheck's bookkeeping, the same on any device "
                   "(tests/conftest.py DEVICE_INDEPENDENT_MODULES); GPU CI deselects it")


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if module in DEVICE_INDEPENDENT_MODULES and item.get_closest_marker("gpu") is None:
            item.add_marker(pytest.mark.device_independent)


@pytest.fixture
def device() -> str:
    """The device the kernels run on: "cuda" when available, else "cpu" (interpreter)."""
    return "cuda" if torch.cuda.is_available() else "cpu"
