"""A Triton autotuner, pinned (flashcheck.autotune_pin), runs one configuration per compiled
variant, chosen from the call and the same in every process; it times none, except for the
variants it leaves to the autotuner's own timing; it skips a configuration only where the
autotuner would, and reaches every configuration over many variants. A library's adapter pins its
autotuners by name; an implementation declares its own in ``flashcheck_autotuners``."""
from __future__ import annotations

import re
import sys
import types

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from flashcheck import autotune_pin

BLOCKS = (16, 32, 64, 128)
#: Where the kernels run: the GPU where there is one (Triton then compiles them), else Triton's
#: interpreter, which flashcheck's pytest plugin selects on a machine without CUDA.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _write_block(out, n, B: tl.constexpr, SHIFT: tl.constexpr):
    """Writes its configuration's block size plus SHIFT: what a call ran, read back."""
    tl.store(out + tl.arange(0, 1), tl.full((1,), B + SHIFT, tl.float32))


@pytest.fixture(autouse=True)
def timing_possible(monkeypatch):
    """As on a GPU: one variant in len(candidates) + 1 left to the autotuner's own timing (the
    tests' autotuners time with a stand-in, which the interpreter runs)."""
    monkeypatch.setattr(autotune_pin, "own_timing_possible", lambda: True)


def tuned(configs=None, prune=None):
    """A fresh autotuner over _write_block, keyed on n, whose timing is recorded instead of run."""
    configs = configs or [triton.Config({"B": block}) for block in BLOCKS]
    tuner = triton.autotune(configs=configs, key=["n"],
                            prune_configs_by={"early_config_prune": prune} if prune else None)(_write_block)
    tuner.timed = []

    def bench(*args, config, **meta):
        tuner.timed.append(config.kwargs["B"])
        return [float(config.kwargs["B"])] * 3  # the smallest block "wins"

    tuner._bench = bench
    return tuner


def ran(tuner, n: int, shift: int = 0) -> float:
    """The value the call wrote: the block of the configuration it ran, plus shift."""
    out = torch.zeros(1, device=DEVICE)
    tuner[(1,)](out, n, SHIFT=shift)
    return out.item() - shift


def pinned(**kwargs):
    tuner = tuned(**kwargs)
    autotune_pin.pin(tuner)
    return tuner


def _recording(runs: list):
    """Configurations whose pre-hook (called on every run of it) records its block."""
    def hook(block):
        return lambda nargs: runs.append(block)
    return [triton.Config({"B": block}, pre_hook=hook(block)) for block in BLOCKS]


def test_a_pinned_call_runs_one_configuration_and_times_none_outside_the_librarys_own_variants():
    runs = []
    tuner = pinned(configs=_recording(runs))
    library_tuned = 0
    for n in range(40):
        runs.clear()
        timed_before = len(tuner.timed)
        block = ran(tuner, n)
        timed = tuner.timed[timed_before:]
        assert runs == [block]  # one configuration ran, the one whose block the kernel wrote
        if timed:  # a variant left to the library: it timed every candidate, and ran its choice
            assert sorted(timed) == list(BLOCKS) and block == min(BLOCKS)
            library_tuned += 1
    assert library_tuned < 40 / 2


def test_the_same_call_runs_the_same_configuration_in_another_process():
    first, second = pinned(), pinned()  # two autotuners over one kernel: as two processes see it
    assert [ran(first, n) for n in range(30)] == [ran(second, n) for n in range(30)]


def test_the_choice_follows_the_key_and_the_constexpr_arguments():
    tuner = pinned()
    by_key = {ran(tuner, n) for n in range(60)}
    by_constexpr = {ran(tuner, 7, shift) for shift in range(60)}
    assert len(by_key) > 1 and len(by_constexpr) > 1


def test_every_configuration_and_the_librarys_own_autotuning_are_reached_over_many_variants():
    tuner = pinned()
    blocks = set()
    library_tuned = 0
    for n in range(200):
        timed_before = len(tuner.timed)
        blocks.add(ran(tuner, n))
        library_tuned += len(tuner.timed) > timed_before
    assert blocks == set(BLOCKS)
    assert 0 < library_tuned < 200 / 2  # about one variant in len(BLOCKS) + 1


