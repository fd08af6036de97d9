"""A run is a campaign (``flashcheck fuzz --keep-going``), and every bug leaves as a standalone
script (``flashcheck repro``, ``--repro-dir``) that runs without flashcheck."""

from __future__ import annotations

import ast
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from flashcheck import peers, repro
from flashcheck.cases.case import Case
from flashcheck.cli.commands import EXIT_FOUND, EXIT_OK, EXIT_USAGE
from flashcheck.engine.fuzz_result import Failure, FuzzResult, case_class
from flashcheck.engine.verdict import Outcome, decide
from flashcheck.properties import PROPERTIES
from tests.support.cli_process import flashcheck, needs_interpreter_numpy

KERNELS = "tests.support.standalone_kernels"


def campaign(tmp_path, impl, budget, *extra):
    result_file = tmp_path / "result.json"
    status = flashcheck(["fuzz", "--impl", f"{KERNELS}:{impl}", "--budget", str(budget), "--device", "cpu",
                         "--keep-going", "--shrink-time", "5", "--database", str(tmp_path / "examples"),
                         "--json", str(result_file), *extra])
    return status, json.loads(result_file.read_text())


# -- signatures ----------------------------------------------------------------------------------


def test_a_case_class_is_its_structure_and_band():
    assert case_class(Case(causal=True).spec()) == "dense causal"
    assert case_class(Case(window=(3, -1)).spec()) == "dense window"
    assert case_class(Case.packed(((2, 3), (1, 1))).spec()) == "packed no band"
    assert case_class(Case(mask="random:0.5").spec()) == "masked no band"


def test_failures_of_one_bug_share_a_signature_whatever_their_numbers():
    first = Failure("property", "out_matches_reference", Case(seqlen_q=5).spec(),
                    "out differs from the float64 reference\nMismatched elements: 3 / 80", "impl")
    other = Failure("property", "out_matches_reference", Case(seqlen_q=9, dtype="bfloat16").spec(),
                    "out differs from the float64 reference\nMismatched elements: 7 / 144", "impl")
    lse = Failure("property", "lse_matches_reference", Case(seqlen_q=5).spec(),
                  "lse differs from the float64 reference", "impl")
    assert first.signature == other.signature != lse.signature
    crash = Failure("crash", "out_matches_reference", Case(causal=True).spec(),
                    "the worker process died with signal SIGABRT (exit -6) while running out_matches_reference", "i")
    same_crash = Failure("crash", "deterministic", Case(causal=True, seed=4).spec(),
                         "the worker process died with signal SIGABRT (exit -6) while running deterministic", "i")
    assert crash.signature == same_crash.signature  # the process's failure, whichever property met it


def test_an_error_the_implementation_raises_is_one_failure_whichever_property_made_the_call():
    refused = "the implementation raised RuntimeError: cutlassF: no kernel found to launch!"
    forward = Failure("property", "outputs_finite", Case(head_dim=16).spec(), refused, "impl")
    backward = Failure("property", "grads_match_reference", Case(head_dim=16, seed=3).spec(), refused, "impl")
    other_error = Failure("property", "outputs_finite", Case(head_dim=16).spec(),
                          "the implementation raised ValueError: head_dim must be even", "impl")
    causal = Failure("property", "outputs_finite", Case(head_dim=16, causal=True).spec(), refused, "impl")
    assert forward.signature == backward.signature
    assert len({forward.signature, other_error.signature, causal.signature}) == 3, "the error and the class still tell"


def test_a_campaign_counts_a_repeated_signature_instead_of_reporting_it_again():
    result = FuzzResult()
    failure = Failure("property", "out_matches_reference", Case().spec(), "out differs", "impl")
    result.repeated(failure.signature)  # told before the worker shrinking it reported it
    assert result.add_failure(failure, campaign=True) is failure and failure.count == 2
    again = Failure("property", "out_matches_reference", Case(seed=3).spec(), "out differs", "impl")
    assert result.add_failure(again, campaign=True) is failure
    assert len(result.failures) == 1 and failure.count == 3
    assert result.to_json(impl_name="impl", device="cpu", budget=1)["failures"][0]["count"] == 3


def test_a_known_divergence_is_reported_once_per_run_however_many_workers_saw_it():
    result = FuzzResult()
    for worker in range(3):
        result.add_known(Failure("known", "backward_deterministic", Case(seed=worker).spec(), "dq differs", "impl"))
    result.add_known(Failure("known", "grads_match_reference", Case().spec(), "dq differs", "impl"))
    assert [(known.property, known.count) for known in result.known] == [
        ("backward_deterministic", 3), ("grads_match_reference", 1)]


def a_campaign_result() -> FuzzResult:
    """A result with a little of everything a campaign records."""
    result = FuzzResult(seconds=130.0, case_domain={"head_dims": [16]}, compile_key=["dtype"])
    for _ in range(40):
        result.count("out_matches_reference", ["float16", "causal"])
    result.decline("lse_matches_reference", "head dim 8 is not supported")
    result.add_failure(Failure("property", "out_matches_reference", Case(seed=1).spec(), "out differs", "impl"),
                       campaign=True)
    result.repeated(result.failures[0].signature)
    result.add_known(Failure("known", "deterministic", Case(seed=2).spec(), "out moves", "impl"))
    result.known_cases["deterministic"] += 3
    result.timed(100.0, 2.0, 1.5, (("inputs", 0.1),))
    result.pace = [1] * 6 + [2] * 7  # 0.1 cases/s in the first minute, 0.2 after it
    return result


