"""The per-case timeout counts running, not compiling (flashcheck.engine.compile_clock)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from flashcheck.engine import compile_clock
from flashcheck.engine.compile_clock import COMPILE_ALLOWANCE, overran, running_seconds


def record(started=0.0, compile_seconds=0.0, compiling_since=None):
    return {"property": "p", "case": "seqlen_q=2", "started": started,
            "compile_seconds": compile_seconds, "compiling_since": compiling_since}


def test_finished_and_ongoing_compilations_are_both_taken_off_the_case_time():
    assert running_seconds(record(compile_seconds=40.0), now=50.0) == 10.0
    assert running_seconds(record(compile_seconds=40.0, compiling_since=45.0), now=50.0) == 5.0


@pytest.mark.parametrize("case, now, hung", [
    (record(compile_seconds=140.0), 150.0, False),  # 10 s of running: within a 30 s timeout
    (record(compile_seconds=100.0), 150.0, True),  # 50 s of running
    (record(compiling_since=5.0), 30.0 + COMPILE_ALLOWANCE - 1, False),  # a long compilation
    (record(compiling_since=5.0), 30.0 + COMPILE_ALLOWANCE + 1, True),  # one that never ends
    ({"property": "p", "case": "seqlen_q=2", "started": 0.0}, 31.0, True),  # a record without compile times
])
def test_a_case_overruns_by_its_running_time_or_by_its_whole_time_past_the_allowance(case, now, hung):
    assert overran(case, now, timeout=30.0) is hung


def test_the_clock_counts_compilations_only_while_a_case_runs(monkeypatch):
    times = iter([0.0, 0.0, 10.0, 25.0, 30.0])  # made, started, compiling, compiled, finished
    monkeypatch.setattr(compile_clock, "time", SimpleNamespace(time=lambda: next(times)))
    written = []
    clock = compile_clock.CaseClock(lambda r: written.append(dict(r)))
    clock.start("p", "seqlen_q=2")  # t=0
    clock.compiling()  # t=10
    clock.compiling()  # nested announcement: still the first compilation
    clock.compiled()  # t=25
    assert written[-1]["compile_seconds"] == 15.0 and written[-1]["compiling_since"] is None
    clock.finish()  # t=30
    clock.compiling()  # between cases: nothing to time
    assert written[-1]["case"] is None and len(written) == 4


class FakeRuntime:
    jit_cache_hook = None
    jit_post_compile_hook = None


@pytest.fixture
def runtime(monkeypatch):
    from triton import knobs

    fake = FakeRuntime()
    monkeypatch.setattr(knobs, "runtime", fake)
    return fake


@pytest.mark.parametrize("earlier_skips", [False, True])
def test_watching_chains_onto_the_hooks_already_set(runtime, earlier_skips):
    calls = []
    runtime.jit_cache_hook = lambda **details: calls.append("earlier before") or earlier_skips
    runtime.jit_post_compile_hook = lambda **details: calls.append("earlier after")
    assert compile_clock.watch(lambda: calls.append("start"), lambda: calls.append("end"))
    skip = runtime.jit_cache_hook(key=1, repr="k")
    assert skip is earlier_skips, "an earlier hook's decision to skip the compilation stands"
    if not earlier_skips:
        runtime.jit_post_compile_hook(key=1, repr="k")
    # A skipped compilation gets no "after" call from Triton: the watch closes it itself.
    assert calls == ["start", "earlier before", "end"] if earlier_skips else \
        ["start", "earlier before", "end", "earlier after"]


def test_a_compilation_log_has_a_line_per_compilation_with_the_kernel_and_the_case(runtime, tmp_path):
    case = {"property": "out_matches_reference", "case": "seqlen_q=2"}
    assert compile_clock.log_compilations(tmp_path, lambda: case)
    for kernel in ("_attention_forward[num_warps=4](Q: *fp16)", "_dq[num_warps=8](Q: *bf16)"):
        assert not runtime.jit_cache_hook(key=1, repr=kernel)
        runtime.jit_post_compile_hook(key=1, repr=kernel)
    [log] = tmp_path.iterdir()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["kernel"] for line in lines] == ["_attention_forward[num_warps=4](Q: *fp16)",
                                                  "_dq[num_warps=8](Q: *bf16)"]
    assert all(line["seconds"] >= 0 and line["at"] > 0 and line["property"] == "out_matches_reference"
               and line["case"] == "seqlen_q=2" for line in lines)


def test_watching_needs_tritons_hooks_or_another_jit(monkeypatch):
    from triton import knobs

    monkeypatch.setattr(knobs, "runtime", object())
    monkeypatch.setattr(compile_clock, "OTHER_JITS", ())
    assert compile_clock.watch(lambda: None, lambda: None) is False


def test_another_jits_entry_point_is_timed_as_compiling_and_a_compilation_inside_it_counts_once(monkeypatch):
    import types

    from triton import knobs

    jit = types.ModuleType("a_jit")
    jit.inner = lambda: "compiled"
    jit.compile = lambda: jit.inner()  # an autotuner compiling the configs it benchmarks
    monkeypatch.setitem(sys.modules, "a_jit", jit)
    monkeypatch.setattr(knobs, "runtime", object())
    monkeypatch.setattr(compile_clock, "OTHER_JITS", (("a_jit", None, "compile"), ("a_jit", None, "inner")))
    seen = []
    assert compile_clock.watch(lambda: seen.append("start"), lambda: seen.append("end")) is True
    assert jit.compile() == "compiled"
    assert seen == ["start", "end"]
    assert jit.inner() == "compiled" and seen == ["start", "end", "start", "end"]


def test_a_compilation_that_raises_inside_an_autotuner_does_not_hide_the_later_ones(runtime, monkeypatch):
    # FlagGems' SDPA autotunes through Triton's autotuner, which catches ptxas refusing a
    # configuration: Triton then calls no "after" hook for that compilation.
    import types

    tuner = types.ModuleType("a_tuner")

    def bench(config):
        assert not runtime.jit_cache_hook(key=config, repr="k")
        if config == "too many registers":
            return float("inf")  # the compilation raised; the autotuner caught it
        runtime.jit_post_compile_hook(key=config, repr="k")
        return 1.0

    tuner.bench = bench
    monkeypatch.setitem(sys.modules, "a_tuner", tuner)
    monkeypatch.setattr(compile_clock, "OTHER_JITS", (("a_tuner", None, "bench"),))
    seen = []
    assert compile_clock.watch(lambda: seen.append("start"), lambda: seen.append("end"))
    assert tuner.bench("too many registers") == float("inf")
    assert seen == ["start", "end"], "the autotuner's return ends the compilation that raised inside it"
    assert not runtime.jit_cache_hook(key="later", repr="k")  # a later case's compilation
    assert seen == ["start", "end", "start"], "a later compilation is timed as compiling"
    runtime.jit_post_compile_hook(key="later", repr="k")
    assert seen == ["start", "end", "start", "end"]


def test_a_compilation_that_raised_out_of_its_case_is_over_at_the_thread_s_next_one(runtime):
    seen = []
    assert compile_clock.watch(lambda: seen.append("start"), lambda: seen.append("end"))
    assert not runtime.jit_cache_hook(key=1, repr="k")  # raises: no "after" call comes
    assert not runtime.jit_cache_hook(key=2, repr="k")  # the next case's first compilation
    assert seen == ["start", "end", "start"], "the next compilation starts the clock again"
    runtime.jit_post_compile_hook(key=2, repr="k")
    assert seen == ["start", "end", "start", "end"]


def test_compilations_on_two_threads_at_once_are_one_stretch_of_compiling(runtime):
    # The autograd engine runs a CUDA backward, and compiles its kernels, on a thread of its own.
    import queue
    import threading

    seen = []
    assert compile_clock.watch(lambda: seen.append("start"), lambda: seen.append("end"))

    # The other thread's compilation starts between the main thread's "before" and "after".
    queued, done = queue.Queue(), queue.Queue()

    def autograd_engine():
        for hook in iter(queued.get, None):
            hook(key=2, repr="k")
            done.put(hook)

    engine = threading.Thread(target=autograd_engine)
    engine.start()
    assert not runtime.jit_cache_hook(key=1, repr="k")
    queued.put(runtime.jit_cache_hook)
    done.get(timeout=10)
    runtime.jit_post_compile_hook(key=1, repr="k")
    assert seen == ["start"], "the other thread is still compiling"
    queued.put(runtime.jit_post_compile_hook)
    done.get(timeout=10)
    queued.put(None)
    engine.join()
    assert seen == ["start", "end"]


def test_the_other_jits_entry_points_exist_where_their_libraries_are_installed():
    # A renamed entry point would silently count compiling as running again.
    import importlib

    for module_name, owner, name in compile_clock.OTHER_JITS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # the CuTe DSL, say, where FlashAttention-4 is not installed
        target = getattr(module, owner) if owner else module
        assert callable(getattr(target, name)), f"{module_name}.{owner or ''}{name}"



def test_flexattention_s_adapter_loads_torch_compile_s_frame_compiler_before_its_first_case_not_when_built():
    import subprocess

    code = ("import sys; import flashcheck.peers as p; from flashcheck import protocol; impl = p.resolve('flex'); "
            "built = 'torch._dynamo.convert_frame' in sys.modules; protocol.prepare(impl); "
            "print(built, 'torch._dynamo.convert_frame' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False True"
