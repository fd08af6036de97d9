"""What the speed benchmarks could not measure, carried into pytest-benchmark's JSON.

A provider that runs out of memory or is unavailable has no timings, so pytest-benchmark
leaves it out of ``--benchmark-json``; the test records it here instead, and
:func:`pytest_benchmark_update_json` adds the records under the key ``"flashcheck"``
(``{"out_of_memory": [...], "unavailable": [...], "device": ..., "versions": {...}}``, each
record an ``extra_info``-like dict with a ``message``), where :mod:`flashcheck.bench.report` reads them.
"""
from __future__ import annotations

import pytest

_RECORDS = pytest.StashKey[dict]()


def _records(config) -> dict:
    return config.stash.setdefault(_RECORDS, {"out_of_memory": [], "unavailable": []})


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "host_bound: the project kernel's time here follows the host more than the GPU "
        "(flashcheck.bench.host_bound); ci/gpu.sh reports it without gating it")


@pytest.fixture
def bench_records(request) -> dict:
    """This run's records of unmeasured cases: ``{"out_of_memory": [...], "unavailable": [...]}``."""
    return _records(request.config)


def pytest_benchmark_update_json(config, benchmarks, output_json):
    import torch

    # pytest-benchmark's machine_info describes the CPU only.
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    versions = {"torch": torch.__version__}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        pass
    from flashcheck import peers

    fa4 = peers.describe("fa4").library.version()  # from its metadata: imports nothing
    if fa4 is not None:
        versions["flash-attn-4"] = fa4
    output_json["flashcheck"] = dict(_records(config), device=device, versions=versions)