def test_a_result_read_back_from_its_json_says_what_the_run_said():
    result = a_campaign_result()
    written = result.to_json(impl_name="impl", device="cpu", budget=120.0)
    again = FuzzResult.from_json(json.loads(json.dumps(written)))
    assert again.to_json(impl_name="impl", device="cpu", budget=120.0) == written
    assert again.rate(60) == result.rate(60) and again.checked == result.checked == 40 + 2 + 3


def test_the_campaign_table_row_counts_passed_declined_known_and_failing_cases(tmp_path):
    from flashcheck.devtools import campaign_table

    path = tmp_path / "impl-2.json"
    path.write_text(json.dumps(a_campaign_result().to_json(impl_name="impl", device="cpu", budget=120.0)))
    [_, _, line] = campaign_table.table([path]).splitlines()
    declined, known = f"1 ({1 / 46:.1%})", f"3 ({3 / 45:.1%})"
    assert line == f"| `impl-2` | 130 | 40 | 0.10 / 0.20 | 75% | {declined} | {known} | 1 (2) | 0 |"
    written = json.loads(path.read_text())
    del written["known_cases"]  # a result written before known cases were counted
    path.write_text(json.dumps(written))
    assert "| not counted |" in campaign_table.table([path])


# -- campaigns -----------------------------------------------------------------------------------

#: Properties that call the kernel once on the case as drawn: varlen_matches_separate_calls, say,
#: would meet the dense causal crash in dense calls made for a packed case (another case class),
#: and layout_invariance finds that plain torch's results depend on the strides on the CPU.
ONE_CALL = [item for name in ("out_matches_reference", "lse_matches_reference", "deterministic")
            for item in ("--property", name)]


#: The budget of a campaign that must meet a few bugs (and a crash more than once): far past the
#: seconds it takes on an idle machine, so that a loaded one (CI's workers side by side) still does.
MEETING_BUDGET = 40


def test_a_campaign_reports_two_independent_bugs_each_once(tmp_path):
    status, result = campaign(tmp_path, "two_bugs", MEETING_BUDGET, "--workers", "2", "--property", "out_matches_reference",
                              "--property", "lse_matches_reference")
    assert status == EXIT_FOUND
    signatures = [failure["signature"] for failure in result["failures"]]
    assert len(signatures) == len(set(signatures))
    assert "property | lse_matches_reference | lse differs from the float64 reference | dense no band" in signatures
    compared = ("property | out_matches_reference", "property | lse_matches_reference",
                "property | grads_match_reference")
    assert any(s.startswith(compared) and "causal" in s for s in signatures), signatures  # the off-by-one


def test_a_crashing_bug_neither_ends_the_campaign_nor_is_reported_twice(tmp_path):
    budget = MEETING_BUDGET
    status, result = campaign(tmp_path, "crashes_when_dense_causal", budget, "--workers", "2", "--max-crashes", "2",
                              *ONE_CALL)
    assert status == EXIT_FOUND
    crashes = [failure for failure in result["failures"] if failure["kind"] == "crash"]
    assert len(crashes) == 1, [failure["signature"] for failure in crashes]
    assert crashes[0]["signature"].endswith("| dense causal") and crashes[0]["count"] >= 2
    assert result["seconds"] >= budget * 0.9 and result["cases"] > 0


def test_without_keep_going_a_crash_limit_still_ends_the_run(tmp_path):
    result_file = tmp_path / "result.json"
    status = flashcheck(["fuzz", "--impl", f"{KERNELS}:crashes_when_dense_causal", "--budget", "60", "--device",
                         "cpu", "--max-crashes", "1", "--workers", "1", "--database", str(tmp_path / "examples"),
                         "--json", str(result_file), *ONE_CALL])
    result = json.loads(result_file.read_text())
    assert status == EXIT_FOUND and result["seconds"] < 50
    assert [failure["kind"] for failure in result["failures"]] == ["crash"]


def test_repro_dir_gets_one_script_per_distinct_failure(tmp_path):
    status, result = campaign(tmp_path, "lse_off_without_band", 10, "--workers", "1", "--property",
                              "lse_matches_reference", "--repro-dir", str(tmp_path / "scripts"))
    assert status == EXIT_FOUND
    scripts = [failure["script"] for failure in result["failures"]]
    assert scripts and all(script.startswith(str(tmp_path / "scripts")) for script in scripts)
    assert sorted(path.name for path in (tmp_path / "scripts").iterdir()) == sorted(
        script.rsplit("/", 1)[1] for script in scripts)


# -- standalone scripts --------------------------------------------------------------------------

DENSE = "batch=2 seqlen_q=5 seqlen_k=7 heads=2 kv_heads=1 head_dim=16 dtype=float16 causal=True layout=padded seed=3"
PACKED = ("batch=1 seqlen_q=8 seqlen_k=9 heads=2 kv_heads=1 head_dim=16 dtype=bfloat16 causal=True layout=mixed "
          "softmax_scale=0.5 seed=5 seqlens=3:4/0:2/5:3")
