"""``flashcheck triage``: which failures of an earlier fuzz result an implementation's declarations
explain now, read the way a verdict reads them, without running anything.

The story it serves: a campaign fails on a kernel bug; the bug is confirmed and declared, confined
to its cases; the campaign's result, read again, says what is left to classify.
"""

from __future__ import annotations

import gzip
import json

import pytest

from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.engine.fuzz_result import RAISED
from tests.support import declared
from tests.support.cli_process import flashcheck
from tests.test_fuzz_command import fuzz

CASE = "batch=1 seqlen_q=5 seqlen_k=7 heads=2 kv_heads=2 head_dim=8 dtype=float32 causal={causal} seed=0"
CAUSAL, NOT_CAUSAL = CASE.format(causal=True), CASE.format(causal=False)


def record(kind: str, case: str | None, evidence: str = "out differs from the float64 reference",
           prop: str | None = "out_matches_reference") -> dict:
    """A failure as ``flashcheck fuzz --json`` records it (the fields triage reads, and a replay line)."""
    return {"kind": kind, "property": prop, "case": case, "evidence": evidence, "count": 1,
            "signature": f"{kind} | {prop} | {evidence.splitlines()[0]}", "replay": f"flashcheck check --case '{case}'"}


def triage(tmp_path, impl: str, *failures: dict, name: str = "result.json") -> int:
    path = tmp_path / name
    text = json.dumps({"impl": impl, "failures": list(failures)})
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return flashcheck(["triage", str(path)])


def test_a_declared_campaign_failure_is_explained_and_one_outside_the_declaration_is_not(tmp_path, capsys):
    # Declares the 1%-too-large output on causal cases only.
    status = triage(tmp_path, "tests.support.declared:too_large_everywhere",
                    record("property", CAUSAL), record("property", NOT_CAUSAL))
    out = capsys.readouterr().out
    assert status == EXIT_FOUND
    assert f"declared: {declared.CAUSAL_ONLY.reason}" in out
    assert "not explained: no declaration covers it" in out
    assert f"flashcheck check --case '{NOT_CAUSAL}'" in out, "each failure with its replay line"
    assert "1 of 2 distinct failures explained" in out


def test_every_failure_explained_exits_0_and_a_gzipped_result_is_read(tmp_path, capsys):
    status = triage(tmp_path, "tests.support.declared:too_large_declared_whole",
                    record("property", CAUSAL), record("property", NOT_CAUSAL), name="result.json.gz")
    assert status == EXIT_OK
    assert "2 of 2 distinct failures explained" in capsys.readouterr().out


def test_a_raised_error_is_explained_only_by_a_divergence_declared_to_raise_it(tmp_path, capsys):
    raised = record("property", CAUSAL, f"{RAISED} RuntimeError: {declared.LAUNCH_ERROR}")
    # The same causal cases, declared as a numerical divergence: the error stays a finding.
    assert triage(tmp_path, "tests.support.declared:raises_when_causal", raised) == EXIT_FOUND
    assert triage(tmp_path, "tests.support.declared:refuses_when_causal", raised) == EXIT_OK
    fatal = record("fatal", CAUSAL, f"fatal: {RAISED} AcceleratorError: {declared.FAULT}")
    assert triage(tmp_path, "tests.support.declared:faults_when_causal", fatal) == EXIT_OK
    assert triage(tmp_path, "tests.support.declared:faults_when_causal_undeclared", fatal) == EXIT_FOUND
    capsys.readouterr()


def test_the_error_of_a_declaration_outside_its_cases_is_left_a_finding_that_names_the_declaration(tmp_path, capsys):
    # The pytest path met FlagGems' reused autotuning at head dim 96 while it was declared from 128.
    error = f"{RAISED} OutOfResources: out of resource: shared memory, Required: 294912, Hardware limit: 232448."
    status = triage(tmp_path, "tests.support.declared:out_of_resources_everywhere",
                    record("property", NOT_CAUSAL, error), record("property", CAUSAL, error))
    out = capsys.readouterr().out
    assert status == EXIT_FOUND and "1 of 2 distinct failures explained" in out
    assert (f"not explained: no declaration covers it; note: this is the error a known divergence declares, raised "
            f"outside the cases it covers: {declared.BY_TYPE_NAME.reason}") in out


def test_a_crash_or_a_hang_is_never_explained(tmp_path, capsys):
    status = triage(tmp_path, "tests.support.declared:too_large_declared_whole",
                    record("crash", CAUSAL, "the worker process died (SIGSEGV)"), record("hang", None, "ran past 60 s"))
    out = capsys.readouterr().out
    assert status == EXIT_FOUND
    assert "not explained: a crash is never declared" in out and "not explained: a hang is never declared" in out


def test_a_built_in_adapters_declarations_are_read_without_its_library(tmp_path, capsys):
    # FlagGems' flash kernel: a window with one unbounded side, declared (docs/findings.md); FlagGems
    # need not be installed to read that.
    window = ("batch=1 seqlen_q=31 seqlen_k=31 heads=1 kv_heads=1 head_dim=64 dtype=float16 causal=False "
              "window=4,-1 layout=heads-first seed=0")
    plain = window.replace("window=4,-1", "window=-1,-1")
    status = triage(tmp_path, "flaggems-flash", record("property", window), record("property", plain))
    out = capsys.readouterr().out
    assert status == EXIT_FOUND
    assert "declared: flash_attention_forward gets sliding windows wrong" in out
    assert "1 of 2 distinct failures explained" in out


