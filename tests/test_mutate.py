"""The kernel's mutation catalogue and ``flashcheck mutate``.

The command tests fuzz real subprocesses in the interpreter, so they pick mutants that the
first case of one property kills, restrict the properties, and keep budgets to seconds.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console

from flashcheck import peers
from flashcheck.engine import crash_store, fuzz_workers, placement
from flashcheck.mutation import mutants
from flashcheck.mutation import report as mutation_report
from flashcheck.kernels import interface, mutations
from tests.support.cli_process import flashcheck, needs_interpreter_numpy

CATALOGUE = "flashcheck.kernels.mutations"
# 20 s per fuzz run: a worker's start alone took most of 6 s on a busy 2-core machine.
FAST = ["--budget", "20", "--seed", "0", "--jobs", "2", "--device", "cpu"]
#: Each of these mutants is killed by the first case with a non-empty row of one of these
#: properties, and only by it: lse in base 2 leaves out unchanged, and a bias of 1e-3 on
#: the accumulator leaves lse unchanged but breaks out(-V) = -out(V).
KILLS = {"lse_in_log2": "lse_matches_reference", "accumulator_bias": "value_linearity"}


# -- the catalogue ------------------------------------------------------------------------------


def test_catalogue_has_at_least_twenty_operators_and_each_applies_to_the_current_source():
    assert len(mutations.CATALOGUE) >= 20
    for mutation in mutations.CATALOGUE:
        mutated = mutations.apply(mutation)  # raises unless the fragment occurs as declared
        assert mutated != mutations.source(mutation.file), mutation.name
        assert mutation.operator in mutations.OPERATORS
        assert mutation.equivalent is None or len(mutation.equivalent) > 20, f"{mutation.name}: say why"


def test_a_mutant_beyond_the_suites_standard_names_the_kernel_test_that_kills_it():
    beyond = [mutation for mutation in mutations.CATALOGUE if mutation.beyond_standard]
    for mutation in beyond:
        named = re.search(r"tests/\S+\.py", mutation.beyond_standard)
        assert named, f"{mutation.name}: name the kernel's own test that kills it"
        test_file = Path(__file__).parent.parent / named.group(0)
        assert mutation.name in test_file.read_text(), f"{test_file} does not plant {mutation.name}"
    loaded = mutants.load_catalogue("flashcheck.kernels.mutations")
    assert {name for name, entry in loaded.items() if entry.beyond_standard} == {m.name for m in beyond}


def test_the_issue_examples_are_in_the_catalogue():
    names = set(mutations.MUTATIONS)
    assert {"v_load_unmasked", "k_load_unmasked", "skip_last_key_block", "drop_rescale", "drop_normalisation",
            "gqa_modulo_mapping", "lse_in_log2", "finite_sentinel", "drop_delta",
            "contiguous_query_assumed"} <= names


def test_a_fragment_that_no_longer_occurs_is_an_error():
    stale = mutations.Mutation("stale", "forward", "arithmetic", "x", "no such fragment", "y")
    with pytest.raises(ValueError, match="stale: fragment occurs 0 times in forward.py, expected 1"):
        mutations.apply(stale)


def test_a_mutant_resolves_by_module_and_attribute():
    impl = peers.resolve(f"{CATALOGUE}:drop_rescale")
    assert impl is mutations.drop_rescale  # built once, then cached
    assert impl.__name__ == "mutant_drop_rescale"
    assert impl.flashcheck_features == interface.FEATURES
    assert peers.resolve(f"{CATALOGUE}:original") is interface.flash_attention
    with pytest.raises(ValueError, match="has no attribute 'no_such_mutant'"):
        peers.resolve(f"{CATALOGUE}:no_such_mutant")


# -- how a fuzz subprocess ends --------------------------------------------------------------


def _fake_fuzz(monkeypatch, script: str):
    """Replace the fuzz command line by ``python -c script JSON_PATH``."""
    monkeypatch.setattr(mutants, "fuzz_command",
                        lambda impl, settings, json_path, database: [sys.executable, "-c", script, str(json_path)])


ENTRY = mutants.Entry("m", "arithmetic", "a bug")


def test_a_process_killed_by_a_signal_is_a_crash(monkeypatch, tmp_path):
    _fake_fuzz(monkeypatch, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    outcome = mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert (outcome.verdict, outcome.killed_by, outcome.signal) == ("killed", "crash", "SIGSEGV")
    assert outcome.result == "crash (SIGSEGV)"


def test_a_process_past_budget_and_grace_is_killed_as_a_hang(monkeypatch, tmp_path):
    _fake_fuzz(monkeypatch, "import time; time.sleep(60)")
    settings = mutants.MutantFuzzSettings(budget=0.2, grace=0.3, device="cpu", database=str(tmp_path))
    outcome = mutants.fuzz_one("x", ENTRY, settings)
    assert (outcome.verdict, outcome.killed_by, outcome.result) == ("killed", "hang", "hang")
    assert outcome.seconds < 30


@pytest.mark.parametrize("script, expected", [
    ("raise SystemExit(2)", "exited 2"),
    ("raise SystemExit(1)", "without a readable JSON result"),
    ("raise SystemExit(3)", "exited 3 (nothing was checked"),  # not a crash of the fuzzer: it checked nothing
    ("raise SystemExit(4)", "exited 4 (flashcheck's own error"),
])
def test_usage_errors_and_unreadable_results_are_errors_not_kills(monkeypatch, tmp_path, script, expected):
    _fake_fuzz(monkeypatch, script)
    outcome = mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert outcome.verdict == "error" and outcome.result == "ERROR"
    assert expected in outcome.detail


def test_the_counterexample_in_the_json_is_the_kill(monkeypatch, tmp_path):
    failure = {"kind": "property", "property": "out_matches_reference", "case": "seqlen_q=3",
               "evidence": "\nout differs\nmore", "replay": "flashcheck check ..."}
    result = {"found": True, "cases": 4, "seconds": 1.5, "failures": [failure]}
    _fake_fuzz(monkeypatch, f"import json, sys; open(sys.argv[1], 'w').write(json.dumps({result!r})); sys.exit(1)")
    outcome = mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert (outcome.verdict, outcome.property_name, outcome.cases, outcome.seconds) == (
        "killed", "out_matches_reference", 4, 1.5)
    assert outcome.evidence == "out differs"


def test_a_survivor_is_reported_with_what_its_fuzz_run_checked(monkeypatch, tmp_path):
    result = {"found": False, "cases": 12, "seconds": 40.2, "failures": [],
              "by_property": {"out_matches_reference": 9, "grads_match_reference": 3},
              "by_kind": {"float32": 12, "gqa": 5}, "pace": {"case_seconds": 80.0, "compile_seconds": 72.0},
              "workers": [{"worker": 0, "classes": ["float32 varlen, head dims 40, mixed, 4:2 heads"]},
                          {"worker": 1, "classes": None}]}
    _fake_fuzz(monkeypatch, f"import json, sys; open(sys.argv[1], 'w').write(json.dumps({result!r}))")
    outcome = mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert (outcome.verdict, outcome.checked, outcome.kinds) == ("survived", result["by_property"], result["by_kind"])
    assert outcome.compiling == pytest.approx(0.9)
    run = mutants.MutationRun("x", mutants.MutantFuzzSettings(budget=5, device="cpu"),
                              mutants.Outcome("original", verdict="survived"), [outcome])
    assert run.to_json()["mutants"][0]["checked"] == result["by_property"]
    console = Console(width=200, record=True)
    mutation_report.print_run(console, run)
    assert ("survivors:\n  m (arithmetic): a bug\n"
            "    checked: out_matches_reference 9, grads_match_reference 3\n"
            "    case kinds: float32 12, gqa 5\n"
            "    90% of case time compiling\n"
            "    worker 0 in compile class: float32 varlen, head dims 40, mixed, 4:2 heads\n") in console.export_text()


HANG = {"kind": "hang", "property": "out_matches_reference", "case": "seqlen_q=3",
        "evidence": "the case ran longer than the per-case timeout of 120 s; the worker was killed"}


@pytest.mark.parametrize("original_result, original_status, verdict", [
    ({"found": True, "cases": 0, "failures": [HANG]}, 1, "unconfirmed"),  # the original hangs there too
    ({"found": False, "cases": 0, "failures": []}, 0, "unconfirmed"),  # the replay did not finish
    ({"found": False, "cases": 1, "failures": []}, 0, "killed"),  # the original runs the case: the mutant's hang
])
def test_a_hang_on_a_case_is_a_kill_only_when_the_original_runs_that_case(
        monkeypatch, tmp_path, original_result, original_status, verdict):
    replays = []

    def command(impl, settings, json_path, database):
        if impl.endswith(":original"):
            stored = json.loads((crash_store.database_folder(database, impl) / "crashes.json").read_text())
            replays.append((stored, settings.properties, settings.case_timeout))
            result, status = original_result, original_status
            # The replay compiles from scratch, as the mutant did: any other exit is a crash.
            cold_cache = "import os; assert os.environ['TRITON_CACHE_DIR'].endswith('triton-cache'); "
        else:
            result, status = {"found": True, "cases": 4, "seconds": 9.0, "failures": [HANG]}, 1
            cold_cache = ""
        script = (f"{cold_cache}import json, sys; open(sys.argv[1], 'w').write(json.dumps({result!r})); "
                  f"sys.exit({status})")
        return [sys.executable, "-c", script, str(json_path)]

    monkeypatch.setattr(mutants, "fuzz_command", command)
    settings = mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path), case_timeout=3)
    outcome = mutants.fuzz_one("x", ENTRY, settings)
    assert replays == [([{"property": "out_matches_reference", "case": "seqlen_q=3", "kind": "hang"}],
                        ("out_matches_reference",), 3)]
    assert (outcome.verdict, outcome.killed_by, outcome.case) == (verdict, "hang", "seqlen_q=3")
    run = mutants.MutationRun("x", settings, mutants.Outcome("original", verdict="survived"), [outcome])
    assert (len(run.killed), run.score) == ((1, 1.0) if verdict == "killed" else (0, 0.0))
    if verdict == "unconfirmed":
        assert outcome.result == "UNCONFIRMED" and run.unconfirmed == [outcome]
        assert "replaying the case" in outcome.detail


def test_a_fatal_error_on_a_case_is_confirmed_on_the_original_as_a_crash_is(monkeypatch, tmp_path):
    fatal = {**HANG, "kind": "fatal", "evidence": "the worker process died with a fatal device error"}
    replayed = []

    def command(impl, settings, json_path, database):
        if impl.endswith(":original"):
            replayed.append(json.loads((crash_store.database_folder(database, impl) / "crashes.json").read_text()))
            result, status = {"found": False, "cases": 1, "failures": []}, 0
        else:
            result, status = {"found": True, "cases": 4, "seconds": 9.0, "failures": [fatal]}, 1
        script = f"import json, sys; open(sys.argv[1], 'w').write(json.dumps({result!r})); sys.exit({status})"
        return [sys.executable, "-c", script, str(json_path)]

    monkeypatch.setattr(mutants, "fuzz_command", command)
    outcome = mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert replayed == [[{"property": "out_matches_reference", "case": "seqlen_q=3", "kind": "fatal"}]]
    assert (outcome.verdict, outcome.killed_by) == ("killed", "fatal")


def _mutant_hangs_original_runs(monkeypatch) -> list:
    """Fake fuzz runs: the mutant ("…:m") hangs on a case, the original runs it. Returns the
    list that receives each run's settings, mutant's first."""
    seen = []

    def command(impl, settings, json_path, database):
        seen.append(settings)
        result = {"found": True, "cases": 4, "failures": [HANG]} if impl.endswith(":m") else {"found": False, "cases": 1}
        script = f"import json, sys; open(sys.argv[1], 'w').write(json.dumps({result!r})); sys.exit({int(result['found'])})"
        return [sys.executable, "-c", script, str(json_path)]

    monkeypatch.setattr(mutants, "fuzz_command", command)
    return seen


def test_the_replay_keeps_the_timeout_the_mutant_ran_under(monkeypatch, tmp_path):
    runs = _mutant_hangs_original_runs(monkeypatch)
    mutants.fuzz_one("x", ENTRY, mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path)))
    assert [run.case_timeout for run in runs] == [None, fuzz_workers.FuzzOptions.case_timeout], \
        "no timeout given: fuzz's default, both times"


def test_by_default_the_jobs_share_the_cores_among_their_workers(monkeypatch):
    from flashcheck.cli.commands import mutate as mutate_command

    monkeypatch.setattr(placement, "usable_cores", lambda: 16)
    assert [mutate_command.default_workers(jobs) for jobs in (1, 2, 5, 16, 40)] == [16, 8, 3, 1, 1]


def test_a_mutant_is_fuzzed_by_the_workers_asked_for_and_its_hang_replayed_by_one(monkeypatch, tmp_path):
    settings = mutants.MutantFuzzSettings(budget=5, device="cpu", database=str(tmp_path), workers=3)
    command = mutants.fuzz_command("x:m", settings, tmp_path / "r.json", tmp_path / "db")
    assert command[command.index("--workers") + 1] == "3"
    runs = _mutant_hangs_original_runs(monkeypatch)
    mutants.fuzz_one("x", ENTRY, settings)
    assert [run.workers for run in runs] == [3, 1]


def test_a_mutants_first_failure_is_not_shrunk_unless_asked(tmp_path):
    def shrink_time(settings):
        command = mutants.fuzz_command("x:m", settings, tmp_path / "r.json", tmp_path / "db")
        return float(command[command.index("--shrink-time") + 1])

    assert shrink_time(mutants.MutantFuzzSettings(budget=5, device="cpu")) == 0
    assert shrink_time(mutants.MutantFuzzSettings(budget=5, device="cpu", shrink_time=12)) == 12


# -- the command -------------------------------------------------------------------------------


@needs_interpreter_numpy
def test_chosen_mutants_are_killed_by_the_property_that_sees_their_bug(tmp_path, capsys):
    report = tmp_path / "matrix.json"
    status = flashcheck(["mutate", "--only", *KILLS, "--properties", *KILLS.values(), *FAST,
                   "--database", str(tmp_path / "db"), "--json", str(report)])
    output = capsys.readouterr().out
    assert status == 0, output
    matrix = json.loads(report.read_text())
    killed_by = {m["name"]: (m["verdict"], m["killed_by"], m["property_name"]) for m in matrix["mutants"]}
    assert killed_by == {name: ("killed", "property", prop) for name, prop in KILLS.items()}
    assert matrix["original"]["verdict"] == "survived"
    assert (matrix["killed"], matrix["scored"], matrix["score"]) == (2, 2, 1.0)
    assert "mutation score: 2/2 = 100.0%" in output


def test_a_mutation_that_changes_nothing_survives_unless_declared_equivalent(tmp_path, capsys):
    # A mutant survives only the cases it ran: a fuzz run that finished none checked nothing
    # (an error, not a survival), so each run needs the time for a few cases beside its start
    # (8 s ran none with two mutants' workers and another test sharing 2 cores).
    report = tmp_path / "matrix.json"
    status = flashcheck(["mutate", "--catalogue", "tests.support.noop_mutations", *FAST, "--budget", "20",
                   "--properties", "out_matches_reference", "--database", str(tmp_path / "db"), "--json", str(report)])
    output = capsys.readouterr().out
    assert status == 1, output
    matrix = json.loads(report.read_text())
    assert matrix["survivors"] == ["comment_only"]
    assert (matrix["killed"], matrix["scored"], matrix["score"]) == (0, 1, 0.0)  # the declared one is not scored
    assert "survivors:\n  comment_only (arithmetic): a comment added to the rescale" in output
    assert "declared equivalent (not scored):\n  declared_comment_only: only a comment changes" in output


def test_a_mutant_beyond_the_suites_standard_is_listed_with_its_reason_and_not_scored():
    settings = mutants.MutantFuzzSettings(budget=5, device="cpu")
    beyond = mutants.Outcome("offset_kept", "precision", "keeps an offset", beyond_standard="as plain float16 is",
                             verdict="survived", cases=40)
    caught = mutants.Outcome("offset_kept_too", "precision", "keeps it too", beyond_standard="as plain float16 is",
                             verdict="killed", killed_by="property", property_name="grads_match_reference")
    killed = mutants.Outcome("drop_rescale", "arithmetic", "no rescale", verdict="killed", killed_by="property",
                             property_name="out_matches_reference")
    run = mutants.MutationRun("x", settings, mutants.Outcome("original", verdict="survived"), [beyond, caught, killed])
    assert (run.survivors, run.killed, run.score) == ([], [killed], 1.0)
    assert beyond.result == "beyond standard" and run.killed_beyond_standard == [caught]
    assert run.to_json()["killed_beyond_standard"] == ["offset_kept_too"]
    console = Console(width=200, record=True)
    mutation_report.print_run(console, run)
    output = console.export_text()
    assert "mutation score: 1/1 = 100.0% (killed / (mutants - 0 declared equivalent - 2 beyond the suite's" in output
    assert "  offset_kept: as plain float16 is" in output
    assert "note: offset_kept_too, declared beyond the suite's standard, was killed by grads_match_reference" in output


def test_the_json_is_rewritten_after_each_mutant_so_a_stopped_run_keeps_its_matrix(monkeypatch, tmp_path):
    report, snapshot = tmp_path / "matrix.json", tmp_path / "while-the-last-ran.json"

    def command(impl, settings, json_path, database):
        # The last mutant's fuzz copies the report as it stands while it runs.
        copy = f"import shutil; shutil.copy({str(report)!r}, {str(snapshot)!r}); " if impl.endswith(":declared_comment_only") else ""
        return [sys.executable, "-c", f"{copy}import json, sys; open(sys.argv[1], 'w').write(json.dumps("
                f"{{'found': False, 'cases': 1}}))", str(json_path)]

    monkeypatch.setattr(mutants, "fuzz_command", command)
    flashcheck(["mutate", "--catalogue", "tests.support.noop_mutations", "--device", "cpu", "--budget", "3",
                "--database", str(tmp_path / "db"), "--json", str(report)])
    during = json.loads(snapshot.read_text())
    assert [m["name"] for m in during["mutants"]] == ["comment_only"] and during["pending"] == ["declared_comment_only"]
    after = json.loads(report.read_text())
    assert [m["name"] for m in after["mutants"]] == ["comment_only", "declared_comment_only"] and after["pending"] == []


@pytest.mark.parametrize("arguments, named", [
    (["--only", "no_such_mutant"], "--only: unknown mutants ['no_such_mutant']"),
    (["--catalogue", "no.such.module"], "--catalogue: cannot import 'no.such.module'"),
    (["--catalogue", "flashcheck.cases.case"], "--catalogue: 'flashcheck.cases.case' has no MUTATIONS"),
    (["--budget", "0"], "--budget: expected a positive number of seconds, got 0.0"),
    (["--jobs", "0"], "--jobs: expected at least 1, got 0"),
    (["--workers", "0"], "--workers: expected at least 1, got 0"),
    (["--case-timeout", "0"], "--case-timeout: expected a positive number of seconds, got 0.0"),
    (["--shrink-time", "-1"], "--shrink-time: expected a non-negative number of seconds, got -1.0"),
    (["--properties", "no_such_property"], "--properties: unknown ['no_such_property']"),
])
def test_usage_errors_exit_2_naming_the_argument(arguments, named, capsys):
    assert flashcheck(["mutate", "--device", "cpu", *arguments]) == 2
    assert named in capsys.readouterr().err


@needs_interpreter_numpy
def test_per_property_mode_fills_the_matrix_with_each_property_alone(tmp_path, capsys):
    report = tmp_path / "matrix.json"
    # 15 s per property: a fuzz worker's start (a spawned process importing torch and triton)
    # took most of 6 s on a busy 2-core machine, which then checked no case.
    status = flashcheck(["mutate", "--per-property", "--only", "lse_in_log2", *FAST, "--budget", "30",
                   "--properties", "out_matches_reference", "lse_matches_reference",
                   "--database", str(tmp_path / "db"), "--json", str(report)])
    output = capsys.readouterr().out
    assert status == 0, output
    matrix = json.loads(report.read_text())
    # out is exactly that of the correct kernel: only the lse property can see the bug.
    assert matrix["per_property"] == {
        "lse_in_log2": {"out_matches_reference": "SURVIVED", "lse_matches_reference": "lse_matches_reference"},
    }
    assert matrix["mutants"][0]["property_name"] == "lse_matches_reference"
    assert "lse_in_log2 × lse_matches_reference: lse_matches_reference" in output