MASKED = "batch=2 seqlen_q=6 seqlen_k=6 heads=2 head_dim=16 dtype=float32 layout=heads-first seed=6 mask=random:0.5,rows:1"


#: Runs each script given on its command line in turn, in this one Python in which flashcheck cannot be
#: imported (one start of torch for them all), and prints ``{script: [exit status, output]}`` as JSON.
_RUN_WITHOUT_FLASHCHECK = """
import contextlib, io, json, runpy, sys
sys.modules["flashcheck"] = None
results = {}
for script in sys.argv[1:]:
    output = io.StringIO()
    sys.argv = [script]
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            runpy.run_path(script, run_name="__main__")
            status = 0
        except SystemExit as end:
            status = end.code
    results[script] = [status, output.getvalue()]
print(json.dumps(results))
"""


def run_without_flashcheck(scripts, cwd=None) -> dict:
    """``{script: (exit status, output)}`` of each script, run where ``import flashcheck`` fails
    (from ``cwd``, by default the first script's folder)."""
    run = subprocess.run([sys.executable, "-c", _RUN_WITHOUT_FLASHCHECK, *map(str, scripts)], capture_output=True,
                         text=True, cwd=cwd or scripts[0].parent, timeout=600)
    assert run.returncode == 0, run.stderr
    return {script: tuple(result) for script, result in json.loads(run.stdout.splitlines()[-1]).items()}


#: Planted bugs of :mod:`tests.support.standalone_kernels`, each with a property that catches it and a case
#: (dense, packed, masked; forward and gradients) where it shows.
PLANTED = [
    ("causal_off_by_one", "out_matches_reference", DENSE),
    ("causal_off_by_one", "lse_matches_reference", PACKED),
    ("across_documents", "out_matches_reference", PACKED),
    ("ignores_mask", "out_matches_reference", MASKED),
    ("causal_off_by_one", "grads_match_reference", PACKED),
    ("scaled_dq", "grads_match_reference", MASKED),
    ("ignores_mask", "unseen_keys_get_zero_gradient", MASKED.replace("random:0.5,rows:1", "key-padding:3/5")),
    ("causal_off_by_one", "empty_rows_exact", "batch=1 seqlen_q=6 seqlen_k=3 heads=1 head_dim=8 causal=True seed=2"),
    # The metamorphic properties a script decides, each from two calls.
    ("layout_dependent", "layout_invariance", "batch=2 seqlen_q=5 seqlen_k=7 heads=2 head_dim=8 dtype=float32 "
                                              "layout=heads-first seed=4"),
    ("batch_coupled", "batch_head_independence", "batch=2 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=8 "
                                                 "dtype=float32 causal=True seed=5"),
    ("batch_coupled", "batch_head_independence", "heads=4 kv_heads=2 head_dim=8 dtype=float32 seed=7 "
                                                 "seqlens=3:4/2:2/4:3 batch=1 seqlen_q=9 seqlen_k=9"),
    ("gqa_modulo", "gqa_matches_repeated_kv", "batch=1 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=8 "
                                              "dtype=float16 seed=6"),
    ("key_order_weighted", "key_permutation_invariance", DENSE.replace("causal=True ", "")),
    ("output_biased", "value_linearity", MASKED),
    ("output_biased", "value_linearity", PACKED),
    # The masking and shift properties, from two calls each.
    ("max_over_hidden_keys", "future_keys_cannot_change_output", DENSE.replace("float16", "float32")),
    ("max_over_hidden_keys", "future_keys_cannot_change_output", PACKED.replace("seed=5", "seed=6")),
    ("max_over_hidden_keys", "masked_keys_with_huge_logits_change_nothing", MASKED),
    ("causal_off_by_one", "mask_equal_to_band_matches_flag", DENSE),
    ("max_not_subtracted", "key_shift_invariance", DENSE.replace("seed=3", "seed=5")),
    ("max_not_subtracted", "key_shift_invariance", MASKED.replace("seed=6", "seed=8")),
    # Writes into the inputs, which every script checks around every call.
    ("writes_into_q", "inputs_unchanged", PACKED),
    ("writes_into_q", "out_matches_reference", DENSE),
    ("writes_into_k_in_backward", "backward_leaves_inputs_unchanged", MASKED),
    ("writes_into_k_in_backward", "grads_match_reference", DENSE),
    # Relations between a call and others on parts of it, gradients included.
    ("gqa_modulo", "gqa_grads_match_repeated_kv", "batch=1 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=8 "
                                                  "dtype=float32 seed=6"),
    ("gqa_modulo", "gqa_grads_match_repeated_kv", PACKED.replace("heads=2", "heads=4").replace("kv_heads=1", "kv_heads=2")),
    ("across_documents", "varlen_matches_separate_calls", PACKED),
    ("packed_scaled_dq", "varlen_matches_separate_calls", PACKED.replace("bfloat16", "float32")),
    ("across_documents", "varlen_matches_separate_calls",  # a sequence without keys gets the others'
     PACKED.replace("0:2/", "2:0/0:2/").replace("seqlen_q=8", "seqlen_q=10")),
    ("ignores_mask", "padded_batch_matches_unpadded", MASKED.replace("random:0.5,rows:1", "key-padding:3/0")),
    ("writes_before_out", "outputs_written_in_bounds", DENSE),
    ("writes_before_out", "outputs_written_in_bounds", PACKED),
    ("reads_past_q", "nan_padding_never_leaks", PACKED),
    ("reads_past_q", "nan_padding_never_leaks", PACKED.replace("bfloat16", "float32")),
]
#: The correct kernel of a property that needs a feature the plain one lacks.
CORRECT = {"outputs_written_in_bounds": "correct_out"}


