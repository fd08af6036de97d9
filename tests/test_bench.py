"""The speed benchmark's harness on the CPU: FLOP convention, grid, round planning,
out-of-memory capture, the report from a synthetic pytest-benchmark JSON, and one smoke run
of the benchmark module itself. Nothing here is timed; the numbers it makes mean nothing."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import torch

from flashcheck import bench
from flashcheck.bench import report as bench_report
from flashcheck.cli import main

REPO = Path(__file__).resolve().parents[1]


# -- FLOPs and the grid ----------------------------------------------------------------------------


def test_forward_flops_are_two_matmuls_per_head():
    assert bench.attention_flops(2, 16, 1024, 128, causal=False, mode="fwd") == 4 * 2 * 16 * 1024**2 * 128


def test_causal_halves_and_the_backward_counts_three_and_a_half_forwards():
    full = bench.attention_flops(4, 32, 4096, 64, causal=False, mode="fwd")
    assert bench.attention_flops(4, 32, 4096, 64, causal=True, mode="fwd") == full / 2
    assert bench.attention_flops(4, 32, 4096, 64, causal=False, mode="fwd_bwd") == 3.5 * full
    assert bench.attention_flops(4, 32, 4096, 64, causal=True, mode="fwd_bwd") == 3.5 * full / 2


def test_the_grid_keeps_16k_tokens_and_hidden_2048():
    configs = bench.grid()
    assert len(configs) == 7 * 2 * 2 * 2 * 2  # lengths x head dims x dtypes x modes x causal
    assert sorted({c.seqlen for c in configs}) == [512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert {(c.mode, c.dtype, c.head_dim, c.causal) for c in configs} == {
        (m, dt, d, c) for m in ("fwd", "fwd_bwd") for dt in ("bfloat16", "float16") for d in (64, 128)
        for c in (False, True)}
    for c in configs:
        assert c.heads * c.head_dim == 2048
        # 32K is one sequence of 32K tokens: half a sequence per batch is no batch.
        assert c.batch * c.seqlen == (16384 if c.seqlen <= 16384 else c.seqlen)
        assert c.flops == bench.attention_flops(c.batch, c.heads, c.seqlen, c.head_dim, causal=c.causal, mode=c.mode)


def test_host_bound_configurations_are_the_short_forward_backwards():
    bound = {(c.mode, c.causal, c.seqlen) for c in bench.grid() if bench.host_bound(c)}
    # The full-attention work of at most 512 tokens: full at 512, causal at 512 and 1K.
    assert bound == {("fwd_bwd", False, 512), ("fwd_bwd", True, 512), ("fwd_bwd", True, 1024)}


@pytest.mark.parametrize("kwargs, argument", [
    (dict(mode="bwd"), "mode"), (dict(head_dim=96), "head_dim"), (dict(seqlen=0), "seqlen"),
    (dict(dtype="int8"), "dtype"), (dict(dtype="bf16"), "dtype"),
])
def test_a_bad_configuration_names_its_argument(kwargs, argument):
    arguments = dict(mode="fwd", dtype="bfloat16", head_dim=64, causal=False, seqlen=512) | kwargs
    with pytest.raises(ValueError, match=f"^{argument}:"):
        bench.config(**arguments)


def test_plan_fills_a_round_and_bounds_the_rounds():
    assert bench.plan(0.001) == (20, 25)  # 25 calls of 1 ms per 25 ms round; 40 would fit in 1 s
    assert bench.plan(0.1) == (10, 1)  # one call of 100 ms per round; 1 s holds 10 rounds
    assert bench.plan(2.0) == (3, 1)  # a slow call: at least 3 rounds, whatever the budget
    with pytest.raises(ValueError, match="seconds_per_call"):
        bench.plan(0.0)


def test_provider_names_are_checked():
    cfg = bench.config("fwd", "float32", 16, False, 32, hidden=32, tokens=64)
    with pytest.raises(ValueError, match="^provider:"):
        bench.step("sdpa-fast", cfg, bench.inputs(cfg, "cpu"))


# -- out of memory ---------------------------------------------------------------------------------


class Big:
    """Stands for a large tensor the failing call held."""


def test_an_out_of_memory_error_is_captured_and_what_the_call_held_is_freed():
    held = []

    def provider():
        big = Big()
        held.append(weakref.ref(big))
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB\nmore detail")

    gc.disable()  # the object must go because nothing refers to it, not by a lucky collection
    try:
        outcome = bench.capture_oom(provider)
    finally:
        gc.enable()
    assert outcome == bench.OutOfMemory("CUDA out of memory. Tried to allocate 32.00 GiB")
    assert held[0]() is None


def test_other_errors_propagate_and_results_pass_through():
    assert bench.capture_oom(lambda x: x + 1, 1) == 2
    with pytest.raises(RuntimeError, match="illegal"):
        bench.capture_oom(lambda: (_ for _ in ()).throw(RuntimeError("illegal memory access")))


class FakeBenchmark:
    """pytest-benchmark's fixture as measure() uses it."""

    def __init__(self, fail_in_pedantic=False):
        self.extra_info, self.stats, self.calls = {}, None, []
        self.fail_in_pedantic = fail_in_pedantic

    def pedantic(self, target, *, rounds, iterations, warmup_rounds):
        self.calls.append((rounds, iterations, warmup_rounds))
        if self.fail_in_pedantic:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (in a round)")
        for _ in range(rounds * iterations):
            target()
        self.stats = type("Metadata", (), {"stats": type("Stats", (), {"median": 0.5})()})()