def test_a_campaigns_finding_is_explained_once_the_bug_is_declared(tmp_path, capsys):
    status, result = fuzz(tmp_path, "tests.support.declared:too_large_everywhere", "--keep-going",
                          "--property", "out_matches_reference")
    assert status == EXIT_FOUND and result["failures"], "the non-causal cases are findings as declared then"
    assert [worker["capability"] for worker in result["workers"]] == [None], "each worker records its GPU: none here"
    result_file = str(tmp_path / "result.json")
    assert flashcheck(["triage", result_file]) == EXIT_FOUND
    # Declared since on the whole property: nothing is left to classify.
    assert flashcheck(["triage", result_file, "--impl", "tests.support.declared:too_large_declared_whole"]) == EXIT_OK
    assert "distinct failures explained by its declarations; 0 not" in capsys.readouterr().out


@pytest.mark.parametrize("content, options, message", [
    (None, [], "RESULT: no such file"),
    ("not json", [], "RESULT: cannot read"),
    ('{"impl": "flash"}', [], "is not a result of flashcheck fuzz --json"),
    ('{"impl": "flash", "failures": [1]}', [], "is not a result of flashcheck fuzz --json"),
    ('{"failures": []}', [], "names no implementation; name one"),
    ('{"impl": "nonexistent", "failures": []}', [], "--impl: unknown implementation"),
    ('{"impl": "flash", "failures": []}', ["--gpu-capability", "sm90"], "--gpu-capability: expected MAJOR.MINOR"),
])
def test_a_result_that_cannot_be_triaged_is_one_line_naming_the_argument(tmp_path, capsys, content, options, message):
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content)
    assert flashcheck(["triage", str(path), *options]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and len(captured.err.strip().splitlines()) == 1


def test_a_gpu_result_read_where_there_is_no_gpu_says_that_gpu_dependent_declarations_explain_nothing(
        tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    path = tmp_path / "result.json"
    failure = record("property", NOT_CAUSAL)
    path.write_text(json.dumps({"impl": "tests.support.declared:too_large_everywhere", "device": "cuda",
                                "failures": [failure]}))
    assert flashcheck(["triage", str(path)]) == EXIT_FOUND
    assert "note: the result comes from a GPU it did not record and this machine has none" in capsys.readouterr().out
    path.write_text(json.dumps({"impl": "tests.support.declared:too_large_everywhere", "device": "cpu",
                                "failures": [failure]}))
    assert flashcheck(["triage", str(path)]) == EXIT_FOUND
    assert "note:" not in capsys.readouterr().out


def test_a_gpu_dependent_declaration_is_read_as_on_the_gpu_the_result_recorded(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # triaged where there is no GPU
    # FlashAttention-4's Hopper backward: head dim 72 is declared on sm90 only.
    failure = record("property", "batch=1 seqlen_q=128 seqlen_k=256 heads=4 kv_heads=1 head_dim=72 dtype=float16 "
                     "seed=0", "dq differs from the float64 reference", prop="grads_match_reference")
    path = tmp_path / "result.json"

    def result(capability):
        path.write_text(json.dumps({"impl": "fa4", "device": "cuda", "failures": [failure],
                                    "workers": [{"worker": 0, "capability": capability}]}))
        return flashcheck(["triage", str(path)])

    assert result("9.0") == EXIT_OK
    assert "read as on the result's GPU (compute capability 9.0)" in capsys.readouterr().out
    assert result("10.0") == EXIT_FOUND, "measured on sm90 only"
    assert result(None) == EXIT_FOUND
    assert "note: the result comes from a GPU it did not record" in capsys.readouterr().out
    # A result written before workers recorded their GPU: the GPU it ran on, named.
    assert flashcheck(["triage", str(path), "--gpu-capability", "9.0"]) == EXIT_OK
    assert "read as on the given GPU (compute capability 9.0)" in capsys.readouterr().out


def test_several_results_are_each_read_for_their_own_implementation_and_counted_together(tmp_path, capsys):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    declared_whole, declared_causal = ("tests.support.declared:too_large_declared_whole",
                                       "tests.support.declared:too_large_everywhere")
    assert triage(tmp_path / "a", declared_whole, record("property", CAUSAL)) == EXIT_OK
    assert triage(tmp_path / "b", declared_causal, record("property", NOT_CAUSAL)) == EXIT_FOUND
    capsys.readouterr()
    paths = [str(tmp_path / "a" / "result.json"), str(tmp_path / "b" / "result.json")]
    assert flashcheck(["triage", *paths]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert f"== {paths[0]}" in out and f"== {paths[1]}" in out
    assert "2 results: 1 of 2 distinct failures explained; 1 not" in out
    # One unreadable result among them: nothing is printed but the one line naming it.
    assert flashcheck(["triage", paths[0], str(tmp_path / "missing.json")]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == "" and "RESULT: no such file" in captured.err