def test_under_the_interpreter_every_variant_is_pinned(monkeypatch):
    """Triton's interpreter has no GPU driver to time configurations with."""
    monkeypatch.setattr(autotune_pin, "own_timing_possible", lambda: False)
    tuner = pinned()
    assert {ran(tuner, n) for n in range(100)} == set(BLOCKS) and not tuner.timed


# -- the choice forced, for triage (FLASHCHECK_AUTOTUNE_CONFIG) ------------------------------------


def test_a_forced_number_runs_that_configuration_for_every_call_and_times_none(monkeypatch):
    monkeypatch.setenv(autotune_pin.FORCED, "3")
    tuner = pinned()
    assert {ran(tuner, n) for n in range(40)} == {BLOCKS[2]} and not tuner.timed


def test_forced_library_leaves_every_call_to_the_library_s_own_autotuning(monkeypatch):
    monkeypatch.setenv(autotune_pin.FORCED, "library")
    tuner = pinned()
    assert {ran(tuner, n) for n in range(5)} == {min(BLOCKS)}  # the stand-in timing's winner
    assert len(tuner.timed) == 5 * len(BLOCKS)  # every new key timed, as the library does


def test_an_entry_naming_a_kernel_forces_that_kernel_alone(monkeypatch):
    monkeypatch.setenv(autotune_pin.FORCED, "another_kernel=1, _write_block=4")
    assert {ran(pinned(), n) for n in range(20)} == {BLOCKS[3]}
    monkeypatch.setenv(autotune_pin.FORCED, "another_kernel=1")
    assert len({ran(pinned(), n) for n in range(40)}) > 1  # pinned as usual