SMALL = bench.config("fwd", "float32", 16, True, 32, hidden=32, tokens=64)


def test_measure_records_an_out_of_memory_anywhere_instead_of_failing(monkeypatch):
    def oom_step(provider, cfg, tensors):
        def call():
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return call

    monkeypatch.setattr(bench, "step", oom_step)
    fake = FakeBenchmark()
    result = bench.measure(fake, "sdpa-math", SMALL, "cpu")
    assert result.oom == bench.OutOfMemory("CUDA out of memory. Tried to allocate 8.00 GiB")
    assert result.extra_info["oom"] is True and fake.calls == []  # never timed
    monkeypatch.undo()
    result = bench.measure(FakeBenchmark(fail_in_pedantic=True), "sdpa-math", SMALL, "cpu", budget=0, round_seconds=0)
    assert result.oom == bench.OutOfMemory("CUDA out of memory (in a round)")


def test_measure_fills_extra_info_from_the_median_round():
    fake = FakeBenchmark()
    result = bench.measure(fake, "sdpa-math", SMALL, "cpu", budget=0, round_seconds=0)
    assert fake.calls == [(3, 1, 1)]
    assert result.oom is None and fake.extra_info == result.extra_info
    assert fake.extra_info["tflops"] == SMALL.flops / 0.5 / 1e12
    assert fake.extra_info["input_bytes"] == 3 * 2 * 32 * 2 * 16 * 4  # q, k, v: (2, 32, 2, 16) float32
    assert fake.extra_info["peak_extra_bytes"] is None  # no allocator statistics on the CPU


def test_a_cuda_only_peer_is_unavailable_on_the_cpu():
    with pytest.raises(bench.Unavailable):
        bench.measure(FakeBenchmark(), "sdpa-efficient", SMALL, "cpu")
    with pytest.raises(bench.Unavailable, match="flex"):
        bench.measure(FakeBenchmark(), "flex", SMALL, "cpu")


def test_flashattention_4_is_a_provider_unavailable_without_its_library_or_on_the_cpu():
    assert "fa4" in bench.PROVIDERS and "fa4" in bench_report.PROVIDER_ORDER
    from flashcheck import peers

    reason = "pip install 'flashcheck[fa4]'" if peers.describe("fa4").library.version() is None else "fa4"
    with pytest.raises(bench.Unavailable, match=re.escape(reason)):
        bench.measure(FakeBenchmark(), "fa4", SMALL, "cpu")


# -- the report ------------------------------------------------------------------------------------

FWD = dict(mode="fwd", dtype="bfloat16", head_dim=128, causal=True)
BWD = dict(mode="fwd_bwd", dtype="float16", head_dim=64, causal=False)


