"""``flashcheck check`` (replay one property on one case) and ``flashcheck list``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from flashcheck import cli, peers
from flashcheck.cases.case import Case
from flashcheck.cli.commands import EXIT_FOUND, EXIT_INTERNAL, EXIT_OK, EXIT_UNCHECKED, EXIT_USAGE
from flashcheck.divergences import KnownDivergence
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property
from tests.support import buggy, stubs
from tests.support.cli_process import REPO, flashcheck, needs_interpreter_numpy

MASKED_CASE = "batch=1 seqlen_q=4 seqlen_k=6 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=3 mask=random:0.5"
PLAIN_CASE = "batch=1 seqlen_q=4 seqlen_k=6 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=3"


def check(impl, prop, case):
    return flashcheck(["check", "--impl", impl, "--property", prop, "--case", case, "--device", "cpu"])


def test_list_names_every_property_and_builtin_implementation(capsys):
    assert cli.main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    for name in list(PROPERTIES) + list(peers.REGISTRY):
        assert name in out


def test_list_shows_each_property_s_whole_description(capsys):
    assert cli.main(["list"]) == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    for prop in PROPERTIES.values():
        first_paragraph = " ".join(re.split(r"\n\s*\n", prop.check.__doc__.strip())[0].split())
        assert f"{prop.name}: {first_paragraph}" in out


def test_check_passes_a_correct_implementation(capsys):
    assert check("tests.support.buggy:correct", "out_matches_reference", MASKED_CASE) == EXIT_OK
    assert "holds for tests.support.buggy:correct" in capsys.readouterr().out


def test_check_fails_a_buggy_one_with_the_evidence_and_its_own_replay_line(capsys):
    assert check("tests.support.buggy:ignores_mask", "out_matches_reference", MASKED_CASE) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "property out_matches_reference failed for tests.support.buggy:ignores_mask" in out
    assert "exceed the allowed error" in out
    assert "reproduce: flashcheck check --impl tests.support.buggy:ignores_mask --property out_matches_reference" in out


def declared_mask_bug(q, k, v, **kwargs):
    """tests.support.buggy.ignores_mask, declaring it as a known divergence on masked cases."""
    return buggy.ignores_mask(q, k, v, **kwargs)


declared_mask_bug.flashcheck_features = buggy.FEATURES
declared_mask_bug.flashcheck_known_divergences = {
    "out_matches_reference": KnownDivergence("ignores attn_mask", lambda case: case.mask.kind != "none")}


def test_check_replays_a_known_divergence_as_the_failure_it_is_and_says_it_is_expected(capsys):
    impl = "tests.test_check_and_list_commands:declared_mask_bug"
    assert check(impl, "out_matches_reference", MASKED_CASE) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "exceed the allowed error" in out
    assert f"(a known divergence of {impl}, which fuzzing and the pytest suite report as expected: ignores attn_mask)" in out


def test_check_reports_an_implementation_that_raises_as_a_failure_as_fuzz_does(capsys):
    # tests.support.misbehaving's implementations misbehave on more than one query; ``raising`` raises.
    # Unmasked: it declares no mask, and check refuses a case needing an undeclared feature.
    assert check("tests.support.misbehaving:raising", "out_matches_reference", PLAIN_CASE) == EXIT_FOUND
    assert "the implementation raised RuntimeError: planted" in capsys.readouterr().out


def test_check_reports_a_fatal_error_as_fatal_with_its_replay_line(capsys):
    # ``fatal_cuda_error`` raises what torch raises once the CUDA context is lost.
    assert check("tests.support.misbehaving:fatal_cuda_error", "out_matches_reference", PLAIN_CASE) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "property out_matches_reference failed for tests.support.misbehaving:fatal_cuda_error" in out
    assert "fatal: the implementation raised RuntimeError: CUDA error: an illegal memory access" in out
    spec = Case.from_spec(PLAIN_CASE).spec()
    assert f"reproduce: flashcheck check --impl tests.support.misbehaving:fatal_cuda_error --property " \
           f"out_matches_reference --case '{spec}'" in out


def test_check_of_a_case_the_implementation_declines_says_nothing_was_checked(capsys):
    assert check("tests.support.stubs:declines_everything", "out_matches_reference", PLAIN_CASE) == EXIT_UNCHECKED
    err = capsys.readouterr().err
    assert "tests.support.stubs:declines_everything declines this case: not written yet (nothing was checked)" in err


EMPTY_ROW_CASE = "batch=1 seqlen_q=6 seqlen_k=4 heads=1 kv_heads=1 head_dim=8 dtype=float32 causal=True seed=3"


def test_check_of_a_property_declared_not_applicable_runs_nothing_and_exits_3_saying_why(capsys):
    # Not a pass (0), and not a usage error (2): the case is valid, the implementation's
    # declared contract excludes the property, so nothing was checked, as for a declined case.
    assert check("tests.support.stubs:square_causal_declared", "empty_rows_exact", EMPTY_ROW_CASE) == EXIT_UNCHECKED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "flashcheck: empty_rows_exact is not applicable to tests.support.stubs:square_causal_declared, declared not "
        f"applicable by the implementation: {stubs.SQUARE_CAUSAL_ONLY} (nothing was checked)")
    # Only the property it names: the others run as ever.
    assert check("tests.support.stubs:square_causal_declared", "out_matches_reference", PLAIN_CASE) == EXIT_OK


def test_check_of_a_property_whose_case_is_declined_without_a_declaration_still_says_declined(capsys):
    assert check("tests.support.stubs:square_causal_undeclared", "empty_rows_exact", EMPTY_ROW_CASE) == EXIT_UNCHECKED
    assert "declines this case: causal with Nq=6 != Nk=4" in capsys.readouterr().err


def test_list_shows_the_properties_an_implementation_declares_not_applicable(capsys):
    assert cli.main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "sdpa-flash: cuda: backward, bfloat16, causal, float16, gqa, lse; declared not applicable: " \
           "empty_rows_exact, empty_rows_get_zero_dq" in out


def test_check_fails_an_output_on_another_device_as_a_failure_of_the_implementation(capsys):
    assert check("tests.support.stubs:out_on_meta", "out_matches_reference", PLAIN_CASE) == EXIT_FOUND
    assert "protocol: out must be on q's device cpu, got a tensor on meta" in capsys.readouterr().out


def _property_with_a_bug(impl, case, *, device=None):
    raise ValueError("a bug in this property's own code")


def test_check_reports_an_error_of_flashchecks_own_code_as_flashchecks_with_its_traceback(monkeypatch, capsys):
    monkeypatch.setitem(PROPERTIES, "property_with_a_bug",
                        Property("property_with_a_bug", _property_with_a_bug, "a property with a bug"))
    assert check("tests.support.buggy:correct", "property_with_a_bug", PLAIN_CASE) == EXIT_INTERNAL
    captured = capsys.readouterr()
    assert "failed for" not in captured.out, "not a finding about the implementation"
    assert "flashcheck's own code raised ValueError while checking property property_with_a_bug for " \
           "tests.support.buggy:correct: a bug in flashcheck, not a finding about tests.support.buggy:correct" in captured.err
    assert "Traceback (most recent call last)" in captured.err
    assert "ValueError: a bug in this property's own code" in captured.err


@pytest.fixture
def properties_restored():
    """The property registry as it was, after a test whose implementation registers one."""
    saved = dict(PROPERTIES)
    yield
    PROPERTIES.clear()
    PROPERTIES.update(saved)


def test_check_in_a_worker_reports_an_error_of_flashchecks_own_code_as_flashchecks_exit_4(properties_restored,
                                                                                           capsys):
    # The worker imports the implementation's module, which registers the property with a bug.
    status = flashcheck(["check", "--impl", "tests.support.flashcheck_bug:attention", "--property", "property_with_a_bug",
                         "--case", PLAIN_CASE, "--device", "cpu", "--case-timeout", "120"])
    captured = capsys.readouterr()
    assert status == EXIT_INTERNAL, captured.out + captured.err
    assert "failed for" not in captured.out and "hung" not in captured.out, "not a finding about the implementation"
    assert "flashcheck's own code raised ValueError while checking property property_with_a_bug for " \
           "tests.support.flashcheck_bug:attention: a bug in flashcheck, not a finding about tests.support.flashcheck_bug:attention" \
           in captured.err
    assert "Traceback (most recent call last)" in captured.err
    assert "ValueError: a bug in this property's own code" in captured.err


def float16_lse(q, k, v, **kwargs):
    """tests.support.buggy.correct, with its lse rounded to float16 (the protocol asks for float32)."""
    out, lse = buggy.correct(q, k, v, **kwargs)
    return out, lse.half()


float16_lse.flashcheck_features = buggy.FEATURES


def test_an_lse_of_the_wrong_dtype_is_named_with_the_dtype_it_has(capsys):
    assert check("tests.test_check_and_list_commands:float16_lse", "lse_matches_reference", MASKED_CASE) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "lse must be a float32 tensor" in out and "torch.float16" in out


#: A case with more than one query, where tests.support.misbehaving's implementations misbehave.
TWO_QUERIES = "batch=1 seqlen_q=2 seqlen_k=3 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=1"


def test_check_with_a_case_timeout_runs_the_case_in_a_worker_and_reports_a_hang_as_fuzz_does(capsys):
    arguments = ["--property", "out_matches_reference", "--case", TWO_QUERIES, "--device", "cpu", "--case-timeout"]
    assert flashcheck(["check", "--impl", "tests.support.misbehaving:hang", *arguments, "2"]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "property out_matches_reference hung for tests.support.misbehaving:hang" in out
    assert "the case ran longer than the per-case timeout of 2 s" in out
    assert "where its threads were (innermost call first):" in out and 'misbehaving.py", line' in out
    assert f"case: {Case.from_spec(TWO_QUERIES).spec()}" in out
    # A case that takes its process down is reported as fuzz reports it, not suffered.
    assert flashcheck(["check", "--impl", "tests.support.misbehaving:segfault", *arguments, "2"]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "property out_matches_reference crashed the process for tests.support.misbehaving:segfault" in out
    assert "SIGSEGV" in out
    # Compiling Triton kernels does not count, as in fuzz: a case that compiles for longer
    # than its timeout and then passes holds.
    assert flashcheck(["check", "--impl", "tests.support.misbehaving:compiles_slowly", *arguments, "1"]) == EXIT_OK
    assert "holds for tests.support.misbehaving:compiles_slowly" in capsys.readouterr().out


def test_check_with_a_case_timeout_reaches_the_verdict_it_reaches_in_this_process(capsys):
    arguments = ["--property", "out_matches_reference", "--case", TWO_QUERIES, "--device", "cpu", "--case-timeout", "60"]
    assert flashcheck(["check", "--impl", "tests.support.stubs:declines_everything", *arguments]) == EXIT_UNCHECKED
    assert "declines this case: not written yet (nothing was checked)" in capsys.readouterr().err
    assert flashcheck(["check", "--impl", "tests.support.misbehaving:fatal_cuda_error", *arguments]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "property out_matches_reference ended the process with a fatal error for tests.support.misbehaving:fatal_cuda_error" in out
    assert "CUDA error: an illegal memory access" in out


@pytest.mark.parametrize("case_timeout", [None, "60"], ids=["in-this-process", "in-a-worker"])
def test_check_reports_a_declared_fault_as_the_known_divergence_it_is(case_timeout, capsys):
    causal = "batch=1 seqlen_q=4 seqlen_k=6 heads=1 kv_heads=1 head_dim=8 dtype=float32 causal=True seed=3"
    timeout = ["--case-timeout", case_timeout] if case_timeout else []
    assert flashcheck(["check", "--impl", "tests.support.declared:faults_when_causal", "--property",
                       "out_matches_reference", "--case", causal, "--device", "cpu", *timeout]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "CUDA error: an illegal memory access" in out
    assert "(a known divergence of tests.support.declared:faults_when_causal" in out
    assert "planted: an illegal memory access on causal cases" in out


@needs_interpreter_numpy
def test_check_with_a_case_timeout_reports_an_error_of_flashchecks_own_code_as_flashchecks():
    # The property is registered by the module --impl names (tests/support/bug_in_flashcheck.py), in
    # the command's process and its worker's: a command of its own.
    command = [sys.executable, "-m", "flashcheck.cli", "check", "--impl", "tests.support.bug_in_flashcheck:attention",
               "--property", "property_with_a_bug", "--case", TWO_QUERIES, "--device", "cpu", "--case-timeout", "60"]
    run = subprocess.run(command, cwd=REPO, env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == EXIT_INTERNAL, run.stdout + run.stderr
    assert "failed for" not in run.stdout, "not a finding about the implementation"
    assert "flashcheck's own code raised ValueError while checking property property_with_a_bug" in run.stderr
    assert "Traceback (most recent call last)" in run.stderr


@pytest.mark.parametrize("impl, prop, case, message", [
    ("tests.support.buggy:correct", "no_such_property", MASKED_CASE, "--property"),
    ("tests.support.buggy:correct", "out_matches_reference", "seqlen_q=banana", "seqlen_q"),
    ("no_such_module:attention", "out_matches_reference", MASKED_CASE, "no_such_module"),
    # The pure-torch implementation declares no backward: the gradient property does not apply.
    ("tests.support.buggy:correct", "grads_match_reference", MASKED_CASE, "does not apply"),
    # Nor does a property to a case needing a feature the implementation does not declare:
    # calling it with such a case would test what it never claimed.
    ("tests.support.stubs:no_features", "out_matches_reference", MASKED_CASE,
     "does not apply to this case for tests.support.stubs:no_features: the case needs the feature mask"),
    # A module that raises at import, whatever it raises, and a misspelt feature: one line each.
    ("tests.support.raises_at_import:attention", "out_matches_reference", MASKED_CASE,
     "flashcheck: --impl: cannot import module 'tests.support.raises_at_import' of 'tests.support.raises_at_import:attention': "
     "RuntimeError: this module is broken at import"),
    ("tests.support.exits_at_import:attention", "out_matches_reference", MASKED_CASE,
     "flashcheck: --impl: cannot import module 'tests.support.exits_at_import' of 'tests.support.exits_at_import:attention': "
     "SystemExit: this module is a script"),
    ("tests.support.raises_base_exception_at_import:attention", "out_matches_reference", MASKED_CASE,
     "flashcheck: --impl: cannot import module 'tests.support.raises_base_exception_at_import' of "
     "'tests.support.raises_base_exception_at_import:attention': Abandoned: this module gave up at import"),
    ("tests.support.stubs:unknown_feature", "out_matches_reference", MASKED_CASE,
     "flashcheck: --impl tests.support.stubs:unknown_feature: flashcheck_features names unknown feature 'casual'; known:"),
    ("tests.support.stubs:device_kind_misspelt", "out_matches_reference", MASKED_CASE,
     "flashcheck: --impl tests.support.stubs:device_kind_misspelt: flashcheck_features_by_device names 'gpu', not a device "
     "kind torch knows"),
    ("tests.support.stubs:misnamed_not_applicable", "out_matches_reference", PLAIN_CASE,
     "flashcheck: --impl tests.support.stubs:misnamed_not_applicable: flashcheck_not_applicable names unknown property "
     "'empty_row_exact' (did you mean 'empty_rows_exact'?)"),
], ids=["property", "case", "module", "not-applicable", "case-outside-the-features", "raises-at-import", "exits-at-import",
        "raises-base-exception-at-import", "unknown-feature", "unknown-device-kind", "unknown-not-applicable-property"])
def test_check_usage_errors_exit_2_with_one_line_naming_the_problem(impl, prop, case, message, capsys):
    assert check(impl, prop, case) == EXIT_USAGE
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("timeout", ["0", "-1", "nan"])
def test_check_refuses_a_case_timeout_that_is_not_a_positive_number_of_seconds(timeout, capsys):
    assert flashcheck(["check", "--impl", "tests.support.buggy:correct", "--property", "out_matches_reference",
                       "--case", MASKED_CASE, "--device", "cpu", "--case-timeout", timeout]) == EXIT_USAGE
    assert "--case-timeout: expected a positive number of seconds" in capsys.readouterr().err


interpreted = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                 reason="checks Triton's interpreter in this process (the CPU runs)")


@interpreted
def test_an_interpreter_that_cannot_run_kernels_is_a_usage_error_naming_the_device(monkeypatch, capsys):
    from flashcheck.cli import interpreter_check

    monkeypatch.setattr(interpreter_check, "problem", lambda: "Triton's interpreter does not run with numpy 9.9")
    assert check("tests.support.buggy:correct", "out_matches_reference", MASKED_CASE) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--device cpu" in err and "numpy 9.9" in err


@interpreted
def test_the_interpreter_probe_passes_where_the_pinned_numpy_is_installed():
    from flashcheck.cli import interpreter_check

    assert interpreter_check.problem() is None


@interpreted
def test_the_interpreter_probe_catches_the_numpy_conversion_it_exists_for():
    # numpy 2.3 warns where 2.4 raises: as an error, the warning stands in for numpy 2.4.
    import warnings

    from flashcheck.cli import interpreter_check

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        found = interpreter_check.problem.__wrapped__()
    assert found is not None and "numpy<2.4" in found