def test_a_script_fails_on_each_planted_bug_and_holds_on_the_correct_kernel_without_flashcheck(tmp_path):
    expected = {}
    for number, (bug, property_name, spec) in enumerate(PLANTED):
        case = Case.from_spec(spec)
        correct = CORRECT.get(property_name, "correct")
        for impl_name, fails in ((f"{KERNELS}:{bug}", True), (f"{KERNELS}:{correct}", False)):
            impl = peers.resolve(impl_name)
            verdict = decide(PROPERTIES[property_name], impl, case, device="cpu", impl_name=impl_name)
            assert (verdict.outcome is Outcome.FAILED) == fails, verdict  # flashcheck's own verdict first
            script = repro.write(tmp_path / f"{number}-{impl_name.rsplit(':')[1]}.py", impl=impl,
                                 impl_name=impl_name, property_name=property_name, case=case, device="cpu")
            expected[str(script)] = (1 if fails else 0, "FAILS" if fails else "HOLDS", (bug, property_name, spec))
    for script, (status, output) in run_without_flashcheck([Path(path) for path in expected]).items():
        want_status, verdict, planted = expected[script]
        assert status == want_status and verdict in output, (planted, script, output)


def test_every_property_has_a_script():
    assert set(repro.SCRIPTED) == set(PROPERTIES)


def test_a_crash_script_of_a_property_registered_elsewhere_runs_the_backward_as_the_property_does(monkeypatch):
    from flashcheck.properties.registry import Property

    def never(impl, case, *, device=None):
        raise AssertionError("not run")

    for name, requires, uses, backward in (("needs_backward", {"backward"}, (), True),
                                           ("backward_where_declared", (), {"backward"}, "declared"),
                                           ("forward_only", (), (), False)):
        monkeypatch.setitem(PROPERTIES, name, Property(name, never, "a property of this test", frozenset(requires),
                                                       uses=frozenset(uses)))
        assert repro.scripted(name, "crash").backward == backward, name


def test_scripts_written_side_by_side_are_those_written_one_by_one(tmp_path):
    """A campaign's scripts are written in several processes at once: the same files, and a
    failure no script can decide says why, as in process."""
    impl_name = f"{KERNELS}:correct"
    requests = [repro.ScriptRequest(str(tmp_path / f"{folder}-{number}.py"), impl_name, property_name, spec, "cpu")
                for folder in ("alone", "pool")
                for number, (property_name, spec) in enumerate((("out_matches_reference", DENSE),
                                                                ("grads_match_reference", PACKED),
                                                                ("no_such_property", DENSE)))]
    alone = repro.write_all(requests[:3], processes=1)
    pooled = repro.write_all(requests[3:], processes=2)
    assert alone[2].startswith("none: ") and pooled[2] == alone[2]
    for one, other in zip(alone[:2], pooled[:2]):
        # The same script but for its payload's last bits: float64 sums of the allowances may
        # run in another order in another process.
        assert without_payload(Path(one).read_text()) == without_payload(Path(other).read_text())
    outcomes = run_without_flashcheck([Path(path) for path in alone[:2] + pooled[:2]])
    assert [status for status, _ in outcomes.values()] == [0, 0, 0, 0], outcomes


def without_payload(script: str) -> list[str]:
    """The lines of a script but its payload (``PAYLOAD = (`` and the quoted lines that follow)."""
    return [line for line in script.splitlines() if not line.startswith(("PAYLOAD", "    '"))]


def test_a_script_carries_the_inputs_bit_for_bit_with_their_strides(tmp_path):
    from flashcheck.repro import standalone

    case = Case.from_spec(PACKED)
    impl = peers.resolve(f"{KERNELS}:correct")
    packed = repro.payload(impl, case, "cpu", repro.SCRIPTED["out_matches_reference"], title="t")
    data = standalone.unpack(base64.b85encode(packed).decode("ascii"))
    for name, made in zip("qkv", case.materialize("cpu")):
        carried = standalone.place(data["inputs"][name], "cpu")
        assert carried.stride() == made.stride() and carried.storage_offset() == made.storage_offset()
        assert torch_equal_bits(carried, made)


def torch_equal_bits(a, b):
    import torch

    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.int16), b.contiguous().view(torch.int16))