def _benchmark(provider, seqlen, median, config, flops=1e12, peak=2**30):
    info = dict(config, provider=provider, seqlen=seqlen, flops=flops, peak_extra_bytes=peak)
    return {"fullname": f"t[{provider}-{seqlen}]", "extra_info": info, "stats": {"median": median}}


def synthetic() -> dict:
    """flash at 100 TFLOP/s everywhere (1e12 FLOPs in 10 ms); standard attention 4x slower at
    2K, 8x at 4K and 16K in fwd; out of memory at 8K in fwd and at 16K in fwd_bwd; flex 2x
    slower; cuDNN unavailable."""
    benches = []
    for config, math_times in ((FWD, {2048: 0.04, 4096: 0.08, 16384: 0.16}), (BWD, {2048: 0.02, 4096: 0.02, 8192: 0.02})):
        for n in (2048, 4096, 8192, 16384):
            benches.append(_benchmark("flash", n, 0.01, config))
            benches.append(_benchmark("flex", n, 0.02, config))
            if n in math_times:
                benches.append(_benchmark("sdpa-math", n, math_times[n], config, peak=2**33))
    return {
        "benchmarks": benches,
        "flashcheck": {
            "out_of_memory": [dict(FWD, provider="sdpa-math", seqlen=8192, message="CUDA out of memory"),
                              dict(BWD, provider="sdpa-math", seqlen=16384, message="CUDA out of memory")],
            "unavailable": [dict(FWD, provider="sdpa-cudnn", seqlen=2048, message="no cuDNN")],
            "device": "NVIDIA H100 80GB HBM3", "versions": {"torch": "2.11.0"},
        },
    }


@pytest.fixture
def synthetic_json(tmp_path) -> Path:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(synthetic()))
    return path


def test_the_report_computes_tflops_from_the_median_and_the_flops(synthetic_json):
    results = bench_report.load(synthetic_json)
    panel = ("fwd", "bfloat16", 128, True)
    assert results.tflops(panel, 2048, "flash") == pytest.approx(100.0)
    assert results.tflops(panel, 2048, "sdpa-math") == pytest.approx(25.0)
    assert results.get(panel, 8192, "sdpa-math").status == "oom"
    assert results.get(panel, 2048, "sdpa-cudnn").status == "unavailable"
    assert results.providers == ["flash", "sdpa-cudnn", "flex", "sdpa-math"]


def test_ratios_against_a_peer_are_per_configuration_and_length(synthetic_json):
    results = bench_report.load(synthetic_json)
    assert bench_report.ratios(results, "sdpa-math") == {
        ("fwd", "bfloat16", 128, True): pytest.approx({2048: 4.0, 4096: 8.0, 16384: 16.0}),
        ("fwd_bwd", "float16", 64, False): pytest.approx({2048: 2.0, 4096: 2.0, 8192: 2.0}),
    }
    assert set(bench_report.ratios(results, "sdpa-cudnn")) == set()  # never measured


def test_the_headline_states_the_speedups_and_where_standard_attention_ran_out_of_memory(synthetic_json):
    text = bench_report.headline(bench_report.load(synthetic_json))
    # 2K: geometric mean of 4 and 2; 4K: of 8 and 2; 8K: only fwd_bwd measured both.
    assert "at 2K: flash is **2.8×** as fast as standard attention (geometric mean over 2 configurations; 2.0× to 4.0×)" in text
    assert "at 4K: flash is **4.0×**" in text
    assert "at 8K: flash is **2.0×** as fast as standard attention (geometric mean over 1 configurations" in text
    assert ("standard attention ran out of memory where flash did not at 8K, 16K: "
            "fwd bfloat16 d128 causal at 8K; fwd_bwd float16 d64 full at 16K") in text


def test_a_run_without_standard_attention_says_it_has_no_headline(tmp_path):
    # ci/gpu.sh measures the project kernel alone by default: no speedup, no OOM finding.
    data = synthetic()
    data["benchmarks"] = [b for b in data["benchmarks"] if b["extra_info"]["provider"] != "sdpa-math"]
    data["flashcheck"]["out_of_memory"] = []
    path = tmp_path / "flash-only.json"
    path.write_text(json.dumps(data))
    assert bench_report.headline(bench_report.load(path)) == "- no headline: sdpa-math not measured in this run"


