"""Recorded counterexamples (:mod:`flashcheck.regress.counterexamples`): a file of cases that
once broke a kernel, which ``flashcheck fuzz --counterexamples`` checks before it draws and
which ``flashcheck mutate`` hands to every mutant's run."""

from __future__ import annotations

import sys

import pytest

from flashcheck.kernels import mutations
from flashcheck.mutation import mutants
from flashcheck.regress import counterexamples
from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from tests.support.cli_process import flashcheck

MASKED_CASE = "batch=1 seqlen_q=4 seqlen_k=6 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=3 mask=random:0.5"


def recorded(tmp_path, text: str):
    path = tmp_path / "counterexamples.toml"
    path.write_text(text)
    return path


def entry(prop="out_matches_reference", case=MASKED_CASE, extra=""):
    return f'[[counterexample]]\nproperty = "{prop}"\ncase = "{case}"\n{extra}\n'


def test_a_file_reads_in_order_with_devices_defaulting_to_every_device(tmp_path):
    text = entry(extra='found = "a mask ignored"') + entry("lse_matches_reference", extra='devices = ["cuda"]')
    path = recorded(tmp_path, text)
    first, second = counterexamples.load(path)
    assert (first.property, first.devices, first.found) == ("out_matches_reference", ("cpu", "cuda"), "a mask ignored")
    assert second.devices == ("cuda",)
    assert counterexamples.for_device((first, second), "cpu") == [("out_matches_reference", first.case)]
    assert len(counterexamples.for_device((first, second), "cuda:1")) == 2


@pytest.mark.parametrize("text, message", [
    ("[[counterexample]\n", "not TOML"),
    ('[other]\nx = 1\n', "unknown top-level keys ['other']"),
    (entry(extra="seed = 3"), "counterexample 1: unknown keys ['seed']"),
    ('[[counterexample]]\ncase = "batch=1"\n', "counterexample 1: property: missing"),
    (entry("no_such_property"), "counterexample 1: property: unknown 'no_such_property'"),
    (entry(case="head_dim=0"), "counterexample 1: case: head_dim: expected"),
    (entry() + entry(extra='devices = ["tpu"]'),
     "counterexample 2: devices: expected a non-empty list of ['cpu', 'cuda']"),
    (entry(extra="devices = []"), "counterexample 1: devices: expected a non-empty list"),
    (entry(extra="found = 3"), "counterexample 1: found: expected a string, got 3"),
])
def test_a_bad_file_is_refused_naming_the_entry_and_the_key(tmp_path, text, message):
    with pytest.raises(ValueError) as raised:
        counterexamples.load(recorded(tmp_path, text))
    assert message in str(raised.value) and str(tmp_path) in str(raised.value)


def test_a_missing_file_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        counterexamples.load(tmp_path / "absent.toml")


def test_the_kernels_catalogue_records_its_counterexamples_in_a_file_that_loads():
    path = mutants.catalogue_counterexamples("flashcheck.kernels.mutations")
    assert path == str(mutations.COUNTEREXAMPLES)
    entries = counterexamples.load(path)
    assert entries and all(entry.found for entry in entries), "each says what it found"
    assert counterexamples.for_device(entries, "cpu"), "the interpreter has one of its own"


def fuzz_with(tmp_path, impl, path, *extra):
    import json

    result_file = tmp_path / "result.json"
    status = flashcheck(["fuzz", "--impl", impl, "--budget", "60", "--seed", "1", "--device", "cpu", "--workers", "1",
                         "--database", str(tmp_path / "examples"), "--json", str(result_file),
                         "--counterexamples", str(path), *extra])
    return status, (json.loads(result_file.read_text()) if result_file.exists() else None)


def test_a_recorded_case_is_checked_before_anything_is_drawn_and_reported_as_recorded(tmp_path, capsys):
    path = recorded(tmp_path, entry() + entry(extra='devices = ["cuda"]'))
    status, result = fuzz_with(tmp_path, "tests.support.buggy:ignores_mask", path)
    assert status == EXIT_FOUND
    [failure] = result["failures"]
    assert (failure["property"], failure["case"]) == ("out_matches_reference", counterexamples.load(path)[0].case)
    assert failure["shrunk"] is False, "reported as recorded"
    assert result["counterexamples"] == {"file": str(path), "run_first": 1, "not_run": 1}
    assert "recorded counterexamples: 1 of" in capsys.readouterr().out


def test_replay_only_with_recorded_cases_runs_exactly_those(tmp_path):
    path = recorded(tmp_path, entry())
    status, result = fuzz_with(tmp_path, "tests.support.buggy:correct", path, "--replay-only")
    assert status == EXIT_OK
    assert result["by_property"] == {"out_matches_reference": 1}


def test_a_bad_file_is_a_usage_error_before_any_work(tmp_path, capsys):
    status, result = fuzz_with(tmp_path, "tests.support.buggy:correct", recorded(tmp_path, entry("nope")))
    assert status == EXIT_USAGE and result is None
    err = capsys.readouterr().err
    assert "--counterexamples:" in err and "property: unknown 'nope'" in err


def test_every_mutant_run_checks_the_catalogues_file(tmp_path):
    settings = mutants.MutantFuzzSettings(budget=5, device="cpu", counterexamples="kernels/counterexamples.toml")
    command = mutants.fuzz_command("flashcheck.kernels.mutations:drop_rescale", settings, tmp_path / "r.json",
                                   tmp_path / "db")
    assert command[command.index("--counterexamples") + 1] == "kernels/counterexamples.toml"
    assert command[:3] == [sys.executable, "-m", "flashcheck.cli"]


def test_mutate_refuses_a_bad_file_before_fuzzing_anything(tmp_path, capsys):
    status = flashcheck(["mutate", "--device", "cpu", "--budget", "5", "--only", "drop_rescale",
                         "--counterexamples", str(recorded(tmp_path, entry("nope")))])
    assert status == EXIT_USAGE
    assert "--counterexamples:" in capsys.readouterr().err