def test_a_large_payload_lies_beside_its_script_and_the_script_finds_it_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.setattr(repro, "EMBEDDED_BYTES", 100)
    case = Case.from_spec(DENSE)
    folder = tmp_path / "scripts"
    folder.mkdir()
    paths = [repro.write(folder / f"{name}.py", impl=peers.resolve(f"{KERNELS}:{name}"), impl_name=f"{KERNELS}:{name}",
                         property_name="out_matches_reference", case=case, device="cpu")
             for name in ("causal_off_by_one", "correct")]
    assert sorted(path.name for path in folder.iterdir()) == [
        "causal_off_by_one.py", "causal_off_by_one.py.xz", "correct.py", "correct.py.xz"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = {Path(script): result for script, result in run_without_flashcheck(paths, cwd=elsewhere).items()}
    assert runs[paths[0]][0] == 1 and runs[paths[1]][0] == 0, runs


@pytest.mark.parametrize("property_name, kind", [("layout_invariance", "crash"), ("out_matches_reference", "fatal")])
def test_a_crash_script_says_when_the_cases_own_call_does_not_reproduce_it(tmp_path, property_name, kind):
    case = Case.from_spec(DENSE)
    script = repro.write(tmp_path / "crash.py", impl=peers.resolve(f"{KERNELS}:correct"),
                         impl_name=f"{KERNELS}:correct", property_name=property_name, case=case, device="cpu",
                         kind=kind)
    (status, output), = run_without_flashcheck([script]).values()
    assert status == 0 and "DID NOT REPRODUCE" in output and "HOLDS" not in output


@needs_interpreter_numpy  # the script runs the kernel in Triton's interpreter
def test_the_project_kernel_script_holds_on_the_project_kernel(tmp_path):
    case = Case.from_spec("batch=1 seqlen_q=5 seqlen_k=6 heads=2 kv_heads=1 head_dim=16 dtype=float16 causal=True seed=1")
    script = repro.write(tmp_path / "flash.py", impl=peers.resolve("flash"), impl_name="flash",
                         property_name="grads_match_reference", case=case, device="cpu")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1"}, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, named", [
    ({"--property": "no_such_property"}, "--property"),
    ({"--case": "batch=1 seqlen_q=x"}, "--case"),
    ({"--property": "empty_rows_exact"}, "does not apply"),
    ({"-o": "/nonexistent-folder/x.py"}, "--output"),
])
def test_repro_refuses_bad_input_before_writing_anything(tmp_path, capsys, change, named):
    arguments = {"--impl": f"{KERNELS}:correct", "--property": "out_matches_reference",
                 "--case": "batch=1 seqlen_q=4 seqlen_k=4", "-o": str(tmp_path / "x.py"), **change}
    status = flashcheck(["repro", "--device", "cpu", *[item for pair in arguments.items() for item in pair]])
    assert status == EXIT_USAGE
    error = capsys.readouterr().err
    assert named in error and len(error.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_repro_writes_a_script_and_says_how_to_run_it(tmp_path, capsys):
    path = tmp_path / "x.py"
    status = flashcheck(["repro", "--device", "cpu", "--impl", f"{KERNELS}:correct", "--property",
                         "deterministic", "--case", "batch=1 seqlen_q=4 seqlen_k=4", "-o", str(path)])
    assert status == EXIT_OK and path.exists() and f"python {path}" in capsys.readouterr().out


def test_a_repro_dir_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    status = flashcheck(["fuzz", "--impl", f"{KERNELS}:correct", "--device", "cpu", "--budget", "5",
                         "--repro-dir", str(blocker / "scripts"), "--database", str(tmp_path / "db")])
    assert status == EXIT_USAGE and "--repro-dir" in capsys.readouterr().err
    assert not (tmp_path / "db").exists()



# -- scripts of other libraries' kernels ------------------------------------------------------------


@pytest.mark.parametrize("adapter, spec", [
    ("fa4", "batch=2 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=16 causal=True window=3,-1 seed=1"),
    ("fa4-deterministic", "batch=1 seqlen_q=6 seqlen_k=4 heads=2 head_dim=8 window=2,1 softmax_scale=-0.5 seed=2"),
    ("fa4-varlen", "batch=2 seqlen_q=5 seqlen_k=7 heads=2 head_dim=16 causal=True layout=heads-first seed=3"),
    ("fa4-varlen", "heads=2 kv_heads=1 head_dim=16 causal=True seed=4 seqlens=3:4/0:2/2:2 batch=1 seqlen_q=5 "
                   "seqlen_k=8"),
    ("fa2", "batch=2 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=16 dtype=float16 causal=True window=3,-1 "
            "seed=10"),
    ("fa2-varlen", "batch=2 seqlen_q=6 seqlen_k=4 heads=2 head_dim=8 dtype=bfloat16 window=2,1 seed=11"),
    ("fa2-varlen", "heads=2 kv_heads=1 head_dim=16 dtype=float16 causal=True seed=12 seqlens=3:4/0:2/2:2 batch=1 "
                   "seqlen_q=5 seqlen_k=8"),
    ("xformers", "batch=2 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=16 dtype=float16 causal=True window=3,-1 "
                 "seed=16"),
    ("xformers", "batch=2 seqlen_q=6 seqlen_k=4 heads=2 head_dim=8 dtype=bfloat16 window=2,1 layout=heads-first "
                 "seed=17"),
    ("xformers", "batch=2 seqlen_q=6 seqlen_k=6 heads=4 kv_heads=2 head_dim=16 dtype=float16 seed=18 "
                 "mask=random:0.5,rows:1"),
    ("sdpa-public-math", "batch=2 seqlen_q=5 seqlen_k=5 heads=4 kv_heads=2 head_dim=16 causal=True seed=5"),
    ("sdpa-public-math", "batch=2 seqlen_q=6 seqlen_k=4 heads=2 head_dim=8 causal=True window=1,0 seed=6"),
    ("sdpa-public-math", MASKED),
    ("flaggems-flash", "batch=2 seqlen_q=5 seqlen_k=7 heads=4 kv_heads=2 head_dim=32 dtype=float16 causal=True "
                       "window=3,-1 layout=heads-first seed=7"),
    ("flaggems-varlen", "batch=2 seqlen_q=5 seqlen_k=7 heads=2 head_dim=16 dtype=float16 window=2,1 seed=8"),
    ("flaggems-sdpa", "batch=2 seqlen_q=5 seqlen_k=5 heads=4 kv_heads=2 head_dim=16 dtype=float16 causal=True "
                      "seed=13"),
    ("flaggems-sdpa", "batch=2 seqlen_q=6 seqlen_k=4 heads=2 head_dim=32 dtype=float16 causal=True window=1,0 "
                      "layout=heads-first seed=14"),
    ("flaggems-sdpa", "batch=2 seqlen_q=6 seqlen_k=6 heads=2 head_dim=16 dtype=bfloat16 layout=heads-first seed=15 "
                      "mask=random:0.5,rows:1"),
    ("flaggems-varlen", "heads=2 kv_heads=1 head_dim=16 dtype=bfloat16 causal=True seed=9 seqlens=3:4/0:2/2:2 "
                        "batch=1 seqlen_q=5 seqlen_k=8"),
    ("sdpa-math", "batch=2 seqlen_q=6 seqlen_k=4 heads=4 kv_heads=2 head_dim=8 causal=True window=1,0 seed=19"),
    ("sdpa-math", MASKED),
    ("sdpa-math", "heads=2 kv_heads=1 head_dim=16 causal=True window=2,-1 seed=20 seqlens=3:4/0:2/2:2 batch=1 "
                  "seqlen_q=5 seqlen_k=8"),
    ("flex", "batch=2 seqlen_q=6 seqlen_k=4 heads=4 kv_heads=2 head_dim=16 causal=True window=1,0 seed=25"),
    ("flex", "batch=2 seqlen_q=6 seqlen_k=6 heads=2 head_dim=16 layout=heads-first seed=26 mask=random:0.5,rows:1"),
    ("flex", "heads=2 kv_heads=1 head_dim=16 window=2,1 seed=27 seqlens=3:4/1:2/2:2 batch=1 seqlen_q=6 seqlen_k=8"),
])
def test_a_script_calls_the_library_itself_exactly_as_the_adapter_does(monkeypatch, adapter, spec):
    from flashcheck.peers import fa2, fa4
    from flashcheck.repro import calls
    from tests.support import peer_fakes

    monkeypatch.setitem(sys.modules, "flash_attn", peer_fakes.fake_fa2())
    monkeypatch.setattr(fa2, "_capability", lambda device: (8, 0))
    monkeypatch.setitem(sys.modules, "flash_attn.cute", peer_fakes.fake_fa4())
    monkeypatch.setitem(sys.modules, "flag_gems.ops", peer_fakes.fake_flaggems())
    monkeypatch.setitem(sys.modules, "xformers.ops", peer_fakes.fake_xformers())
    monkeypatch.setattr(fa4, "_capability", lambda device: (9, 0))
    section = calls.call_section(adapter)
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(section.source))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    # triton: FlagGems' autotuners run pinned (flashcheck.autotune_pin); FlagGems needs it anyway
    assert imported - set(sys.stdlib_module_names) <= {"torch", "flash_attn", "flag_gems", "xformers"} | (
        {"triton"} if adapter.startswith("flaggems") else set())
    namespace = {}
    exec(section.source, namespace)  # noqa: S102 - the script's kernel section, as the script runs it
    case = Case.from_spec(spec)
    q, k, v = case.materialize("cpu")
    kwargs = case.attention_kwargs("cpu")
    if adapter in peers.PEERS:  # another library's adapter, here on its CPU fake
        adapter_itself = peer_fakes.on_cpu(peers.describe(adapter))
    else:  # torch's own
        adapter_itself = peers.resolve(adapter)
    expected = adapter_itself(q, k, v, **kwargs)
    got = namespace["attention"](q, k, v, **kwargs)
    for a, b in zip(got, expected):
        assert (a is None and b is None) or (a.shape == b.shape and a.stride() == b.stride() and torch.equal(a, b))