def test_the_markdown_has_the_ratio_tflops_and_memory_tables(synthetic_json):
    text = bench_report.markdown(bench_report.load(synthetic_json))
    assert "Device: NVIDIA H100 80GB HBM3; torch 2.11.0." in text
    assert "| configuration | flash / sdpa-cudnn | flash / flex | flash / sdpa-math |" in text
    # fwd: flex 2x everywhere; standard attention 4, 8, 16 -> geometric mean 8.
    assert "| fwd bfloat16 d128 causal | - | 2.00× (2.00–2.00) | 8.00× (4.00–16.00) |" in text
    assert "| fwd bfloat16 d128 causal | 8192 | 100.0 | - | 50.0 | OOM |" in text
    assert "| fwd bfloat16 d128 causal | 2048 | 100.0 | n/a | 50.0 | 25.0 |" in text
    assert "| fwd bfloat16 d128 causal | 2048 | 1.00 | n/a | 1.00 | 8.00 |" in text  # GiB
    assert "4·B·H·N²·D" in text and "3.5×" in text


def test_the_command_writes_the_report_and_the_plot(synthetic_json, tmp_path, capsys):
    assert main(["bench-report", str(synthetic_json), "--out", str(tmp_path / "out")]) == 0
    assert "at 2K: flash is **2.8×**" in capsys.readouterr().out
    assert (tmp_path / "out" / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![TFLOP/s against sequence length](bench.png)" in (tmp_path / "out" / "bench.md").read_text()


def test_parts_of_one_run_are_reported_together(synthetic_json, tmp_path, capsys):
    data = synthetic()
    host_bound = [b for b in data["benchmarks"] if b["extra_info"]["seqlen"] == 2048]
    gated = dict(data, benchmarks=[b for b in data["benchmarks"] if b not in host_bound])
    paths = tmp_path / "gated.json", tmp_path / "host-bound.json"
    paths[0].write_text(json.dumps(gated))
    paths[1].write_text(json.dumps(dict(data, benchmarks=host_bound, flashcheck={})))
    whole = bench_report.load(synthetic_json)
    merged = bench_report.load(*paths)
    assert merged.tflops(("fwd", "bfloat16", 128, True), 2048, "flash") == pytest.approx(100.0)
    assert bench_report.markdown(merged) == bench_report.markdown(whole)
    assert main(["bench-report", *map(str, paths), "--out", str(tmp_path / "out")]) == 0
    assert "at 2K: flash is **2.8×**" in capsys.readouterr().out
    with pytest.raises(ValueError, match="^paths:"):
        bench_report.load()


def test_the_command_refuses_a_file_that_is_not_the_benchmarks_json(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"benchmarks": [{"fullname": "t[x]", "extra_info": {}, "stats": {"median": 1}}]}))
    assert main(["bench-report", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert "path: benchmark 't[x]'" in capsys.readouterr().err
    assert main(["bench-report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out")]) == 2


# -- the benchmark module itself, smoke-sized on the CPU -------------------------------------------


def test_the_benchmark_runs_end_to_end_in_smoke_mode(tmp_path):
    out = tmp_path / "bench.json"
    # Not an xdist worker's environment: pytest-benchmark disables itself when it sees one.
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
    env["FLASHCHECK_BENCH_SMOKE"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
               "tests/benchmarks/test_attention_speed.py", "-m", "speed", "-k", "float32-d16-causal-n32",
               f"--benchmark-json={out}"]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = bench_report.load(out)
    assert {(e.mode, e.provider, e.status) for e in results.entries} == {
        ("fwd", "sdpa-math", "ok"), ("fwd_bwd", "sdpa-math", "ok")}
    assert all(e.tflops > 0 for e in results.entries)
    saved = json.loads(out.read_text())
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    assert saved["flashcheck"]["out_of_memory"] == [] and saved["flashcheck"]["device"] == device
    assert {b["options"]["timer"] for b in saved["benchmarks"]} == {"synchronized_timer"}