@pytest.mark.parametrize("value, message", [
    ("0", "FLASHCHECK_AUTOTUNE_CONFIG must be 'library', a configuration's number from 1"),
    ("fastest", "FLASHCHECK_AUTOTUNE_CONFIG must be 'library', a configuration's number from 1"),
    ("=2", "FLASHCHECK_AUTOTUNE_CONFIG must be 'library', a configuration's number from 1"),
    ("9", "FLASHCHECK_AUTOTUNE_CONFIG asks configuration 9 of _write_block, which has 4"),
])
def test_a_malformed_or_out_of_range_override_is_one_line_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv(autotune_pin.FORCED, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        pinned()


def test_fuzz_refuses_a_malformed_override_with_exit_2_before_any_work(monkeypatch, capsys):
    from flashcheck.cli.commands import EXIT_USAGE
    from tests.support.cli_process import flashcheck

    monkeypatch.setenv(autotune_pin.FORCED, "fastest")
    status = flashcheck(["fuzz", "--device", "cpu", "--workers", "1", "--budget", "5",
                         "--impl", "tests.support.autotuned:attention"])
    assert status == EXIT_USAGE
    error = capsys.readouterr().err
    assert "FLASHCHECK_AUTOTUNE_CONFIG must be 'library'" in error and len(error.strip().splitlines()) == 1


def _refuses(block: int):
    def hook(nargs):
        raise OutOfResources(300000, 232448, f"shared memory (block {block})")
    return hook


def test_a_configuration_the_autotuner_would_skip_is_skipped_for_the_next_in_order():
    configs = [triton.Config({"B": block}, pre_hook=_refuses(block) if block == 64 else None) for block in BLOCKS]
    tuner = pinned(configs=configs)
    for n in range(60):
        assert ran(tuner, n) != 64
    assert tuner.configs == configs  # restored after every call


def test_a_call_every_candidate_refuses_raises_the_autotuners_error():
    tuner = pinned(configs=[triton.Config({"B": block}, pre_hook=_refuses(block)) for block in BLOCKS])
    for n in range(20):
        with pytest.raises(OutOfResources):
            ran(tuner, n)


def test_any_other_error_of_a_configuration_is_raised_at_once_never_hidden_by_another():
    calls = []

    def fails(nargs):
        calls.append(1)
        raise RuntimeError("an illegal memory access")

    tuner = pinned(configs=[triton.Config({"B": block}, pre_hook=fails) for block in BLOCKS])
    for n in range(10):
        before = len(calls)
        with pytest.raises(RuntimeError, match="illegal memory access"):
            ran(tuner, n)
        assert len(calls) - before == 1  # one configuration tried


def test_only_the_configurations_the_autotuners_pruning_keeps_are_chosen():
    tuner = pinned(prune=lambda configs, nargs, **kwargs: [c for c in configs if c.kwargs["B"] >= 64])
    assert {ran(tuner, n) for n in range(80)} == {64, 128}


def test_pin_autotuners_pins_the_named_autotuners_of_a_module_under_their_wrappers(monkeypatch, capsys):
    tuner, other = tuned(), tuned()
    module = types.ModuleType("fakelib_ops")
    module.kernel = types.SimpleNamespace(fn=tuner)  # as FlagGems' LibEntry holds its LibTuner
    module.other_kernel = other
    module.plain = 3
    monkeypatch.setitem(sys.modules, "fakelib_ops", module)
    monkeypatch.setattr(autotune_pin, "_SEARCHED", set())
    assert autotune_pin.pin_autotuners("fakelib_ops", ("kernel", "plain")) == 1
    assert "fakelib_ops.plain holds no Triton autotuner" in capsys.readouterr().err
    assert autotune_pin.pin_autotuners("fakelib_ops", ("kernel",)) == 0  # once per module and process
    assert "run" in vars(tuner) and "run" not in vars(other)  # only the named ones


def test_a_module_that_cannot_be_imported_leaves_the_library_as_it_is(monkeypatch, capsys):
    monkeypatch.setattr(autotune_pin, "_SEARCHED", set())
    assert autotune_pin.pin_autotuners("no_such_library.ops", ("kernel",)) == 0
    assert "cannot import no_such_library.ops" in capsys.readouterr().err


def test_the_constexpr_arguments_are_read_alike_compiled_and_under_the_interpreter():
    from triton.runtime.jit import JITFunction

    compiled = types.SimpleNamespace(fn=JITFunction(_write_block.fn))
    interpreted = types.SimpleNamespace(fn=types.SimpleNamespace(fn=_write_block.fn))
    assert autotune_pin._constexpr_names(compiled) == autotune_pin._constexpr_names(interpreted) == {"B", "SHIFT"}


def test_a_refused_configuration_is_not_tried_again_for_the_same_variant():
    attempts = []

    def refuses(nargs):
        attempts.append(64)
        raise OutOfResources(300000, 232448, "shared memory")

    configs = [triton.Config({"B": block}, pre_hook=refuses if block == 64 else None) for block in BLOCKS]
    tuner = pinned(configs=configs)
    first = [ran(tuner, n) for n in range(40)]
    tried_first = len(attempts)
    assert [ran(tuner, n) for n in range(40)] == first  # the same choices, from the same calls
    assert tried_first > 0 and len(attempts) == tried_first  # the refusals remembered, not compiled again


def _out(aligned: bool) -> torch.Tensor:
    """A one-element output whose storage is 16-byte aligned or not (Triton specialises on it)."""
    return torch.zeros(1, device=DEVICE) if aligned else torch.zeros(2, device=DEVICE)[1:]


def _ran_in(tuner, n: int, aligned: bool) -> float:
    out = _out(aligned)
    tuner[(1,)](out, n, SHIFT=0)
    return out.item()


def _refused_where_aligned(block):
    """Refuses block 128 where the output is aligned, as a pipelined (aligned) load of a large
    tile asks more shared memory than the device has while the unaligned one does not."""
    def hook(nargs):
        if block == 128 and nargs["out"].data_ptr() % 16 == 0:
            raise OutOfResources(300000, 232448, "shared memory (aligned, pipelined)")
    return hook


def test_calls_of_one_variant_in_two_alignments_run_one_configuration_once_a_refusal_moved_it():
    configs = [triton.Config({"B": block}, pre_hook=_refused_where_aligned(block)) for block in BLOCKS]
    tuner = pinned(configs=configs)
    moved = [n for n in range(200) if _ran_in(tuner, n, aligned=False) == 128]
    assert moved, "some variant starts at the block the aligned calls refuse"
    before = autotune_pin.moves()
    for n in moved:
        assert _ran_in(tuner, n, aligned=True) != 128  # refused there: the variant moves on
    assert autotune_pin.moves() - before == len(moved)
    for n in moved:  # every later call of the variant, in either alignment, runs where it moved
        assert _ran_in(tuner, n, aligned=False) == _ran_in(tuner, n, aligned=True) != 128
    assert autotune_pin.moves() - before == len(moved)


class _RemembersCompiled:
    """A wrapper above an autotuner that remembers, per specialisation of the call, the
    configuration its first call ran and launches that again without the autotuner, as
    FlagGems' ``LibEntry`` keeps each compiled kernel in ``kernel_cache`` (a dict per device)."""

    def __init__(self, tuner):
        self.fn = tuner
        self.kernel_cache = ({},)

    def ran_in(self, n: int, aligned: bool) -> float:
        out = _out(aligned)
        remembered = self.kernel_cache[0].get((n, aligned))
        if remembered is None:
            self.fn[(1,)](out, n, SHIFT=0)
            self.kernel_cache[0][(n, aligned)] = self.fn.best_config.kwargs["B"]
        else:
            self.fn.fn[(1,)](out, n, B=remembered, SHIFT=0)
        return out.item()


def test_a_move_reaches_the_calls_a_wrapper_above_the_autotuner_would_launch_without_it():
    configs = [triton.Config({"B": block}, pre_hook=_refused_where_aligned(block)) for block in BLOCKS]
    wrapper = _RemembersCompiled(tuned(configs=configs))
    autotune_pin.pin(wrapper)
    moved = [n for n in range(200) if wrapper.ran_in(n, aligned=False) == 128]
    assert moved, "some variant starts at the block the aligned calls refuse"
    for n in moved:
        assert wrapper.ran_in(n, aligned=True) != 128
        assert wrapper.ran_in(n, aligned=False) == wrapper.ran_in(n, aligned=True)  # not the remembered 128


def test_calls_such_a_wrapper_remembers_from_before_the_pin_run_pinned_after_it():
    probe = pinned()
    n = next(n for n in range(200) if ran(probe, n) != 16)  # the library's timing here picks 16
    wrapper = _RemembersCompiled(tuned())
    assert wrapper.ran_in(n, aligned=True) == 16  # the library's own choice, remembered
    autotune_pin.pin(wrapper)
    assert wrapper.ran_in(n, aligned=True) == ran(probe, n)


def test_a_kernel_behind_such_a_wrapper_holds_layout_invariance_where_an_alignment_moves_its_variant():
    """End to end, as FlagGems' SDPA met it: the padded call runs the variant's configuration, the
    contiguous one refuses it and moves the variant, the comparison of two configurations fails,
    and the decision again runs both calls where the variant moved."""
    from flashcheck.cases.case import Case
    from flashcheck.engine.verdict import Outcome, decide
    from flashcheck.properties import PROPERTIES
    from tests.support import buggy

    configs = [triton.Config({"B": block}, pre_hook=_refused_where_aligned(block)) for block in BLOCKS]
    probe = pinned(configs=configs)
    n = next(n for n in range(200) if _ran_in(probe, n, aligned=False) == 128)
    wrapper = _RemembersCompiled(tuned(configs=configs))
    autotune_pin.pin(wrapper)

    def attention(q, k, v, **kwargs):
        out, lse = buggy.correct(q, k, v, **kwargs)
        block = wrapper.ran_in(n, aligned=q.is_contiguous())  # the padded layout's views are not
        return out + block * 1e-3, lse  # each configuration its own rounding, as a summation order is

    attention.flashcheck_features = buggy.correct.flashcheck_features
    layout_invariance = PROPERTIES["layout_invariance"]
    case = Case.from_spec("batch=1 seqlen_q=5 seqlen_k=5 heads=1 kv_heads=1 head_dim=16 dtype=float32 causal=False "
                          "window=-1,-1 softmax_scale=None layout=padded values=normal seed=0")
    verdict = decide(layout_invariance, attention, case, device=DEVICE, impl_name="t:behind_a_wrapper")
    assert verdict.outcome is Outcome.PASSED, verdict


def test_pinning_what_holds_no_autotuner_is_an_error_naming_it():
    with pytest.raises(ValueError, match="holds no Triton autotuner"):
        autotune_pin.pin(types.SimpleNamespace(fn=None))


def test_calls_of_one_variant_in_two_alignments_that_both_take_its_configuration_run_it_alike():
    tuner = pinned()
    for n in range(60):
        assert _ran_in(tuner, n, aligned=False) == _ran_in(tuner, n, aligned=True)


# -- autotuners an implementation declares (flashcheck_autotuners) ------------------------------


def test_an_implementation_s_declared_autotuners_are_pinned_when_flashcheck_prepares_it():
    from flashcheck import protocol
    from tests.support import autotuned

    protocol.prepare(autotuned.attention)
    assert "run" in vars(autotuned.tagged)
    tuned_before, ran_before = len(autotuned.TUNED), len(autotuned.RAN)
    for length in range(1, 41):
        q = torch.randn(1, length, 2, 16, device=DEVICE)
        autotuned.attention(q, q, q)
    assert len(autotuned.RAN) - ran_before == 40 and set(autotuned.RAN[ran_before:]) == set(autotuned.BLOCKS)
    assert len(autotuned.TUNED) - tuned_before < 40 / 2  # tuned only where left to the autotuner


@pytest.mark.parametrize("declared, message", [
    ("tagged", "flashcheck_autotuners must be a collection of Triton autotuned kernels"),
    ([3], "flashcheck_autotuners[0] is 3, which holds no Triton autotuner"),
    ([types.SimpleNamespace(fn=None)], "flashcheck_autotuners[0] is namespace(fn=None), which holds no Triton"),
])
def test_a_malformed_autotuner_declaration_is_one_line_naming_the_attribute(declared, message):
    from flashcheck import protocol

    def attention(q, k, v, **kwargs):
        raise AssertionError("never called")

    attention.flashcheck_autotuners = declared
    with pytest.raises(ValueError, match=re.escape(message)):
        protocol.check_declaration(attention)


def test_fuzz_refuses_an_autotuner_declaration_that_names_none_with_exit_2_before_any_work(capsys):
    from flashcheck.cli.commands import EXIT_USAGE
    from tests.support.cli_process import flashcheck

    status = flashcheck(["fuzz", "--device", "cpu", "--workers", "1", "--budget", "5",
                         "--impl", "tests.support.autotuned:declares_a_function"])
    assert status == EXIT_USAGE
    error = capsys.readouterr().err
    assert "flashcheck_autotuners[0] is <function attention" in error and len(error.strip().splitlines()) == 1


def test_a_script_pins_the_declared_autotuners_as_flashcheck_does(tmp_path, monkeypatch):
    """The script's own copy of the pinning, in a fresh process: the same configuration for the
    same call as flashcheck's, and said on stderr (both under Triton's interpreter here)."""
    monkeypatch.setattr(autotune_pin, "own_timing_possible", lambda: False)
    import os
    import subprocess
    from pathlib import Path

    from flashcheck import protocol
    from flashcheck.repro import calls
    from tests.support import autotuned

    section = calls.call_section("tests.support.autotuned:attention").source
    assert "pin(_declared)" in section
    script = tmp_path / "section.py"
    script.write_text(section + "\n\nimport torch\nfrom tests.support import autotuned\n"
                      "q = torch.randn(1, 7, 2, 16)\nattention(q, q, q)\nprint(autotuned.RAN)\n")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=root)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "autotune pin: tagged runs" in done.stderr
    protocol.prepare(autotuned.attention)  # flashcheck's pin, here
    before = len(autotuned.RAN)
    q = torch.randn(1, 7, 2, 16, device=DEVICE)
    autotuned.attention(q, q, q)
    assert done.stdout.strip() == str([autotuned.RAN[before]])


def test_a_fuzz_run_names_the_autotuners_it_pinned(tmp_path, capsys):
    import json

    from flashcheck.cli.commands import EXIT_OK, EXIT_UNCHECKED
    from tests.support.cli_process import flashcheck

    result = tmp_path / "result.json"
    status = flashcheck(["fuzz", "--device", "cpu", "--workers", "1", "--budget", "8",
                         "--property", "out_matches_reference", "--database", str(tmp_path / "db"),
                         "--json", str(result), "--impl", "tests.support.autotuned:attention"])
    # Nothing failed (a pinned kernel that raised would be a finding); on a loaded machine the
    # budget may end before a case does, which does not touch what the summary names.
    assert status in (EXIT_OK, EXIT_UNCHECKED), capsys.readouterr()
    assert json.loads(result.read_text())["autotuners"] == ["tagged"]
    assert "autotuners pinned (one configuration per compiled variant, chosen from the call): tagged" in \
        capsys.readouterr().out
