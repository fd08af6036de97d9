"""``flashcheck fuzz`` end to end: exit codes, counterexamples with their replay line, the
example database, and crash and hang isolation in spawned worker processes.

The implementations fuzzed here are small pure-torch ones (``tests/support/buggy.py``,
``tests/support/misbehaving.py``), so that each run costs seconds even in CPU CI; the project
kernel's own fuzzing is what the README's first command runs.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from flashcheck import protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.cases.case import Case
from flashcheck.cli import fuzz_console
from flashcheck.engine import crash_store, fuzz_events, fuzz_workers, interruption, property_cases
from flashcheck.engine import fuzz as fuzz_engine
from flashcheck.engine.fuzz_result import OUT_OF_MEMORY
from flashcheck.engine.verdict import FlashcheckError, Outcome, decide
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property
from tests.support import buggy, misbehaving, stubs
from tests.support.cli_process import REPO, flashcheck, needs_interpreter_numpy
from flashcheck.cli.commands import EXIT_FOUND, EXIT_INTERNAL, EXIT_OK, EXIT_UNCHECKED, EXIT_USAGE


def on(event_type, handle):
    """An ``on_event`` hook for the in-process engine that hands ``handle`` the events of ``event_type``."""
    def on_event(event):
        if isinstance(event, event_type):
            handle(event)
    return on_event


#: The budget of an in-process run that ends on a count of cases (``should_stop``): far past
#: what the count takes, so that a loaded host (a GPU runner's other workers) slows the test
#: down instead of cutting it short.
COUNTED_BUDGET = 900


def fuzz(tmp_path, impl, *extra, budget=8):
    """Run ``flashcheck fuzz`` in this process (seed 1 and one worker unless ``extra`` says
    otherwise); return its exit status and JSON result."""
    result_file = tmp_path / "result.json"
    workers = [] if "--workers" in extra else ["--workers", "1"]
    status = flashcheck([
        "fuzz", "--impl", impl, "--budget", str(budget), "--seed", "1", "--device", "cpu",
        "--database", str(tmp_path / "examples"), "--json", str(result_file), *workers, *extra,
    ])
    return status, (json.loads(result_file.read_text()) if result_file.exists() else None)


def test_a_correct_implementation_is_never_flagged_and_the_run_keeps_to_its_budget(tmp_path):
    budget = 8
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--workers", "2", budget=budget)
    assert status == EXIT_OK
    assert not result["found"] and result["failures"] == []
    assert result["cases"] > 0 and len(result["by_property"]) > 1
    assert [worker["worker"] for worker in result["workers"]] == [0, 1]
    assert all(worker["device"] for worker in result["workers"])
    # Cases in flight at the end get a grace of max(2 s, 5%) to finish.
    assert budget * 0.9 <= result["seconds"] <= budget + 2.5


def test_each_worker_names_the_compile_classes_it_drew_in(tmp_path, monkeypatch):
    # The GPU's sizes draw in compile classes; two workers start in classes of their own, named as
    # each worker starts (GPU-sized cases may take the CPU longer than the budget).
    status, result = fuzz(tmp_path, "tests.support.standalone_kernels:correct", "--workers", "2", "--size", "gpu",
                          budget=6)
    assert status == EXIT_OK
    labels = [worker["classes"] for worker in result["workers"]]
    assert all(labels) and labels[0][0] != labels[1][0], labels
    assert all(label.split()[0] in ("float16", "bfloat16", "float32") for worker in labels for label in worker)
    printed = printed_summary(fuzz_engine.FuzzResult(**{"workers": result["workers"]}), monkeypatch, width=300)
    assert f"  in compile class: {labels[1][0]}" in printed.splitlines()


@pytest.mark.parametrize("counts, said", [([1, 1], "1 compile class per worker"),
                                          ([1, 3], "1-3 compile classes per worker")])
def test_the_pace_line_says_how_many_compile_classes_the_workers_drew_in(counts, said):
    result = fuzz_engine.FuzzResult(seconds=100.0)
    result.timed(30.0, 1.0, 0.5)
    result.workers = [{"worker": index, "compile_classes": count} for index, count in enumerate(counts)]
    assert fuzz_console._pace(result).endswith(said)


def test_by_default_one_worker_runs_per_core_up_to_sixteen_per_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(3)), raising=False)
    assert fuzz_workers.default_workers("cpu") == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert fuzz_workers.default_workers("cpu") == fuzz_workers.MAX_AUTO_WORKERS == 16
    # On CUDA never fewer workers than GPUs, so that every GPU is used.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert fuzz_workers.default_workers("cuda") == 3
    assert fuzz_workers.default_workers("cpu") == 1
    # Sixteen per GPU: a host of four GPUs and 64 cores runs 64.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert fuzz_workers.default_workers("cuda") == 64
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert fuzz_workers.default_workers("cuda") == 16
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--workers", "auto", budget=6)
    # What is asserted is the worker count; on a loaded machine their start-up may take the whole
    # budget (nothing checked, exit 3), which is not this test's concern.
    assert status in (EXIT_OK, EXIT_UNCHECKED) and [worker["worker"] for worker in result["workers"]] == [0, 1]


def test_every_property_takes_its_turn_and_the_reference_comparisons_every_third():
    features = protocol.features_of(buggy.correct)
    drawable = [p.name for p in PROPERTIES.values() if property_cases.drawable(p, features, "cpu")]
    primary = [name for name in fuzz_engine.PRIMARY if name in drawable]
    others = [name for name in drawable if name not in primary]
    turns = []  # the property of each case run, in order
    result = fuzz_engine.fuzz_in_process(
        buggy.correct, impl_name="tests.support.buggy:correct", budget=COUNTED_BUDGET, device="cpu",
        sizes=case_sizes.choose("interpreter"), seed=3,
        on_event=on(fuzz_events.Passed, lambda event: turns.append(event.property)),
        should_stop=lambda: set(turns) == set(drawable),
    )
    # A property measurable on CUDA only takes no turn on the CPU: it is not applicable there,
    # shown as such, and neither run nor declined.
    cuda_only = {p.name for p in PROPERTIES.values() if not p.runs_on("cpu")}
    assert cuda_only == {"repeated_calls_do_not_grow_memory"}
    assert cuda_only <= set(result.not_applicable) and not cuda_only & set(turns)
    assert result.declined == 0
    assert not result.found and set(turns) == set(drawable)
    # Each property's cases form one block (one turn), at most a turn's worth of examples.
    blocks = [prop for i, prop in enumerate(turns) if i == 0 or turns[i - 1] != prop]
    assert primary and blocks[:len(primary)] == primary, "the comparisons with the reference open the cycle"
    rest = blocks[len(primary):]
    assert sorted(name for name in rest if name in others) == sorted(others), "no other property has two turns"
    assert all(turns.count(prop) <= fuzz_engine.ROUND_EXAMPLES for prop in others)
    # After the opening, a reference comparison follows every two other properties, in rotation.
    step = fuzz_engine.OTHERS_PER_PRIMARY + 1
    assert [name for name in rest if name in primary] == [rest[i] for i in range(step - 1, len(rest), step)]
    assert [rest[i] for i in range(step - 1, len(rest), step)] == [
        primary[i % len(primary)] for i in range(len(rest) // step)]


def first_cases(seed, count, properties=("out_matches_reference",), **options):
    """(property, case spec) of the first ``count`` cases an in-process run of a correct
    implementation completes with ``seed``; ``options`` go to the engine."""
    cases = []
    fuzz_engine.fuzz_in_process(
        buggy.correct, impl_name="tests.support.buggy:correct", budget=COUNTED_BUDGET, device="cpu",
        sizes=case_sizes.choose("interpreter"), seed=seed, properties=list(properties),
        on_event=on(fuzz_events.Passed, lambda event: cases.append((event.property, event.case))),
        should_stop=lambda: len(cases) >= count,
        **options,
    )
    return cases


def test_a_worker_beside_the_first_leaves_the_simplest_cases_to_it():
    both = ("out_matches_reference", "lse_matches_reference")
    alone = first_cases(5, 8, both, simplest_run_elsewhere=False)
    beside = first_cases(5, 8, both, simplest_run_elsewhere=True)
    simplest = {prop: spec for prop, spec in reversed(alone)}  # each property's first case
    assert len(simplest) == 2 and all("seqlen_q=1 " in spec for spec in simplest.values())
    assert len(beside) >= 8 and not set(simplest.items()) & set(beside), "the simplest cases are left out"


def test_fuzzed_cases_cover_every_dtype_of_the_profile_in_proportion():
    # A turn is a fresh hypothesis run, and hypothesis makes its second example novel by
    # redrawing the first choice: were that choice the dtype, the first dtype (float16) would
    # never be fuzzed after the simplest case. The fuzzer spends its first choice on a nonce.
    sizes = case_sizes.choose("interpreter")
    drawn = []  # (property, case) of each case run
    fuzz_engine.fuzz_in_process(
        buggy.correct, impl_name="tests.support.buggy:correct", budget=COUNTED_BUDGET, device="cpu", sizes=sizes, seed=5,
        properties=["out_matches_reference", "grads_match_reference"],
        on_event=on(fuzz_events.Passed, lambda event: drawn.append((event.property, Case.from_spec(event.case)))),
        should_stop=lambda: len(drawn) >= 60,
    )
    simplest = {prop: case for prop, case in reversed(drawn)}  # each property's first case
    fuzzed = [case for prop, case in drawn if case != simplest[prop]]
    dtypes = Counter(case.dtype for case in fuzzed)
    assert set(dtypes) == set(sizes.dtypes), dtypes
    assert min(dtypes.values()) >= len(fuzzed) / len(sizes.dtypes) / 3, dtypes


def test_a_cycle_gives_the_reference_comparisons_every_third_turn():
    properties = list(PROPERTIES.values())
    primary = list(fuzz_engine.PRIMARY)
    others = [p.name for p in properties if p.name not in primary]
    turns = [p.name for p in fuzz_engine.cycle(properties, random.Random(0))]
    assert turns[:len(primary)] == primary and sorted(t for t in turns if t in others) == sorted(others)
    rest = turns[len(primary):]
    returning = rest[2::3]
    assert len(returning) == (len(others) - 1) // 2
    assert returning == [primary[i % len(primary)] for i in range(len(returning))]
    assert not any(name in primary for i, name in enumerate(rest) if i % 3 != 2)
    # Without other properties, or without reference comparisons, a cycle is the one kind.
    assert fuzz_engine.cycle([PROPERTIES["deterministic"]], random.Random(0)) == [PROPERTIES["deterministic"]]
    assert [p.name for p in fuzz_engine.cycle([PROPERTIES[n] for n in primary], random.Random(0))] == primary


def test_a_bug_is_found_shrunk_replayable_and_replayed_first_next_time(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.buggy:additive_mask", budget=120)
    assert status == EXIT_FOUND
    [failure] = result["failures"]
    assert failure["kind"] == "property" and failure["property"] in failure["replay"]
    assert 0 < failure["seconds"] <= result["seconds"]
    assert "error/allowed" in failure["evidence"] or "differ" in failure["evidence"]
    assert result["seconds"] < 60, "a bug this plain is found in seconds, not by spending the budget"
    out = capsys.readouterr().out
    assert "counterexample (shrunk)" in out and failure["replay"] in out

    # The replay line reproduces exactly that failure.
    replay = shlex.split(failure["replay"])
    assert replay[:2] == ["flashcheck", "check"]
    assert flashcheck(replay[1:] + ["--device", "cpu"]) == EXIT_FOUND

    # The example database hands the shrunk case back on the next run, whatever its seed,
    # before new cases are drawn (what it replays first is what it kept: the failure, and
    # the cases hypothesis's targeting found most interesting).
    status, again = fuzz(tmp_path, "tests.support.buggy:additive_mask", "--seed", "99", budget=120)
    assert status == EXIT_FOUND
    assert again["failures"][0]["case"] == failure["case"]
    assert again["cases"] < result["cases"]


def test_an_unseeded_run_draws_new_cases_at_every_turn_even_under_a_derandomized_profile():
    # Under CI hypothesis's active profile is derandomized; a turn that inherited it drew
    # the same examples every time, and a run stalled after two cases per property.
    active = settings.get_current_profile_name()
    settings.load_profile("ci")
    try:
        assert settings.default.derandomize
        assert len(first_cases(None, 12)) == 12
    finally:
        settings.load_profile(active)


def test_different_seeds_draw_different_cases():
    # Each turn's seed once was the run's seed plus the turn's number, so that seed 2 drew
    # seed 1's cases shifted by one turn.
    first, second = first_cases(1, 12), first_cases(2, 12)
    assert len(first) == len(second) == 12
    assert set(first[1:]).isdisjoint(second[1:]), "beyond the simplest case, which every run starts from"
    assert first_cases(1, 12) == first, "and the same seed draws the same cases"


def test_with_no_shrink_time_the_failure_is_reported_as_drawn():
    def reported_and_first_found(shrink_time):
        found = []
        result = fuzz_engine.fuzz_in_process(
            buggy.additive_mask, impl_name="tests.support.buggy:additive_mask", budget=120, device="cpu",
            sizes=case_sizes.choose("interpreter"), seed=1, properties=["out_matches_reference"],
            on_event=on(fuzz_events.Found, lambda event: found.append(event.failure.case)), shrink_time=shrink_time,
        )
        return result.failures[0].case, found[0]

    reported, first = reported_and_first_found(shrink_time=None)
    assert reported != first, "by default the first failure is shrunk (else this test could not tell)"
    reported, first = reported_and_first_found(shrink_time=0)
    assert reported == first


def test_the_command_labels_an_unshrunk_counterexample_as_drawn(tmp_path, capsys):
    status, _ = fuzz(tmp_path, "tests.support.buggy:additive_mask", "--shrink-time", "0", budget=60)
    assert status == EXIT_FOUND
    assert "counterexample (as drawn, not shrunk)" in capsys.readouterr().out


@pytest.mark.parametrize("impl, signal_name", [("tests.support.misbehaving:segfault", "SIGSEGV"),
                                               ("tests.support.misbehaving:abort", "SIGABRT")])
def test_a_worker_that_dies_is_a_failure_with_its_case_and_the_run_goes_on(tmp_path, impl, signal_name):
    status, result = fuzz(tmp_path, impl, "--max-crashes", "2", budget=60)
    assert status == EXIT_FOUND
    crashes = result["failures"]
    assert len(crashes) == 2, "the first crash does not end the run: a fresh worker goes on until --max-crashes"
    assert result["workers"][0]["processes"] >= 2
    for crash in crashes:
        assert crash["kind"] == "crash" and signal_name in crash["evidence"]
        assert crash["case"] is not None and crash["property"] is not None
        assert "seqlen_q=1 " not in crash["case"], "the case running when the worker died, not another"
        assert crash["case"] in crash["replay"]
        assert crash["replay"].endswith(f" --case-timeout {fuzz_workers.FuzzOptions.case_timeout:g}"), \
            "replayed in a worker, as the run ran it, so that the replay reports the crash rather than dying of it"
    stored = json.loads((tmp_path / "examples" / impl.replace(":", "_") / "crashes.json").read_text())
    assert {(entry["property"], entry["case"]) for entry in stored} == {(c["property"], c["case"]) for c in crashes}


def test_stored_crashes_are_replayed_first_and_forgotten_once_they_pass(tmp_path):
    status, first = fuzz(tmp_path, "tests.support.misbehaving:segfault", "--max-crashes", "1", budget=60)
    assert status == EXIT_FOUND
    status, second = fuzz(tmp_path, "tests.support.misbehaving:segfault", "--max-crashes", "1", budget=60)
    assert status == EXIT_FOUND
    assert second["failures"][0]["case"] == first["failures"][0]["case"]
    assert second["cases"] == 0, "the stored crash is the first case the next run tries"

    # The same database under a fixed implementation: the stored case passes and leaves the store.
    store = tmp_path / "examples" / "tests.support.misbehaving_segfault" / "crashes.json"
    fixed_store = tmp_path / "examples" / "tests.support.buggy_correct" / "crashes.json"
    fixed_store.parent.mkdir(parents=True)
    fixed_store.write_text(store.read_text())
    status, fixed = fuzz(tmp_path, "tests.support.buggy:correct", budget=6)
    assert status == EXIT_OK and fixed["cases"] >= 1
    assert json.loads(fixed_store.read_text()) == []


def test_replay_only_runs_the_stored_cases_and_draws_nothing_new(tmp_path):
    store = tmp_path / "examples" / "tests.support.buggy_correct" / "crashes.json"
    store.parent.mkdir(parents=True)
    spec = ("batch=1 seqlen_q=3 seqlen_k=5 heads=2 kv_heads=1 head_dim=8 dtype=float32 causal=False window=-1,-1 "
            "softmax_scale=None layout=contiguous values=normal seed=0")
    store.write_text(json.dumps([{"property": "out_matches_reference", "case": spec, "kind": "hang"}]))
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--replay-only", budget=60)
    assert status == EXIT_OK
    assert result["by_property"] == {"out_matches_reference": 1}, "the stored case, and nothing drawn"
    assert result["seconds"] < 30, "the run ends with the replay, not at the budget"


def test_a_case_that_hangs_is_killed_and_reported(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.misbehaving:hang", "--case-timeout", "2", "--max-crashes", "1", budget=60)
    assert status == EXIT_FOUND
    [hang] = result["failures"]
    assert hang["kind"] == "hang" and "timeout of 2 s" in hang["evidence"]
    assert hang["case"] is not None
    assert result["seconds"] < 30
    # Where the case was when the worker was killed, from the worker's own stacks: what tells a
    # kernel that never finishes from time the compile clock did not see.
    where = hang["evidence"].split("where its threads were (innermost call first):\n", 1)[1]
    assert where.startswith("  Current thread 0x") or where.startswith("  Thread 0x")
    assert 'misbehaving.py", line' in where.split("\n")[1], "the innermost frame is the implementation's sleep"
    # The replay line runs the case as the run did: in a worker, with the timeout that found
    # the hang (without it the case would run in the command's own process, never ending).
    assert hang["replay"].endswith(" --case-timeout 2") and hang["replay"] in capsys.readouterr().out
    started = time.monotonic()
    assert flashcheck(shlex.split(hang["replay"])[1:] + ["--device", "cpu"]) == EXIT_FOUND
    assert "hung for tests.support.misbehaving:hang" in capsys.readouterr().out
    assert time.monotonic() - started < 30


def test_time_spent_compiling_kernels_does_not_count_towards_the_case_timeout(tmp_path):
    # The same seconds per case, compiling in one and running in the other: only the
    # running counts against the 1 s timeout (a compilation of minutes is not a hang).
    (tmp_path / "compiling").mkdir(), (tmp_path / "running").mkdir()
    status, result = fuzz(tmp_path / "compiling", "tests.support.misbehaving:compiles_slowly", "--case-timeout", "1",
                          budget=4 * misbehaving.SLOW_SECONDS)
    assert status == EXIT_OK and result["failures"] == [] and result["cases"] >= 2
    status, result = fuzz(tmp_path / "running", "tests.support.misbehaving:runs_slowly", "--case-timeout", "1",
                          "--max-crashes", "1", budget=4 * misbehaving.SLOW_SECONDS)
    assert status == EXIT_FOUND
    [hang] = result["failures"]
    assert hang["kind"] == "hang" and "compiling" not in hang["evidence"]


def test_the_run_reports_its_pace_and_the_share_of_case_time_spent_compiling(tmp_path, capsys):
    # Every case of compiles_slowly with more than one query spends SLOW_SECONDS in an
    # announced compilation and almost nothing else; the correct pure-torch implementation
    # compiles nothing.
    (tmp_path / "compiling").mkdir(), (tmp_path / "plain").mkdir()
    status, result = fuzz(tmp_path / "compiling", "tests.support.misbehaving:compiles_slowly", budget=4 * misbehaving.SLOW_SECONDS)
    pace = result["pace"]
    assert status == EXIT_OK and sum(pace["cases_per_span"]) == result["cases"] >= 2
    assert pace["compile_seconds"] >= misbehaving.SLOW_SECONDS * 0.99
    assert pace["compile_seconds"] / pace["case_seconds"] > 0.9
    assert "of case time compiling" in capsys.readouterr().out
    status, result = fuzz(tmp_path / "plain", "tests.support.buggy:correct", budget=8)
    assert status == EXIT_OK and result["pace"]["compile_seconds"] == 0 < result["pace"]["case_seconds"]


def test_the_pace_is_counted_per_span_of_the_run():
    result = fuzz_engine.FuzzResult(seconds=95.0)
    for at in (1, 2, 59, 61, 94):
        result.timed(at, seconds=2.0, compiling=0.5)
    assert result.pace == [2, 0, 0, 0, 0, 1, 1, 0, 0, 1]
    assert result.rate(0, 60) == pytest.approx(3 / 60)
    assert result.rate(60) == pytest.approx(2 / 35)
    assert result.compile_share == pytest.approx(0.25)
    assert fuzz_engine.FuzzResult(seconds=5.0).rate(0, 60) is None  # an in-process run times no case


def test_a_case_still_running_when_the_budget_ends_is_reported_unfinished_not_passed(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.misbehaving:hang", "--case-timeout", "100", budget=6)
    assert status == EXIT_OK and result["failures"] == []
    [unfinished] = result["unfinished"]
    assert unfinished["case"] is not None and unfinished["running_for"] > 0
    assert "unfinished" in capsys.readouterr().out
    assert result["seconds"] < 15


def test_a_declared_known_divergence_is_reported_as_expected_not_as_a_finding(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.misbehaving:racy_declared", "--property", "deterministic",
                          "--property", "out_matches_reference", budget=6)
    assert status == EXIT_OK and result["failures"] == []
    [known] = result["known"]
    assert known["kind"] == "known" and known["property"] == "deterministic"
    assert "one output element moves" in known["evidence"]
    assert result["by_property"].get("out_matches_reference", 0) > 0, "the other properties go on"
    known_cases = result["known_cases"]["deterministic"]
    checked = result["cases"] + known_cases
    printed = capsys.readouterr().out
    assert "known divergence seen" in printed
    assert f"known divergences: {known_cases} of {checked} cases checked ({100 * known_cases / checked:.1f}%)" in printed


def test_a_divergence_confined_to_some_cases_leaves_the_others_checked(tmp_path):
    (tmp_path / "explained").mkdir(), (tmp_path / "unexplained").mkdir()
    status, result = fuzz(tmp_path / "explained", "tests.support.declared:too_large_when_causal", "--property", "out_matches_reference")
    assert status == EXIT_OK and result["failures"] == []
    [known] = result["known"]
    assert "causal=True" in known["case"] and "planted" in known["evidence"]
    assert result["by_property"].get("out_matches_reference", 0) > 0, "the uncovered cases go on being checked"
    status, result = fuzz(tmp_path / "unexplained", "tests.support.declared:too_large_everywhere", "--property", "out_matches_reference")
    assert status == EXIT_FOUND
    [finding] = result["failures"]
    assert finding["kind"] == "property" and "causal=False" in finding["case"]


@pytest.mark.parametrize("arguments, message", [
    (["--impl", "no_such_module:attention"], "no_such_module"),
    (["--impl", "nonexistent"], "unknown implementation"),
    (["--budget", "0"], "--budget"),
    (["--workers", "0"], "--workers"),
    (["--workers", "many"], "--workers"),
    (["--case-timeout", "-1"], "--case-timeout"),
    (["--shrink-time", "-1"], "--shrink-time: expected a non-negative number"),
    (["--property", "no_such_property"], "--property"),
])
def test_usage_errors_exit_2_naming_the_argument(arguments, message, capsys):
    assert flashcheck(["fuzz", "--device", "cpu", *arguments]) == EXIT_USAGE
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("impl, message", [
    ("tests.support.raises_at_import:attention", "flashcheck: --impl: cannot import module 'tests.support.raises_at_import' of "
                                         "'tests.support.raises_at_import:attention': RuntimeError: this module is broken at import"),
    ("tests.support.raises_base_exception_at_import:attention",
     "flashcheck: --impl: cannot import module 'tests.support.raises_base_exception_at_import' of "
     "'tests.support.raises_base_exception_at_import:attention': Abandoned: this module gave up at import"),
    ("tests.support.stubs:unknown_feature", "flashcheck: --impl tests.support.stubs:unknown_feature: flashcheck_features names unknown "
                                    "feature 'casual'; known: backward, bfloat16, causal,"),
    ("tests.support.stubs:device_kind_misspelt", "flashcheck: --impl tests.support.stubs:device_kind_misspelt: "
                                         "flashcheck_features_by_device names 'gpu', not a device kind torch knows"),
    ("tests.support.stubs:misnamed_not_applicable", "flashcheck: --impl tests.support.stubs:misnamed_not_applicable: "
                                            "flashcheck_not_applicable names unknown property 'empty_row_exact' "
                                            "(did you mean 'empty_rows_exact'?)"),
], ids=["raises-at-import", "raises-base-exception-at-import", "unknown-feature", "unknown-device-kind",
        "unknown-not-applicable-property"])
def test_an_implementation_that_cannot_load_or_names_an_unknown_feature_is_one_line_exit_2(impl, message, capsys):
    assert flashcheck(["fuzz", "--device", "cpu", "--workers", "1", "--budget", "5", "--impl", impl]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.strip().splitlines()) == 1, err


def test_a_stub_that_declines_every_case_is_not_a_pass_and_the_summary_tallies_the_reasons(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.stubs:declines_everything", "--property", "out_matches_reference",
                          "--property", "lse_matches_reference", budget=6)
    assert status == EXIT_UNCHECKED
    assert not result["found"] and not result["checked_anything"] and result["cases"] == 0
    declined = result["declined_by_property"]
    assert set(declined) == {"out_matches_reference", "lse_matches_reference"}
    assert all(set(reasons) == {"not written yet"} for reasons in declined.values())
    assert result["declined"] == sum(sum(reasons.values()) for reasons in declined.values()) > 0
    out = capsys.readouterr().out
    assert "no counterexample" not in out
    assert f"out_matches_reference: {declined['out_matches_reference']['not written yet']} declined: not written yet" in out
    assert "never checked (every case declined): lse_matches_reference, out_matches_reference" in out
    assert "nothing was checked" in out


def test_an_implementation_declaring_no_features_is_fuzzed_and_what_it_cannot_reach_is_not_applicable(tmp_path, capsys):
    # Without causal, window, mask or packing no key is hidden from any query: the masking
    # properties are known not applicable before drawing anything, as is lse's without "lse".
    hiding = "draws cases that hide keys from queries, which need one of the features causal, mask, window or varlen"
    expected = {"future_keys_cannot_change_output": hiding, "masked_keys_with_huge_logits_change_nothing": hiding,
                "unseen_keys_get_zero_gradient": "needs the feature backward",
                "lse_matches_reference": "needs the feature lse"}
    status, result = fuzz(tmp_path, "tests.support.stubs:no_features", "--property", "out_matches_reference",
                          *[argument for name in expected for argument in ("--property", name)], budget=6)
    assert status == EXIT_OK and result["failures"] == []
    assert result["by_property"].get("out_matches_reference", 0) > 0
    assert result["not_applicable"] == expected
    out = capsys.readouterr().out
    assert "4 properties not applicable to tests.support.stubs:no_features, not run:" in out
    assert f"{hiding}: future_keys_cannot_change_output, masked_keys_with_huge_logits_change_nothing" in out


def test_a_property_whose_filter_rejects_every_case_drawn_is_not_applicable_and_ends_the_run_early(tmp_path, capsys):
    # A mask and no band: no case is the band-only case mask_equal_to_band_matches_flag applies
    # to, which only hypothesis's filter finds out (hundreds of rejected draws). Once the last
    # property is dropped the run ends, whatever budget is left, and having checked nothing it
    # says so.
    budget = 600
    status, result = fuzz(tmp_path, "tests.support.stubs:mask_only", "--property", "mask_equal_to_band_matches_flag",
                          budget=budget)
    assert status == EXIT_UNCHECKED and result["cases"] == 0
    assert result["not_applicable"] == {"mask_equal_to_band_matches_flag": fuzz_engine.UNSATISFIABLE}
    assert result["seconds"] < budget / 2
    out = capsys.readouterr().out
    assert "1 property not applicable to tests.support.stubs:mask_only, not run:" in out
    assert f"{fuzz_engine.UNSATISFIABLE}: mask_equal_to_band_matches_flag" in out
    assert "no counterexample" not in out


def test_a_property_declared_not_applicable_is_not_run_and_shown_as_not_applicable_with_its_reason(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.stubs:square_causal_declared", "--property", "empty_rows_exact",
                          "--property", "out_matches_reference", budget=8)
    assert status == EXIT_OK and result["failures"] == []
    reason = f"{property_cases.DECLARED}: {stubs.SQUARE_CAUSAL_ONLY}"
    assert result["not_applicable"] == {"empty_rows_exact": reason}
    assert "empty_rows_exact" not in result["by_property"] and "empty_rows_exact" not in result["declined_by_property"]
    assert result["by_property"]["out_matches_reference"] > 0, "only the property it names is left out"
    printed = " ".join(capsys.readouterr().out.split())  # as read, whatever the console wrapped
    assert "1 property not applicable to tests.support.stubs:square_causal_declared, not run:" in printed
    assert " ".join(f"{reason}: empty_rows_exact".split()) in printed
    assert "never checked" not in printed


def test_only_properties_declared_not_applicable_is_a_usage_error_saying_why(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.stubs:square_causal_declared", "--property", "empty_rows_exact")
    assert status == EXIT_USAGE and result is None
    err = capsys.readouterr().err
    assert "no chosen property applies" in err and f"empty_rows_exact {property_cases.DECLARED}" in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_property_whose_every_case_is_declined_without_a_declaration_is_never_checked(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.stubs:square_causal_undeclared", "--property", "empty_rows_exact", budget=6)
    assert status == EXIT_UNCHECKED
    assert result["not_applicable"] == {} and not result["checked_anything"]
    assert set(result["declined_by_property"]) == {"empty_rows_exact"}
    assert "never checked (every case declined): empty_rows_exact" in capsys.readouterr().out


def test_the_engine_leaves_a_declared_property_out_before_drawing_a_case_for_it():
    seen = []
    result = fuzz_engine.fuzz_in_process(stubs.square_causal_declared, impl_name="declared", budget=3, device="cpu",
                                         sizes=case_sizes.choose("interpreter"), seed=1,
                                         properties=["empty_rows_exact", "out_matches_reference"],
                                         before_case=lambda prop, case: seen.append(prop),
                                         on_event=on(fuzz_events.NotApplicable,
                                                     lambda event: seen.append((event.property, event.reason))))
    assert seen[0] == ("empty_rows_exact", f"{property_cases.DECLARED}: {stubs.SQUARE_CAUSAL_ONLY}")
    assert "empty_rows_exact" not in seen and result.by_property["out_matches_reference"] > 0


def test_a_fatal_error_ends_the_worker_and_is_reported_fatal_with_its_replay_line(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.misbehaving:fatal_cuda_error", "--max-crashes", "1", budget=60)
    assert status == EXIT_FOUND
    [fatal] = result["failures"]
    assert fatal["kind"] == "fatal" and fatal["property"] is not None
    assert "seqlen_q=1 " not in fatal["case"], "the case that raised it, not another"
    assert fatal["replay"] and fatal["case"] in fatal["replay"]
    assert "CUDA error: an illegal memory access" in fatal["evidence"]
    assert "fatal error (the worker could run no further case; not shrunk)" in capsys.readouterr().out


def test_a_fault_a_divergence_declares_is_expected_and_its_worker_is_replaced_without_a_finding(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.declared:faults_when_causal", "--property", "out_matches_reference",
                          budget=20)
    assert status == EXIT_OK, result
    assert result["failures"] == [] and result["cases"] > 0
    [known] = result["known"]
    assert known["property"] == "out_matches_reference" and "causal=True" in known["case"]
    assert "illegal memory access" in known["evidence"] and "declared: planted" in known["evidence"]
    assert result["workers"][0]["processes"] >= 2, "the process the fault ended was replaced"
    assert "fatal error" not in capsys.readouterr().out


def test_in_one_process_a_fatal_error_ends_the_run_unshrunk():
    calls = Counter()

    def counting(q, k, v, **kwargs):
        calls["fatal" if q.shape[-3] > 1 else "fine"] += 1
        return misbehaving.fatal_cuda_error(q, k, v, **kwargs)

    counting.flashcheck_features = misbehaving.FEATURES
    result = fuzz_engine.fuzz_in_process(counting, impl_name="tests:counting", budget=60, device="cpu",
                             sizes=case_sizes.choose("interpreter"), seed=1)
    [fatal] = result.failures
    assert fatal.kind == "fatal" and "CUDA error" in fatal.evidence and fatal.reproduction()
    assert calls["fatal"] == 1, "no case runs after a fatal error: hypothesis must not shrink on a dead context"


def _property_with_a_bug(error):
    def check(impl, case, *, device=None):
        raise error
    return Property("property_with_a_bug", check, "a property whose own code raises")


@pytest.mark.parametrize("error", [ValueError("flashcheck's bug"), NotImplementedError("flashcheck's bug")],
                         ids=["ValueError", "NotImplementedError"])
def test_an_error_of_flashchecks_own_code_ends_the_run_as_flashchecks_never_as_a_finding_or_a_decline(
        error, monkeypatch):
    monkeypatch.setitem(PROPERTIES, "property_with_a_bug", _property_with_a_bug(error))
    declined = []
    with pytest.raises(FlashcheckError, match="a bug in flashcheck, not a finding about tests.support.buggy:correct") as raised:
        fuzz_engine.fuzz_in_process(buggy.correct, impl_name="tests.support.buggy:correct", budget=30, device="cpu",
                        sizes=case_sizes.choose("interpreter"), seed=1, properties=["property_with_a_bug"],
                        on_event=on(fuzz_events.Declined, declined.append))
    assert raised.value.original is error and "Traceback" in str(raised.value)
    assert declined == []


def test_running_out_of_memory_in_flashchecks_own_computation_leaves_the_case_unfinished_and_the_run_goes_on(
        monkeypatch):
    monkeypatch.setitem(PROPERTIES, "property_with_a_bug",
                        _property_with_a_bug(torch.OutOfMemoryError("CUDA out of memory (planted)")))
    short = []
    result = fuzz_engine.fuzz_in_process(buggy.correct, impl_name="tests.support.buggy:correct", budget=6,
                                         device="cpu", sizes=case_sizes.choose("interpreter"), seed=1,
                                         properties=["out_matches_reference", "property_with_a_bug"],
                                         on_event=on(fuzz_events.OutOfMemory, short.append))
    assert result.flashcheck_error is None and not result.found
    assert result.by_property["out_matches_reference"] > 0 and result.by_property["property_with_a_bug"] == 0
    assert short and len(result.unfinished) == len(short)
    assert {entry["reason"] for entry in result.unfinished} == {OUT_OF_MEMORY}
    assert all(entry["property"] == "property_with_a_bug" and entry["case"] for entry in result.unfinished)
    assert "CUDA out of memory (planted)" in short[0].report


@needs_interpreter_numpy
def test_a_worker_short_of_memory_in_flashchecks_own_computation_leaves_cases_unfinished_shown_and_exits_0(
        tmp_path):
    result_file = tmp_path / "result.json"
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", BUG_IN_FLASHCHECK, "--budget", "8",
               "--seed", "1", "--device", "cpu", "--workers", "1", "--database", str(tmp_path / "examples"),
               "--json", str(result_file), "--property", "out_matches_reference",
               "--property", "property_short_of_memory"]
    run = subprocess.run(command, cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == EXIT_OK, run.stdout + run.stderr
    result = json.loads(result_file.read_text())
    assert result["flashcheck_error"] is None and result["cases"] > 0
    short = [entry for entry in result["unfinished"] if entry.get("reason") == OUT_OF_MEMORY]
    assert short and all(entry["property"] == "property_short_of_memory" and entry["worker"] == 0 for entry in short)
    assert f"{len(short)} case{'s' if len(short) > 1 else ''} unfinished" in run.stdout
    assert OUT_OF_MEMORY in " ".join(run.stdout.split())


@needs_interpreter_numpy
def test_workers_at_the_end_of_the_budget_exit_on_their_own_releasing_their_libraries_locks(tmp_path):
    # The implementation's module makes multiprocessing locks at import, as FlagGems does: a worker
    # killed at the end of the budget leaves them to the resource tracker, which then warns, after
    # the summary, of "leaked semaphore objects". Workers between cases exit on their own instead.
    result_file = tmp_path / "result.json"
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", "tests.support.holds_locks:attention",
               "--budget", "6", "--device", "cpu", "--workers", "2", "--database",
               str(tmp_path / "examples"), "--json", str(result_file)]
    run = subprocess.run(command, cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == EXIT_OK, run.stdout + run.stderr
    result = json.loads(result_file.read_text())
    assert result["cases"] > 0 and not result["failures"]
    assert "leaked semaphore" not in run.stderr, run.stderr


#: The implementation and properties of tests/support/bug_in_flashcheck.py, which registers them when
#: imported: in a command of its own only.
BUG_IN_FLASHCHECK = "tests.support.bug_in_flashcheck:attention"


def fuzz_meeting_a_bug_in_flashcheck(tmp_path, *properties, environment=()):
    """Run ``flashcheck fuzz`` on :data:`BUG_IN_FLASHCHECK` with ``properties`` in a process of
    its own (seed 1, one worker); return the finished process and the JSON result."""
    result_file = tmp_path / "result.json"
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", BUG_IN_FLASHCHECK, "--budget", "300",
               "--seed", "1", "--device", "cpu", "--workers", "1", "--database", str(tmp_path / "examples"),
               "--json", str(result_file)]
    for name in properties:
        command += ["--property", name]
    run = subprocess.run(command, cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1", **dict(environment)},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == EXIT_INTERNAL, run.stdout + run.stderr
    # The summary first, then flashcheck's error with its traceback.
    assert "cases in" in run.stdout and "flashcheck's own code failed" in run.stdout
    assert f"a bug in flashcheck, not a finding about {BUG_IN_FLASHCHECK}" in run.stderr
    assert "Traceback (most recent call last)" in run.stderr
    assert "ValueError: a bug in this property's own code" in run.stderr
    result = json.loads(result_file.read_text())
    assert result["found"] and not result["interrupted"] and result["seconds"] < 300
    assert "flashcheck's own code raised ValueError" in result["flashcheck_error"]
    return run, result


@needs_interpreter_numpy
def test_an_error_of_flashchecks_own_code_in_a_worker_ends_the_run_keeping_what_it_found_and_exits_4(tmp_path):
    # The first worker crashes on its first case; the next one meets a bug in a property's own
    # code. The run ends as an interrupted one does, keeping the crash: the summary, the
    # --json result marked with flashcheck's error, then that error with its traceback, and exit 4.
    run, result = fuzz_meeting_a_bug_in_flashcheck(
        tmp_path, "out_matches_reference", "property_with_a_bug",
        environment={misbehaving.CRASHED_MARKER: str(tmp_path / "crashed")})
    [crash] = result["failures"]
    assert crash["kind"] == "crash" and crash["property"] == "out_matches_reference" and crash["case"]
    assert "while checking property property_with_a_bug" in result["flashcheck_error"]
    assert "crash of a worker process" in run.stdout and crash["replay"] in run.stdout
    # The crash is kept for the next run, as any crash is.
    stored = json.loads((crash_store.database_folder(tmp_path / "examples", BUG_IN_FLASHCHECK)
                         / crash_store.FILE_NAME).read_text())
    assert [(entry["property"], entry["case"]) for entry in stored] == [("out_matches_reference", crash["case"])]


@needs_interpreter_numpy
def test_an_error_of_flashchecks_own_code_while_a_failure_is_shrunk_reports_the_failure_as_drawn(tmp_path):
    run, result = fuzz_meeting_a_bug_in_flashcheck(tmp_path, "property_failing_then_with_a_bug")
    [failure] = result["failures"]
    assert failure["kind"] == "property" and failure["shrunk"] is False and "planted" in failure["evidence"]
    assert "counterexample (as drawn, not shrunk)" in run.stdout and failure["replay"] in run.stdout


def test_an_implementation_that_fails_to_load_in_the_worker_is_a_usage_error(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.refusing_worker:attention", budget=10)
    assert status == EXIT_USAGE and result is None
    assert "could not load" in capsys.readouterr().err


def interrupted_once(command, variable, marker, *, never, settle=0.0, signal_number=signal.SIGINT):
    """Run ``command`` (under Triton's interpreter, ``variable`` naming the file ``marker``),
    and send ``signal_number`` to it and its workers alike, as Ctrl-C in a terminal does (one
    process group), ``settle`` seconds after ``marker`` appears; its ``(exit status, stdout,
    stderr)``. Fails with ``never`` when the marker does not appear within 240 s."""
    environment = {**os.environ, "TRITON_INTERPRET": "1", variable: str(marker)}
    process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        started = time.monotonic()
        while not marker.exists() and process.poll() is None and time.monotonic() - started < 240:
            time.sleep(0.2)
        assert marker.exists(), never
        time.sleep(settle)
        os.killpg(process.pid, signal_number)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return process.returncode, out, err


@needs_interpreter_numpy
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_keeps_what_it_found_and_exits_130(tmp_path, signal_number):
    # Ctrl-C while the worker shrinks the failure it found, so that the failure is reported
    # as drawn, not shrunk; or SIGTERM, as `timeout` or a CI runner sends at a job's time limit,
    # answered alike.
    marker, result_file = tmp_path / "shrinking", tmp_path / "result.json"
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", "tests.support.misbehaving:shrinks_slowly",
               "--budget", "300", "--seed", "1", "--device", "cpu", "--workers", "1",
               "--property", "out_matches_reference", "--database", str(tmp_path / "examples"),
               "--json", str(result_file)]
    # The worker's report of its failure reaches the command in the half second after.
    status, out, err = interrupted_once(command, misbehaving.SHRINKING_MARKER, marker, settle=0.5,
                                        never="the run never reached its shrinking", signal_number=signal_number)
    assert status == 130, out + err
    assert "Traceback" not in err, err
    result = json.loads(result_file.read_text())
    assert result["interrupted"] and result["found"]
    [failure] = result["failures"]
    assert failure["kind"] == "property" and "planted" in failure["evidence"]
    assert "cases in" in out and "interrupted" in out, "the summary"
    assert "counterexample (as drawn, not shrunk)" in out and failure["replay"] in out
    # The case the worker was running is a step of that shrinking, not a case left unfinished.
    assert result["unfinished"] == [] and "unfinished" not in out


@needs_interpreter_numpy
def test_an_interrupted_replay_of_what_is_stored_reports_the_case_in_flight_and_exits_130(tmp_path):
    # Ctrl-C while --replay-only runs a stored case: the summary with that case unfinished,
    # the --json result marked interrupted, exit 130 and no traceback; neither a confirmed fix
    # nor "nothing replayed", and the case stays stored for the next run.
    marker, result_file, database = tmp_path / "hanging", tmp_path / "result.json", tmp_path / "examples"
    store = crash_store.database_folder(database, "tests.support.misbehaving:hangs_announced") / "crashes.json"
    store.parent.mkdir(parents=True)
    spec = ("batch=1 seqlen_q=3 seqlen_k=5 heads=2 kv_heads=2 head_dim=8 dtype=float32 causal=False window=-1,-1 "
            "softmax_scale=None layout=contiguous values=normal seed=0")
    entries = [{"property": "out_matches_reference", "case": spec, "kind": "hang"}]
    store.write_text(json.dumps(entries))
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", "tests.support.misbehaving:hangs_announced",
               "--replay-only", "--budget", "300", "--case-timeout", "300", "--device", "cpu", "--workers", "1",
               "--database", str(database), "--json", str(result_file)]
    status, out, err = interrupted_once(command, misbehaving.HANGING_MARKER, marker, never="the stored case never ran")
    assert status == 130, out + err
    assert "Traceback" not in err and "nothing replayed" not in err, err
    result = json.loads(result_file.read_text())
    assert result["interrupted"] and not result["found"] and result["cases"] == 0
    assert [(case["property"], case["case"]) for case in result["unfinished"]] == [("out_matches_reference", spec)]
    assert "interrupted after" in out and f"unfinished (neither passed nor failed): out_matches_reference on {spec}" \
        in " ".join(out.split()), out
    assert json.loads(store.read_text()) == entries, "kept, neither passed nor failed"


#: Runs the ``flashcheck`` command as its console script does (``from flashcheck.cli import
#: main``, then ``main()``), sending itself SIGINT, as Ctrl-C would, the moment module
#: ``sys.argv[1]`` starts to be imported: a point of the command's start-up reached the same
#: way every time. With ``sys.argv[2] == "swallowed"`` the KeyboardInterrupt is caught and
#: dropped there, as a library's broad ``except`` inside ``import torch`` once did.
CTRL_C_AT_IMPORT = """
import os, signal, sys
module, swallowed = sys.argv[1], sys.argv[2] == "swallowed"
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            sys.meta_path.remove(self)
            try:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10**5): pass  # the handler runs here at the latest
            except KeyboardInterrupt:
                if not swallowed:
                    raise
        return None