#: torch's private fused operators run on CUDA only.
FUSED = [
    ("sdpa-flash", "batch=2 seqlen_q=5 seqlen_k=5 heads=4 kv_heads=2 head_dim=20 dtype=float16 causal=True seed=21"),
    ("sdpa-cudnn", "batch=2 seqlen_q=6 seqlen_k=4 heads=2 head_dim=64 dtype=bfloat16 layout=heads-first seed=22"),
    ("sdpa-efficient", "batch=2 seqlen_q=6 seqlen_k=4 heads=4 kv_heads=2 head_dim=16 dtype=float32 causal=True "
                       "window=1,0 seed=23"),
    ("sdpa-efficient", "batch=2 seqlen_q=6 seqlen_k=6 heads=2 head_dim=16 dtype=float16 seed=24 "
                       "mask=random:0.5,rows:1"),
]


@pytest.mark.parametrize("adapter", sorted({name for name, _ in FUSED}))
def test_a_fused_operator_s_script_imports_torch_alone(adapter):
    from flashcheck.repro import calls

    section = calls.call_section(adapter)
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(section.source))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert imported - set(sys.stdlib_module_names) == {"torch"}
    exec(section.source, {})  # noqa: S102 - defines the call without running it


@pytest.mark.gpu
@pytest.mark.parametrize("adapter, spec", FUSED)
def test_a_fused_operator_s_script_calls_it_exactly_as_the_adapter_does(device, adapter, spec):
    from flashcheck.repro import calls

    namespace = {}
    exec(calls.call_section(adapter).source, namespace)  # noqa: S102 - the script's kernel section
    case = Case.from_spec(spec)
    q, k, v = case.materialize(device)
    kwargs = case.attention_kwargs(device)
    expected = peers.resolve(adapter)(q, k, v, **kwargs)
    got = namespace["attention"](q, k, v, **kwargs)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.stride() == b.stride() and torch.equal(a, b)


