"""Speed of the project kernel and its peers: TFLOP/s and peak extra memory.

Collected under the ``speed`` marker (skipped unless ``-m speed`` or
``--run-benchmarks``) and the ``gpu`` marker (skipped without CUDA)::

    python3 -m pytest tests/benchmarks -m speed --benchmark-json bench.json
    flashcheck bench-report bench.json --out reports/bench

One test per (configuration, provider): the grid, FLOP convention, timer, memory measure
and providers are :mod:`flashcheck.bench`'s (read its docstring). The timing is
pytest-benchmark's own, through ``benchmark.pedantic`` with a timer that synchronises the
GPU before each clock read, not ``triton.testing.do_bench`` fed into ``extra_info``: that
way the rounds pytest-benchmark reports, saves and compares (``--benchmark-compare``) are
the measurement itself rather than the timing of a wrapper around another timer.
``extra_info`` carries the configuration, ``flops``, ``tflops`` (at the median round),
``peak_extra_bytes`` and ``input_bytes`` into ``--benchmark-json``.

A provider that runs out of memory (standard attention at long lengths) or is unavailable
on this machine is skipped with the reason, and recorded in the JSON under ``"flashcheck"``
(see ``conftest.py``); the run goes on.

``FLASHCHECK_BENCH_SMOKE=1`` swaps in a tiny grid with ``sdpa-math`` only and no ``gpu``
marker, so that the plumbing can be run on a CPU (its numbers mean nothing).
"""
from __future__ import annotations

import os

import pytest
import torch

from flashcheck import bench

SMOKE = os.environ.get("FLASHCHECK_BENCH_SMOKE") == "1"
SIZES = dict(hidden=bench.SMOKE["hidden"], tokens=bench.SMOKE["tokens"]) if SMOKE else {}
GRID = bench.grid(**bench.SMOKE) if SMOKE else bench.grid()
PROVIDERS = bench.SMOKE_PROVIDERS if SMOKE else bench.PROVIDERS
MARKS = (pytest.mark.speed,) if SMOKE else (pytest.mark.speed, pytest.mark.gpu)
# The smoke grid checks the plumbing: three single-call rounds are enough.
TIMING = dict(budget=0.0, round_seconds=0.0) if SMOKE else {}


def _case_id(cfg: bench.Config) -> str:
    return f"{cfg.mode}-{cfg.dtype}-d{cfg.head_dim}-{'causal' if cfg.causal else 'full'}-n{cfg.seqlen}"


def _marks(cfg: bench.Config) -> tuple:
    # host_bound: measured and reported, but left out of ci/gpu.sh's regression gate.
    return MARKS + ((pytest.mark.host_bound,) if bench.host_bound(cfg) else ())


# Plain values as parameters, so that pytest-benchmark's JSON can hold them ("params").
CASES = [pytest.param(c.mode, c.dtype, c.head_dim, c.causal, c.seqlen, id=_case_id(c), marks=_marks(c)) for c in GRID]


@pytest.mark.benchmark(timer=bench.synchronized_timer)
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode, dtype, head_dim, causal, seqlen", CASES)
def test_attention_speed(benchmark, bench_records, mode, dtype, head_dim, causal, seqlen, provider):
    cfg = bench.config(mode, dtype, head_dim, causal, seqlen, **SIZES)
    benchmark.group = f"{cfg.panel} n{cfg.seqlen}"  # providers side by side in the terminal table
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        result = bench.measure(benchmark, provider, cfg, device, **TIMING)
    except bench.Unavailable as error:
        bench_records["unavailable"].append(dict(provider=provider, mode=mode, dtype=dtype, head_dim=head_dim,
                                                 causal=causal, seqlen=seqlen, message=str(error)))
        pytest.skip(f"unavailable: {error}")
    if result.oom is not None:
        bench_records["out_of_memory"].append(dict(result.extra_info, message=result.oom.message))
        pytest.skip(f"{provider} ran out of memory at {cfg.panel} n{cfg.seqlen} (recorded): {result.oom.message}")
