"""Specification of flashcheck.engine.autotuning: workers that meet one Triton autotuner together
compile its configurations in orders of their own, then let it time and choose as it would."""

import pytest
import triton
from triton.runtime import autotuner as triton_autotuner

from flashcheck.engine import autotuning, compile_clock

BLOCKS = (16, 32, 64, 128)


def _body(x, n, BLOCK):
    pass


class _Kernel:
    """A stand-in for a jitted kernel: records each launch as ``(BLOCK, warmup)``, where a
    warmup launch compiles without running."""

    fn = staticmethod(_body)
    arg_names = ["x", "n", "BLOCK"]

    def __init__(self, fails_to_compile=()):
        self.calls = []
        self.fails_to_compile = set(fails_to_compile)

    def run(self, *args, grid, warmup, **kwargs):
        self.calls.append((kwargs["BLOCK"], warmup))
        if warmup and kwargs["BLOCK"] in self.fails_to_compile:
            raise RuntimeError("out of resources")

    def compiled(self):
        return [block for block, warmup in self.calls if warmup]

    def timed(self):
        return [block for block, warmup in self.calls if not warmup]


def _tuner(kernel):
    """An autotuner over :data:`BLOCKS` whose timings favour BLOCK 64."""

    def do_bench(call, quantiles):
        call()
        return [abs(kernel.calls[-1][0] - 64) + 1.0] * 3

    configs = [triton.Config({"BLOCK": block}) for block in BLOCKS]
    return triton_autotuner.Autotuner(kernel, kernel.arg_names, configs, ["n"], None, None, do_bench=do_bench)


@pytest.fixture
def restored(monkeypatch):
    """Triton's autotuner as it was, after the test."""
    for name in ("prune_configs", "_bench"):
        monkeypatch.setattr(triton_autotuner.Autotuner, name, getattr(triton_autotuner.Autotuner, name))
    monkeypatch.delattr(triton_autotuner.Autotuner, autotuning._SPLIT, raising=False)


def test_a_rotation_starts_at_the_workers_share_of_the_list():
    assert autotuning.rotation(list("abcd"), 0, 2) == list("abcd")
    assert autotuning.rotation(list("abcd"), 1, 2) == list("cdab")
    assert autotuning.rotation(list("abcdef"), 2, 3) == list("efabcd")
    assert autotuning.rotation([], 3, 4) == []


@pytest.mark.parametrize("position, team", [(2, 2), (-1, 2), (0, 0), (0.5, 2)])
def test_a_position_outside_its_team_is_refused(position, team):
    with pytest.raises(ValueError, match="position|team"):
        autotuning.rotation(list("ab"), position, team)


def test_a_worker_compiles_every_configuration_from_its_share_before_the_first_is_timed(restored):
    kernel = _Kernel()
    assert autotuning.split_configurations(1, 2)
    tuner = _tuner(kernel)
    tuner.run(None, 7, grid=(1,), warmup=False)
    assert kernel.compiled() == [64, 128, 16, 32]
    assert kernel.calls[:4] == [(64, True), (128, True), (16, True), (32, True)]
    # Timed in the autotuner's own order, then the chosen configuration run.
    assert kernel.timed() == [16, 32, 64, 128, 64]
    assert tuner.best_config.kwargs == {"BLOCK": 64}


def test_the_chosen_configuration_is_the_one_chosen_without_the_split(restored):
    alone = _Kernel()
    without = _tuner(alone)
    without.run(None, 7, grid=(1,), warmup=False)
    autotuning.split_configurations(3, 4)
    kernel = _Kernel()
    tuner = _tuner(kernel)
    tuner.run(None, 7, grid=(1,), warmup=False)
    assert tuner.best_config.kwargs == without.best_config.kwargs
    assert kernel.timed() == alone.timed()
    assert alone.compiled() == []


def test_a_tuning_key_met_again_compiles_nothing_more(restored):
    kernel = _Kernel()
    autotuning.split_configurations(0, 4)
    tuner = _tuner(kernel)
    tuner.run(None, 7, grid=(1,), warmup=False)
    tuner.run(None, 7, grid=(1,), warmup=False)
    assert kernel.compiled() == list(BLOCKS)
    tuner.run(None, 8, grid=(1,), warmup=False)  # a new key: a new round
    assert kernel.compiled() == list(BLOCKS) * 2


def test_a_configuration_that_does_not_compile_is_left_to_the_autotuner(restored):
    kernel = _Kernel(fails_to_compile={128})
    autotuning.split_configurations(1, 2)
    tuner = _tuner(kernel)
    tuner.run(None, 7, grid=(1,), warmup=False)
    assert kernel.compiled() == [64, 128, 16, 32]
    assert kernel.timed() == [16, 32, 64, 128, 64]


def test_splitting_again_changes_nothing_more(restored):
    autotuning.split_configurations(1, 2)
    bench = triton_autotuner.Autotuner._bench
    assert autotuning.split_configurations(0, 2)
    assert triton_autotuner.Autotuner._bench is bench


def test_a_bad_team_is_refused_before_the_autotuner_changes(restored):
    bench = triton_autotuner.Autotuner._bench
    with pytest.raises(ValueError, match="position"):
        autotuning.split_configurations(5, 2)
    assert triton_autotuner.Autotuner._bench is bench


def test_the_compile_clock_counts_the_split_compilations_as_compiling(restored, monkeypatch):
    events = []
    kernel = _Kernel()
    launch = kernel.run

    def run(*args, **kwargs):
        events.append("compile" if kwargs["warmup"] else "run")
        launch(*args, **kwargs)

    kernel.run = run
    monkeypatch.setattr(triton.knobs, "runtime", object())  # Triton's own hooks left alone
    monkeypatch.setattr(compile_clock, "OTHER_JITS", (("triton.runtime.autotuner", "Autotuner", "_bench"),))
    autotuning.split_configurations(1, 2)  # first, as a fuzz worker does: the clock wraps it
    assert compile_clock.watch(lambda: events.append("start"), lambda: events.append("end"))
    _tuner(kernel).run(None, 7, grid=(1,), warmup=False)
    assert events[:7] == ["start", "compile", "compile", "compile", "compile", "run", "end"]