@pytest.mark.gpu
def test_a_memory_script_fails_on_a_kernel_that_keeps_its_outputs_and_holds_on_the_correct_one(tmp_path):
    case = Case.from_spec("batch=2 seqlen_q=256 seqlen_k=256 heads=4 head_dim=64 dtype=float16 seed=1")
    scripts = {}
    for bug, fails in (("keeps_every_output", True), ("correct", False)):
        impl_name = f"{KERNELS}:{bug}"
        impl = peers.resolve(impl_name)
        verdict = decide(PROPERTIES["repeated_calls_do_not_grow_memory"], impl, case, device="cuda", impl_name=impl_name)
        assert (verdict.outcome is Outcome.FAILED) == fails, verdict
        path = repro.write(tmp_path / f"{bug}.py", impl=impl, impl_name=impl_name,
                           property_name="repeated_calls_do_not_grow_memory", case=case, device="cuda")
        scripts[str(path)] = 1 if fails else 0
    for script, (status, output) in run_without_flashcheck([Path(path) for path in scripts]).items():
        assert status == scripts[script], output


def test_a_script_checks_once_more_where_a_pinned_autotuner_moved_during_a_failed_check(monkeypatch, capsys):
    from flashcheck.repro import standalone
    from tests.support import standalone_kernels

    case = Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 head_dim=8")
    how = repro.scripted("out_matches_reference")
    data = repro.payload(standalone_kernels.correct, case, "cpu", how, title="a pinned kernel")
    text = base64.b85encode(data).decode("ascii")
    moved = [0]
    monkeypatch.setattr(standalone, "moves", lambda: moved[0], raising=False)  # as a script pinning carries it

    def wrong_once(move):
        calls = []

        def attention(q, k, v, **kwargs):
            calls.append(None)
            out, lse = standalone_kernels.correct(q, k, v, **kwargs)
            if len(calls) == 1:
                moved[0] += move
                return out + 1, lse
            return out, lse
        return attention

    assert standalone.main(wrong_once(1), text, []) == 0
    assert "checked once more" in capsys.readouterr().out
    assert standalone.main(wrong_once(0), text, []) == 1, "no move: the failure stands"


def test_a_script_says_it_cannot_check_on_a_device_its_kernel_does_not_run_on_before_calling_it(capsys):
    from flashcheck.repro import standalone
    from tests.support import standalone_kernels

    calls = []

    def cuda_only(q, k, v, **kwargs):
        calls.append(None)
        return standalone_kernels.correct(q, k, v, **kwargs)

    cuda_only.flashcheck_features_by_device = {"cuda": frozenset({"causal", "lse"}), "cpu": frozenset()}
    case = Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 head_dim=8")
    data = repro.payload(cuda_only, case, "cpu", repro.scripted("out_matches_reference"), title="a CUDA kernel")
    text = base64.b85encode(data).decode("ascii")
    assert standalone.main(cuda_only, text, ["--device", "cpu"]) == 2
    assert "CANNOT CHECK: the kernel runs on cuda only, not on cpu" in capsys.readouterr().out
    assert standalone.main(cuda_only, text, ["--device", "gpu0"]) == 2
    assert "--device 'gpu0' is not a torch device" in capsys.readouterr().out
    assert calls == [], "nothing is called where the check cannot be made"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_script_says_it_cannot_check_on_cuda_where_the_machine_has_none(capsys):
    from flashcheck.repro import standalone
    from tests.support import standalone_kernels

    case = Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 head_dim=8")
    data = repro.payload(standalone_kernels.correct, case, "cpu", repro.scripted("out_matches_reference"),
                         title="a kernel")
    text = base64.b85encode(data).decode("ascii")
    assert standalone.main(standalone_kernels.correct, text, ["--device", "cuda"]) == 2
    assert "CANNOT CHECK: no CUDA device here" in capsys.readouterr().out
    assert standalone.main(standalone_kernels.correct, text, ["--device", "cpu"]) == 0