sys.meta_path.insert(0, CtrlC())
from flashcheck.cli import main
sys.exit(main(sys.argv[3:]))
"""


@needs_interpreter_numpy
@pytest.mark.parametrize("module, how", [("torch", "raised"), ("torch", "swallowed"), ("tests.support.buggy", "swallowed")],
                         ids=["importing-torch", "swallowed-in-torch", "swallowed-loading-the-implementation"])
def test_ctrl_c_during_start_up_reports_an_empty_interrupted_run_without_a_traceback(tmp_path, module, how):
    # Before any worker starts: the summary of a run that checked nothing, the --json result
    # marked interrupted, exit 130; never a traceback, and never the whole budget run as if
    # the Ctrl-C had not come.
    result_file, budget = tmp_path / "result.json", 60
    command = [sys.executable, "-c", CTRL_C_AT_IMPORT, module, how, "fuzz", "--impl", "tests.support.buggy:correct",
               "--budget", str(budget), "--device", "cpu", "--workers", "1",
               "--database", str(tmp_path / "examples"), "--json", str(result_file)]
    started = time.monotonic()
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=4 * budget)
    assert run.returncode == 130, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert time.monotonic() - started < budget / 2
    assert "0 cases in" in run.stdout and "interrupted after" in run.stdout, "the summary"
    result = json.loads(result_file.read_text())
    assert result["interrupted"] and result["cases"] == 0 and not result["found"]
    assert not (tmp_path / "examples").exists(), "no worker ran"


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_ctrl_c_while_a_worker_starts_reaches_the_command_and_not_the_worker(signal_number):
    # Ctrl-C reaches the command and the worker it is starting together (and so may a job's
    # SIGTERM). The worker ignores it from its first instruction on; the command takes it (at once
    # through another of its threads, or once the worker is started), where ignoring SIGINT
    # meanwhile, as it once did, dropped it: the run went on.
    caught = threading.Event()
    previous = fuzz_workers._catch_interruptions(caught)
    try:
        with fuzz_workers._interruptions_held():
            worker = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(2,))
            worker.start()
            os.kill(worker.pid, signal_number)
            os.kill(os.getpid(), signal_number)
        for _ in range(100):  # the handler runs in the main thread at its next chance
            if caught.is_set():
                break
            time.sleep(0.01)
        assert caught.is_set(), "the command's Ctrl-C was kept"
        worker.join(timeout=60)
        assert worker.exitcode == 0, "the worker went on"
    finally:
        interruption.restore(previous)


def tree(path: Path) -> list:
    """Everything under ``path``, with its modification time."""
    return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns) for p in path.rglob("*"))


def json_in_a_missing_folder(tmp_path, monkeypatch):
    return ["--json", str(tmp_path / "missing" / "result.json")], tmp_path / "missing", "does not exist"


def database_that_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "database").write_text("")
    return ["--database", str(tmp_path / "database")], tmp_path / "database", "expected a folder, found a file"


def database_in_an_unwritable_folder(tmp_path, monkeypatch):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root: permission bits do not bind, so answer as they would for a user
        access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: not (Path(path) == folder and mode & os.W_OK)
                            and access(path, mode, **kw))
    return ["--database", str(folder / "examples")], folder, "not writable"


@pytest.mark.parametrize("arrange", [json_in_a_missing_folder, database_that_is_a_file,
                                     database_in_an_unwritable_folder])
def test_an_output_that_cannot_be_written_is_refused_before_any_work_without_touching_anything(
        tmp_path, monkeypatch, capsys, arrange):
    arguments, named, expected = arrange(tmp_path, monkeypatch)
    monkeypatch.setattr(fuzz_workers, "fuzz", lambda *a, **k: pytest.fail("a worker was started"))
    before = tree(tmp_path)
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", *arguments, budget=30)
    assert status == EXIT_USAGE and result is None
    [line] = capsys.readouterr().err.strip().splitlines()
    assert arguments[0] in line and str(named) in line and expected in line, line
    assert tree(tmp_path) == before, "nothing created or changed"


@pytest.mark.parametrize("content", [
    '[{"property": "out_matches_reference", "case": "batch=1 seqlen_q=3', '{"property": "out_matches_reference"}',
    '["out_matches_reference"]'], ids=["truncated", "not a list", "entries not objects"])
def test_a_damaged_crash_store_is_an_error_naming_it_and_is_left_as_it_was(tmp_path, capsys, content):
    store = tmp_path / "examples" / "tests.support.buggy_correct" / "crashes.json"
    store.parent.mkdir(parents=True)
    store.write_text(content)
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", budget=4)
    assert status == EXIT_USAGE and result is None
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(store) in line
    assert store.read_text() == content, "never overwritten"


def test_a_stored_case_that_no_longer_parses_is_reported_once_as_stale_not_as_a_crash(tmp_path, capsys):
    store = tmp_path / "examples" / "tests.support.buggy_correct" / "crashes.json"
    store.parent.mkdir(parents=True)
    spec = ("batch=1 seqlen_q=3 seqlen_k=5 heads=2 kv_heads=1 head_dim=8 dtype=float32 causal=False window=-1,-1 "
            "softmax_scale=None layout=contiguous values=normal seed=0")
    entries = [{"property": "out_matches_reference", "case": "batch=1 seqlen_q=3 flavour=vanilla", "kind": "crash"},
               {"property": "a_renamed_property", "case": spec, "kind": "hang"},
               {"property": "out_matches_reference", "case": spec, "kind": "hang"}]
    store.write_text(json.dumps(entries))
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--replay-only", budget=60)
    assert status == EXIT_OK and result["failures"] == [], "a stale entry is not the implementation crashing"
    assert result["by_property"] == {"out_matches_reference": 1}, "the entry that parses is replayed"
    assert [(entry["property"], entry["case"]) for entry in result["stale"]] == \
        [(entry["property"], entry["case"]) for entry in entries[:2]]
    out = capsys.readouterr().out
    for stale in ("flavour=vanilla", "a_renamed_property"):
        assert len([line for line in out.splitlines() if stale in line]) == 1, out
    assert json.loads(store.read_text()) == entries[:2], "stale entries are kept (and the replayed one forgotten)"


def test_a_stored_case_outside_the_implementation_s_features_is_reported_as_stale_and_not_run(tmp_path, capsys):
    # Stored while the implementation declared "backward" and "causal"; it no longer does:
    # replaying would test what it does not claim (a gradient of a forward-only kernel).
    store = tmp_path / "examples" / "tests.support.stubs_no_features" / "crashes.json"
    store.parent.mkdir(parents=True)
    spec = ("batch=1 seqlen_q=3 seqlen_k=5 heads=2 kv_heads=2 head_dim=8 dtype=float32 causal=False window=-1,-1 "
            "softmax_scale=None layout=contiguous values=normal seed=0")
    entries = [{"property": "grads_match_reference", "case": spec, "kind": "crash"},
               {"property": "out_matches_reference", "case": spec.replace("causal=False", "causal=True"), "kind": "hang"},
               {"property": "out_matches_reference", "case": spec, "kind": "hang"}]
    store.write_text(json.dumps(entries))
    status, result = fuzz(tmp_path, "tests.support.stubs:no_features", "--replay-only", budget=60)
    assert status == EXIT_OK and result["failures"] == []
    assert result["by_property"] == {"out_matches_reference": 1}, "only the entry inside the features is replayed"
    problems = {(entry["property"], entry["case"]): entry["problem"] for entry in result["stale"]}
    assert "needs the feature backward" in problems[("grads_match_reference", spec)]
    assert "the case needs the feature causal" in problems[("out_matches_reference", entries[1]["case"])]
    assert json.loads(store.read_text()) == entries[:2], "kept, for the implementation that declares them again"
    assert capsys.readouterr().out.count("stale entry in") == 2


def test_a_stored_crash_that_now_fails_a_property_is_reported_as_stored_not_as_shrunk(tmp_path, capsys):
    store = tmp_path / "examples" / "tests.support.buggy_additive_mask" / "crashes.json"
    store.parent.mkdir(parents=True)
    spec = "batch=1 seqlen_q=2 seqlen_k=3 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=1 mask=random:0.0"
    store.write_text(json.dumps([{"property": "out_matches_reference", "case": spec, "kind": "crash"}]))
    status, result = fuzz(tmp_path, "tests.support.buggy:additive_mask", "--replay-only", budget=60)
    assert status == EXIT_FOUND
    [failure] = result["failures"]
    assert failure["kind"] == "property" and failure["shrunk"] is False
    out = capsys.readouterr().out
    assert "counterexample (as drawn, not shrunk)" in out and "counterexample (shrunk)" not in out


def test_replay_only_with_nothing_stored_says_so_and_is_no_confirmed_fix(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--replay-only", budget=30)
    assert status == EXIT_USAGE and result is None
    database = crash_store.database_folder(tmp_path / "examples", "tests.support.buggy:correct")
    assert f"nothing stored to replay in {database}" in capsys.readouterr().err
    # Examples stored under no key of the chosen properties: found only by replaying, and still no fix confirmed.
    (database / "0123456789abcdef").mkdir(parents=True)
    (database / "0123456789abcdef" / "fedcba9876543210").write_bytes(b"\x00\x01")
    status, result = fuzz(tmp_path, "tests.support.buggy:correct", "--replay-only", budget=30)
    assert status == EXIT_USAGE and result["cases"] == 0
    assert f"nothing replayed from {database}" in capsys.readouterr().err


def printed_summary(result, monkeypatch, *, width=60, impl="tests.support.misbehaving:segfault") -> str:
    """What the fuzz summary prints for ``result`` on a console ``width`` columns wide."""
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(fuzz_console, "console", Console(file=out, width=width))
    fuzz_console.print_fuzz_result(result, impl, "cpu")
    return out.getvalue()


def test_a_worker_that_began_no_case_is_named_so(monkeypatch):
    result = fuzz_engine.FuzzResult(seconds=240.0)
    result.workers = [{"worker": index, "gpu": "0", "device": "cuda:0", "capability": "9.0", "cases": 0,
                       "processes": 1, "compile_classes": None} for index in range(3)]
    result.unfinished = [{"property": "out_matches_reference", "case": "batch=1", "running_for": 200.0, "worker": 1}]
    lines = printed_summary(result, monkeypatch, width=200).splitlines()
    began_none = [line for line in lines if "began no case" in line]
    assert [line.split(":")[0] for line in began_none] == ["worker 0", "worker 2"], lines


def test_identical_crash_reports_print_once_with_their_count(monkeypatch):
    spec = "batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=4"
    died = "the worker process died with signal SIGSEGV (exit -11) while running out_matches_reference"

    def crash(case, thread, seconds):
        # What faulthandler quotes differs between processes (the thread's address), not the outcome.
        evidence = f"{died}\nthe worker's last output:\n  Current thread 0x{thread:016x} (most recent call first):"
        return fuzz_engine.Failure("crash", "out_matches_reference", case, evidence, "tests.support.misbehaving:segfault",
                                   seconds)

    result = fuzz_engine.FuzzResult(cases=3, seconds=9.0, failures=[
        crash(spec, 0x7f01, 1.0), crash(spec, 0x7f02, 2.0), crash(spec.replace("seed=4", "seed=5"), 0x7f03, 3.0),
        crash(spec, 0x7f04, 4.0)])
    out = printed_summary(result, monkeypatch, width=200)
    assert out.count(died) == 2, out
    assert out.count(f"case: {spec}\n") == 1 and "3 times" in out
    assert out.count("seed=5") == 2, "the other case, with its replay line"


def test_identical_hang_reports_print_once_with_their_count_whatever_their_seconds_of_compiling(monkeypatch):
    spec = "batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=4"
    ran_long = "the case ran longer than the per-case timeout of 120 s"

    def hang(case, compiling, seconds, evidence=None):
        # How long the case compiled differs between runs of it, not the outcome.
        evidence = evidence or (f"{ran_long} besides {compiling} s of compiling Triton kernels, which it does not "
                                f"count; the worker was killed")
        return fuzz_engine.Failure("hang", "out_matches_reference", case, evidence + "\nthe worker's last output:",
                                   "tests.support.misbehaving:hang", seconds, case_timeout=120.0)

    compiled_too_long = ("the case spent 731 s compiling Triton kernels, past the per-case timeout of 120 s and the "
                         "600 s more allowed for compiling; the worker was killed")
    result = fuzz_engine.FuzzResult(cases=3, seconds=900.0, failures=[
        hang(spec, 12, 130.0), hang(spec, 47, 260.0), hang(spec.replace("seed=4", "seed=5"), 3, 390.0),
        hang(spec, 5, 520.0), hang(spec, 0, 850.0, compiled_too_long)])
    out = printed_summary(result, monkeypatch, width=250, impl="tests.support.misbehaving:hang")
    assert out.count(ran_long) == 2, out
    assert "hang of a worker process (3 times)" in out
    assert out.count(f"case: {spec}\n") == 2, "the hang that compiled too long is another outcome"
    assert out.count("seed=5") == 2, "the other case, with its replay line"


def test_the_summary_keeps_its_numbers_whole_on_a_narrow_console(monkeypatch):
    result = fuzz_engine.FuzzResult(cases=0, seconds=1.5)
    assert "tests.support.buggy:correct on cpu: 0 cases in 1.5 s" in printed_summary(result, monkeypatch,
                                                                           impl="tests.support.buggy:correct")
    result.count("out_matches_reference", [])
    assert "1 cases in 1.5 s" in printed_summary(result, monkeypatch, impl="tests.support.buggy:correct")


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

#: Runs the command in a fresh process and reports whether that process ever set up CUDA.
_PARENT = """
import json, sys, torch
from flashcheck import cli, protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.engine import fuzz as fuzz_engine
from flashcheck.properties import PROPERTIES
from tests.support import buggy
status = cli.main(sys.argv[1:])
print(json.dumps({"status": status, "cuda_initialized": torch.cuda.is_initialized()}))
"""


def fuzz_on_cuda(tmp_path, impl, *extra):
    """``flashcheck fuzz --device cuda`` in a fresh process (this one may have used CUDA
    already): its exit status, its JSON result, and whether the parent initialised CUDA."""
    result_file = tmp_path / "result.json"
    arguments = ["fuzz", "--impl", impl, "--seed", "1", "--device", "cuda",
                 "--database", str(tmp_path / "examples"), "--json", str(result_file), *extra]
    run = subprocess.run([sys.executable, "-c", _PARENT, *arguments], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).parent.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    parent = json.loads(run.stdout.strip().splitlines()[-1])
    if parent["status"] != EXIT_OK:
        print(run.stdout, run.stderr)  # the run's report, shown by pytest when a test fails
    return parent["status"], json.loads(result_file.read_text()), parent["cuda_initialized"]


@pytest.mark.gpu
@cuda
def test_an_illegal_address_on_the_gpu_is_fatal_and_the_parent_never_touches_cuda(tmp_path):
    # One worker: with several, every worker's first case fails at about the same moment,
    # and each of those is reported, however low --max-crashes is.
    status, result, parent_used_cuda = fuzz_on_cuda(
        tmp_path, "tests.support.misbehaving:illegal_address", "--budget", "60", "--max-crashes", "1", "--workers", "1")
    assert status == EXIT_FOUND
    [fatal] = result["failures"]
    assert fatal["kind"] == "fatal" and fatal["case"] is not None and fatal["case"] in fatal["replay"]
    assert "illegal" in fatal["evidence"].lower()
    assert not parent_used_cuda, "the parent must stay free to spawn CUDA workers"


@pytest.mark.gpu
@cuda
def test_workers_are_spread_over_the_gpus(tmp_path):
    gpus = torch.cuda.device_count()
    # The plain pure-torch attention on the one property it passes by construction (its own
    # error is what the tolerance doubles), so that no finding can stop a worker early. The
    # budget counts the workers' start: beside ci/gpu.sh's 16 test workers on 16 cores, a
    # worker given 20 s finished no case on an H100 host.
    status, result, parent_used_cuda = fuzz_on_cuda(tmp_path, "tests.support.buggy:correct", "--budget", "60",
                                                    "--property", "out_matches_reference", "--workers", str(gpus))
    assert status == EXIT_OK
    # The GPU ids the fuzzer was given: this process's own CUDA_VISIBLE_DEVICES (pytest-xdist
    # workers are pinned to one GPU), else all of them.
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    expected_ids = [part.strip() for part in visible.split(",")] if visible else [str(i) for i in range(gpus)]
    assert [worker["gpu"] for worker in result["workers"]] == expected_ids
    assert all(worker["cases"] > 0 for worker in result["workers"])
    assert not parent_used_cuda


def test_releasing_cached_memory_on_the_cpu_leaves_cuda_uninitialised():
    code = ("import torch; from flashcheck import protocol; protocol.release_cached_memory('cpu'); "
            "protocol.release_cached_memory('cuda'); print(torch.cuda.is_initialized())")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("share, given_back", [(0.0, True), (1.0, False)], ids=["beyond-the-share", "within-it"])
def test_a_checked_case_gives_back_the_gpu_memory_it_cached_only_beyond_a_workers_share(monkeypatch, share,
                                                                                        given_back):
    # The float64 reference alone needs 2 x 4 x 2048^2 scores of 8 bytes (256 MiB) at a time.
    monkeypatch.setattr(protocol, "RELEASE_SHARE", share)
    case = Case(batch=2, seqlen_q=2048, seqlen_k=2048, heads=4, kv_heads=2, head_dim=64, dtype="float16")
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    verdict = decide(PROPERTIES["out_matches_reference"], buggy.correct, case, device="cuda",
                     impl_name="tests.support.buggy:correct")
    assert verdict.outcome is Outcome.PASSED
    taken = torch.cuda.max_memory_reserved() - before
    kept = torch.cuda.memory_reserved() - before
    assert taken >= 256 * 2**20, f"the case reserved only {taken} bytes at its peak"
    # What may stay is what the libraries keep for good (cuBLAS's workspaces come from the
    # same allocator; an H100 kept some after a first case), far below the case's own need.
    assert (kept <= taken // 4) == given_back, f"{kept} of the {taken} bytes reserved at the peak stayed reserved"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where nothing can be created")
@pytest.mark.parametrize("argument, path", [("--json", "/proc/flashcheck-result.json"),
                                            ("--database", "/proc/flashcheck-examples")])
def test_an_output_where_nothing_can_be_created_is_refused_before_any_work_whatever_the_permission_bits_say(
        tmp_path, monkeypatch, capsys, argument, path):
    # /proc lets root pass os.access(W_OK) and creates nothing: only trying tells.
    monkeypatch.setattr(fuzz_workers, "fuzz", lambda *a, **k: pytest.fail("a worker was started"))
    status = flashcheck(["fuzz", "--impl", "tests.support.buggy:correct", "--budget", "30", "--device", "cpu",
                         "--workers", "1", *(["--database", str(tmp_path / "examples")] if argument == "--json" else []),
                         argument, path])
    assert status == EXIT_USAGE
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"flashcheck: {argument} {path}") and "writ" in line, line
    assert not Path(path).exists()


def test_a_json_file_that_cannot_be_written_at_the_end_is_one_line_after_the_summary_not_a_traceback(
        tmp_path, monkeypatch, capsys):
    folder = tmp_path / "results"
    folder.mkdir()

    def run_that_loses_the_folder(options, **kwargs):
        folder.rmdir()  # as a clean-up job might, during a long run
        return fuzz_engine.FuzzResult(cases=3, seconds=1.0)

    monkeypatch.setattr(fuzz_workers, "fuzz", run_that_loses_the_folder)
    status = flashcheck(["fuzz", "--impl", "tests.support.buggy:correct", "--budget", "30", "--device", "cpu", "--workers",
                         "1", "--database", str(tmp_path / "examples"), "--json", str(folder / "result.json")])
    assert status == EXIT_USAGE
    captured = capsys.readouterr()
    assert "3 cases in" in captured.out, "the summary"
    [line] = captured.err.strip().splitlines()
    assert line.startswith(f"flashcheck: --json {folder / 'result.json'}: the result could not be written"), line