def test_a_memory_script_says_it_cannot_check_where_torch_counts_no_memory():
    from flashcheck.repro import standalone
    from tests.support import standalone_kernels

    q, k, v = Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 head_dim=8").materialize("cpu")
    with pytest.raises(standalone.CannotCheck, match="--device cuda"):
        standalone.memory_flat(standalone_kernels.correct, q, k, v, {}, None, None, 4, 1 << 20)


@pytest.mark.parametrize("readings, grew", [
    ([100, 100, 100, 100, 100], False),
    ([100, 200, 100, 200, 100], False),          # a temporary that comes and goes
    ([100, 101, 102, 103, 104], True),           # a little at every call
    ([100, 100, 100, 100, 100 + (2 << 20)], True),  # beyond the slack
])
def test_memory_grows_where_it_grows_beyond_the_slack_or_at_every_call(readings, grew):
    from flashcheck.repro import standalone

    assert standalone.memory_grew(readings, 1 << 20) == grew


def test_a_script_s_document_mask_is_flashcheck_s_packed_as_dense_mask():
    from flashcheck.cases import masks
    from flashcheck.peers.plain_packing import document_mask

    cu_q, cu_k = torch.tensor([0, 3, 3, 5, 9]), torch.tensor([0, 4, 6, 8, 8])
    for left, right in ((-1, -1), (-1, 0), (2, 1), (0, -1), (1, 3)):
        expected = masks.document(cu_q, cu_k, left, right, torch.arange(9))
        assert torch.equal(document_mask(cu_q, cu_k, left, right), expected), (left, right)


def test_a_torch_sdpa_script_runs_without_flashcheck(tmp_path):
    impl = peers.resolve("sdpa-public-math")
    script = repro.write(tmp_path / "sdpa-public-math.py", impl=impl, impl_name="sdpa-public-math",
                         property_name="grads_match_reference", case=Case.from_spec(MASKED), device="cpu")
    (status, output), = run_without_flashcheck([script]).values()
    assert status == 0 and "HOLDS" in output, output


def test_a_failure_reported_after_the_workers_are_gone_is_counted_without_telling_them(tmp_path):
    """A worker's last report can be drained after the run removed its folder, board included."""
    import threading

    from flashcheck.engine import fuzz_workers

    options = fuzz_workers.FuzzOptions(impl=f"{KERNELS}:correct", device="cpu", budget=1, keep_going=True,
                                       properties=("out_matches_reference",), database=str(tmp_path / "db"))
    running = fuzz_workers.WorkerPoolRun(options, threading.Event(), on_progress=None, replay=None)
    running.run()
    assert not running.run_dir.exists() and running.board is None
    late = Failure(kind="property", property="out_matches_reference", evidence="out differs", impl=options.impl,
                   case=Case.from_spec(DENSE).spec())
    assert running.report(late) is late and running.result.failures == [late]


CONFIRM = Path(__file__).resolve().parents[1] / "ci" / "confirm_scripts.sh"


def confirm_scripts(*arguments):
    return subprocess.run(["bash", str(CONFIRM), *map(str, arguments)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable})


def test_confirming_a_campaigns_scripts_says_which_reproduce_here_and_keeps_each_output(tmp_path):
    folder = tmp_path / "impl-repro"
    folder.mkdir()
    case = Case.from_spec(DENSE)
    for name in ("causal_off_by_one", "correct"):
        repro.write(folder / f"{name}.py", impl=peers.resolve(f"{KERNELS}:{name}"), impl_name=f"{KERNELS}:{name}",
                    property_name="out_matches_reference", case=case, device="cpu")
    run = confirm_scripts("--device", "cpu", "--jobs", "2", tmp_path)
    assert run.returncode == 1, run.stderr  # one script did not reproduce
    assert run.stdout.splitlines() == [f"FAILS {folder / 'causal_off_by_one.py'}", f"HOLDS {folder / 'correct.py'}"]
    assert "FAILS" in (folder / "causal_off_by_one.py.log").read_text()
    assert "HOLDS" in (folder / "correct.py.log").read_text()


@pytest.mark.parametrize("arguments, message", [
    (["--device", "gpu"], "--device must be auto, cpu or cuda; got 'gpu'"),
    (["--timeout", "0"], "--timeout and --jobs take a positive integer; got '0'"),
    (["--jobs", "x"], "--timeout and --jobs take a positive integer; got 'x'"),
    (["missing-folder"], "DIR 'missing-folder' is not a folder"),
    ([], "no script (*.py) under"),
])
def test_confirming_scripts_refuses_bad_arguments_and_empty_folders(tmp_path, arguments, message):
    run = confirm_scripts(*arguments, *([tmp_path] if not arguments or arguments[0].startswith("--") else []))
    assert run.returncode == 2 and message in run.stderr, run.stderr
