"""flashcheck's pytest plugin and the installed property suite, run as a user would run them.

Inner pytest runs (the ``pytester`` fixture) run in this process where that is safe (the
plugin keeps its state per run and restores hypothesis's profile), in a subprocess only
where the run must start from a fresh interpreter (the Triton interpreter switch). The
implementations are tiny pure-torch ones restricted to float32, and ``-k`` keeps each
suite run to a couple of properties, so that the whole module takes seconds.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import torch
from hypothesis import settings

import flashcheck.property_suite  # noqa: F401  (see below)
from flashcheck import pytest_plugin
from flashcheck.cases import hypothesis_profiles
from flashcheck.engine import placement
from flashcheck.pytest_plugin import _pin_xdist_worker, xdist_worker_number

pytest_plugins = ["pytester"]

# flashcheck.property_suite is imported above so that the modules it needs stay loaded across inner
# runs: pytester drops the modules an in-process run imported, but not the attributes of
# their parent package, so a second run would mix ``from flashcheck.oracle import compare`` (the old
# module) with ``from flashcheck.oracle.compare import Violation`` (a new class) and fail to
# catch its own Violation.

# A correct implementation and one whose output is 1% too large, both declaring float32
# only, so that few and cheap cases are drawn.
TINY = '''
import os

from flashcheck.oracle import same_precision

def correct(q, k, v, **kwargs):
    return same_precision.attention(q, k, v, **kwargs)

def recording(q, k, v, **kwargs):
    """correct, writing each call's query shape and sum to the file $TINY_CALLS."""
    with open(os.environ["TINY_CALLS"], "a") as calls:
        calls.write(f"{tuple(q.shape)} {float(q.sum())}\\n")
    return same_precision.attention(q, k, v, **kwargs)

def too_large(q, k, v, **kwargs):
    out, lse = same_precision.attention(q, k, v, **kwargs)
    return out * 1.01, lse

def raising(q, k, v, **kwargs):
    """correct on one query; on more, raises an ordinary error."""
    if q.shape[1] > 1:
        raise RuntimeError("planted")
    return same_precision.attention(q, k, v, **kwargs)

def dies(q, k, v, **kwargs):
    """correct on one query; on more, raises what torch raises once the CUDA context is lost.
    Each call appends its query count to the file $TINY_CALLS."""
    with open(os.environ["TINY_CALLS"], "a") as calls:
        calls.write(f"{q.shape[1]}\\n")
    if q.shape[1] > 1:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return same_precision.attention(q, k, v, **kwargs)

def declining(q, k, v, **kwargs):
    """A stub: declines every call."""
    raise NotImplementedError("not written yet")

def declining_causal(q, k, v, **kwargs):
    """correct, but declines causal cases."""
    if kwargs.get("causal"):
        raise NotImplementedError("no causal kernel yet")
    return same_precision.attention(q, k, v, **kwargs)

def two_bugs(q, k, v, **kwargs):
    """1% too large on causal cases; raises on the others with more than one query."""
    if kwargs.get("causal"):
        out, lse = same_precision.attention(q, k, v, **kwargs)
        return out * 1.01, lse
    return raising(q, k, v, **kwargs)

for impl in (correct, too_large, recording, raising, dies, declining):
    impl.flashcheck_features = {"float32", "lse"}
declining_causal.flashcheck_features = {"float32", "lse", "causal"}
two_bugs.flashcheck_features = {"float32", "lse", "causal"}
'''

TWO_PROPERTIES = ("-k", "out_matches_reference or lse_matches_reference")
QUICK = ("--flashcheck-profile", "ci", "--flashcheck-size", "interpreter", "-p", "no:xdist")


@pytest.fixture
def tiny(pytester, monkeypatch):
    """A pytester directory holding the importable module ``tinyattn``, with no flashcheck
    variable leaking in from the outer run."""
    for variable in ("FLASHCHECK_IMPLS", "FLASHCHECK_RATIO_LOG", "FLASHCHECK_SHARDS", "FLASHCHECK_EXAMPLES",
                     hypothesis_profiles.PROFILE_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    pytester.makepyfile(tinyattn=TINY)
    pytester.syspathinsert()
    return pytester


def run_suite(pytester, *args):
    return pytester.runpytest_inprocess("--pyargs", "flashcheck.property_suite", *QUICK, *args)


# -- the suite on user implementations -----------------------------------------------------------


def test_suite_passes_on_a_correct_implementation(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:correct", *TWO_PROPERTIES, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*test_property_holds?tinyattn:correct-out_matches_reference? PASSED*",
        "*test_property_holds?tinyattn:correct-lse_matches_reference? PASSED*",
    ])


def test_suite_fails_a_buggy_implementation_with_the_evidence(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:too_large", "-k", "out_matches_reference")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*property out_matches_reference failed for tinyattn:too_large*",
        "*flashcheck check --impl tinyattn:too_large --property out_matches_reference --case*",
    ])

def test_distinct_failures_of_one_property_are_each_reported_with_their_script(tiny, tmp_path):
    scripts = tmp_path / "scripts"
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:two_bugs", "-k", "out_matches_reference",
                       "--flashcheck-repro-dir", str(scripts))
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    # Both planted bugs, each with its script; how many more signatures the causal bug shows
    # (an aggregate check of the same outputs, say) depends on what hypothesis's search met.
    distinct = int(re.search(r"(\d+) distinct failures", output).group(1))
    assert distinct >= 2
    assert "the implementation raised RuntimeError: planted" in output and "causal=False" in output
    assert "causal=True" in output
    assert output.count("standalone script: ") >= distinct and len(list(scripts.iterdir())) == distinct


def test_a_repro_dir_that_cannot_be_written_is_a_usage_error_before_any_test(tiny, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:correct", "--flashcheck-repro-dir", str(blocker / "x"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--flashcheck-repro-dir*"])


def test_a_divergence_confined_to_some_cases_is_expected_there_and_only_there(tiny):
    explained = run_suite(tiny, "--flashcheck-impl", "tests.support.declared:too_large_when_causal",
                          "-k", "out_matches_reference", "-rx")
    explained.assert_outcomes(xfailed=1)
    explained.stdout.fnmatch_lines(["*known divergence of tests.support.declared:too_large_when_causal (planted*observed on*",
                                    "case: *causal=True*"])
    unexplained = run_suite(tiny, "--flashcheck-impl", "tests.support.declared:too_large_everywhere",
                            "-k", "out_matches_reference")
    unexplained.assert_outcomes(failed=1)
    unexplained.stdout.fnmatch_lines(["*property out_matches_reference failed*", "*causal=False*"])


def test_an_implementation_that_raises_fails_the_property_with_the_error_as_evidence(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:raising", "-k", "out_matches_reference")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*property out_matches_reference failed for tinyattn:raising*",
        "*the implementation raised RuntimeError: planted*",
        "*reproduce: flashcheck check --impl tinyattn:raising --property out_matches_reference --case*",
    ])


def test_a_fatal_error_fails_at_once_unshrunk_and_no_later_property_runs_a_case(tiny, tmp_path, monkeypatch):
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("TINY_CALLS", str(calls))
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:dies", *TWO_PROPERTIES)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*fatal: the implementation raised RuntimeError: CUDA error: an illegal memory access*",
        "*reproduce: flashcheck check --impl tinyattn:dies --property *",
        "*not run: an earlier case left this process unable to run cases*",
    ])
    queries = [int(line) for line in calls.read_text().splitlines()]
    assert sum(count > 1 for count in queries) == 1, "one fatal call, then nothing: no shrinking on a dead context"
    assert queries[-1] > 1, "and no case ran after it"


def test_a_property_whose_every_case_was_declined_fails_naming_the_reasons(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:declining", "-k", "out_matches_reference")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*nothing was checked: tinyattn:declining declined every case drawn for out_matches_reference "
        "(* × not written yet)*",
    ])


def test_declined_cases_are_replaced_counted_and_listed_by_reason(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:declining_causal", "-k", "out_matches_reference")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*flashcheck declined cases (not checked)*",
        "*tinyattn:declining_causal-out_matches_reference*: * declined: no causal kernel yet",
    ])


def test_a_property_the_features_exclude_is_a_skip_saying_why(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:correct", "-k", "grads_match_reference", "-rs")
    result.assert_outcomes(skipped=2)  # grads_match_reference and its float16 dS-range variant
    result.stdout.fnmatch_lines(["*not applicable to tinyattn:correct: grads_match_reference needs the feature "
                                 "backward*"])


@pytest.mark.parametrize("impl, property_name, reason", [
    # Without causal, window, mask or packing no key is ever hidden from a query: known before drawing.
    ("tests.support.stubs:no_features", "future_keys_cannot_change_output",
     " draws cases that hide keys from queries, which need one of the features causal, mask, window or varlen"),
    # A mask and no band: only hypothesis's filter finds that no case is band-only.
    ("tests.support.stubs:mask_only", "mask_equal_to_band_matches_flag",
     ": no case drawn inside the declared features is one it applies to"),
], ids=["known-before-drawing", "found-by-the-filter"])
def test_a_property_no_case_can_be_drawn_for_inside_the_features_is_a_skip_saying_why(tiny, impl, property_name, reason):
    result = run_suite(tiny, "--flashcheck-impl", impl, "-k", property_name, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"*not applicable to {impl}: {property_name}{reason}*"])


def test_a_property_declared_not_applicable_is_a_skip_with_the_reason_listed_at_the_end(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tests.support.stubs:square_causal_declared",
                       "-k", "empty_rows_exact or out_matches_reference", "-rs")
    result.assert_outcomes(passed=1, skipped=1)  # only the property it names is left out
    result.stdout.fnmatch_lines([
        "*flashcheck properties declared not applicable (not run)*",
        "*tests.support.stubs:square_causal_declared-empty_rows_exact*: declared not applicable by the implementation: "
        "planted: its is_causal is top-left aligned, under which every row has a key",
        "SKIPPED*not applicable to tests.support.stubs:square_causal_declared: empty_rows_exact declared not applicable by "
        "the implementation: planted: its is_causal is top-left aligned*",
    ])


def test_a_property_whose_every_case_is_declined_without_a_declaration_still_fails(tiny):
    result = run_suite(tiny, "--flashcheck-impl", "tests.support.stubs:square_causal_undeclared", "-k", "empty_rows_exact")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*nothing was checked: tests.support.stubs:square_causal_undeclared declined every case "
                                 "drawn for empty_rows_exact (* × causal with Nq=* != Nk=*"])
    result.stdout.no_fnmatch_line("*declared not applicable*")


def test_the_option_wins_over_the_environment_variable(tiny, monkeypatch):
    monkeypatch.setenv("FLASHCHECK_IMPLS", "tinyattn:too_large")
    result = run_suite(tiny, "--co", "-q", "-k", "out_matches_reference")
    result.stdout.fnmatch_lines(["*tinyattn:too_large-out_matches_reference*"])
    result = run_suite(tiny, "--co", "-q", "-k", "out_matches_reference", "--flashcheck-impl", "tinyattn:correct")
    result.stdout.fnmatch_lines(["*tinyattn:correct-out_matches_reference*"])
    result.stdout.no_fnmatch_line("*too_large*")


@pytest.mark.parametrize(
    "args, env, message",
    [
        (("--flashcheck-impl", "no-such-kernel"), {}, "--flashcheck-impl 'no-such-kernel': unknown implementation*"),
        (("--flashcheck-impl", "tinyattn:missing"), {}, "--flashcheck-impl 'tinyattn:missing': *no attribute 'missing'*"),
        ((), {"FLASHCHECK_IMPLS": "sdpa-math,no-such-kernel"}, "$FLASHCHECK_IMPLS 'no-such-kernel': unknown implementation*"),
        (("--flashcheck-shards", "0"), {}, "--flashcheck-shards: expected a positive integer (tests per property), got '0'"),
        ((), {"FLASHCHECK_SHARDS": "two"}, "$FLASHCHECK_SHARDS: expected a positive integer (tests per property), got 'two'"),
        (("--flashcheck-examples", "-3"), {},
         "--flashcheck-examples: expected a positive integer (examples per property), got '-3'"),
        ((), {"FLASHCHECK_EXAMPLES": "many"},
         "$FLASHCHECK_EXAMPLES: expected a positive integer (examples per property), got 'many'"),
        (("--flashcheck-impl", "tests.support.raises_at_import:attention"), {},
         "--flashcheck-impl 'tests.support.raises_at_import:attention': cannot import module 'tests.support.raises_at_import' of "
         "'tests.support.raises_at_import:attention': RuntimeError: this module is broken at import"),
        (("--flashcheck-impl", "tests.support.raises_base_exception_at_import:attention"), {},
         "--flashcheck-impl 'tests.support.raises_base_exception_at_import:attention': cannot import module "
         "'tests.support.raises_base_exception_at_import' of 'tests.support.raises_base_exception_at_import:attention': "
         "Abandoned: this module gave up at import"),
        (("--flashcheck-impl", "tests.support.stubs:unknown_feature"), {},
         "--flashcheck-impl 'tests.support.stubs:unknown_feature': flashcheck_features names unknown feature 'casual'; known: *"),
        (("--flashcheck-impl", "tests.support.stubs:misnamed_not_applicable"), {},
         "--flashcheck-impl 'tests.support.stubs:misnamed_not_applicable': flashcheck_not_applicable names unknown property "
         "'empty_row_exact' (did you mean 'empty_rows_exact'?)*"),
    ],
    ids=["unknown-name", "missing-attribute", "impls-from-environment", "zero-shards", "shards-from-environment",
         "negative-examples", "examples-from-environment", "raises-at-import", "raises-base-exception-at-import", "unknown-feature", "unknown-not-applicable-property"],
)
def test_a_bad_implementation_or_shard_count_is_a_usage_error_before_any_test(tiny, monkeypatch, args, env, message):
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    tiny.makepyfile(test_marker="def test_never_runs():\n    raise AssertionError('ran')\n")
    result = tiny.runpytest_inprocess(*args, "test_marker.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    result.stdout.no_fnmatch_line("*ran*")


def test_the_ratio_log_records_each_comparison(tiny, tmp_path):
    log = tmp_path / "ratios.jsonl"
    result = run_suite(tiny, "--flashcheck-impl", "tinyattn:correct", "-k", "out_matches_reference",
                       "--flashcheck-ratio-log", str(log))
    result.assert_outcomes(passed=1)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) >= 25  # the ci profile's 25 cases, each compared at least once
    assert {(r["impl"], r["property"], r["output"]) for r in records} == {
        ("tinyattn:correct", "out_matches_reference", "out")}
    assert all(0 <= r["ratio"] <= 1 for r in records)


def test_shards_split_a_propertys_examples_and_draw_different_cases(tiny, tmp_path, monkeypatch):
    collected = run_suite(tiny, "--flashcheck-impl", "tinyattn:correct", "-k", "out_matches_reference",
                          "--flashcheck-shards", "3", "--co", "-q")
    collected.stdout.fnmatch_lines([f"*tinyattn:correct-out_matches_reference-shard{k}of3*" for k in (1, 2, 3)])
    drawn = {}
    for k in (1, 2):
        calls = tmp_path / f"shard{k}.txt"
        monkeypatch.setenv("TINY_CALLS", str(calls))
        result = run_suite(tiny, "--flashcheck-impl", "tinyattn:recording", "-k", f"out_matches_reference-shard{k}of3",
                           "--flashcheck-shards", "3")
        result.assert_outcomes(passed=1)
        drawn[k] = calls.read_text().splitlines()
    # The ci profile's 25 examples, split three ways: at most 9 each; derandomized, yet not the same 9.
    assert all(0 < len(cases) <= 9 for cases in drawn.values())
    assert set(drawn[1]) != set(drawn[2])


class _Config:
    """What shard_count reads of a pytest config: options, and an xdist worker's input."""

    def __init__(self, workers=None, shards=None):
        if workers is not None:
            self.workerinput = {"workercount": workers}
        self.shards = shards

    def getoption(self, name, default=None):
        return self.shards if name == "flashcheck_shards" else default


@pytest.mark.parametrize("workers, tests, derandomized, shards, expected", [
    (16, 26, False, None, 3),   # the pytest path on a GPU: about 4 tests per worker
    (16, 16, False, None, 4),
    (64, 5, False, None, 8),    # at most MAX_AUTO_SHARDS
    (2, 27, False, None, 1),    # enough tests for two workers already
    (None, 26, False, None, 1),  # not under xdist
    (16, 26, True, None, 1),    # a derandomized gate draws the same cases whatever the workers
    (16, 26, False, "2", 2),    # an explicit count wins
])
def test_xdist_workers_split_properties_automatically_only_under_a_random_profile(
        monkeypatch, workers, tests, derandomized, shards, expected):
    monkeypatch.delenv("FLASHCHECK_SHARDS", raising=False)
    assert pytest_plugin.shard_count(_Config(workers, shards), tests, derandomized=derandomized) == expected


def test_the_examples_option_sets_how_many_cases_a_property_draws_split_over_its_shards(tiny, tmp_path, monkeypatch):
    def drawn(*extra):
        calls = tmp_path / "calls.txt"
        calls.unlink(missing_ok=True)
        monkeypatch.setenv("TINY_CALLS", str(calls))
        result = run_suite(tiny, "--flashcheck-impl", "tinyattn:recording", *extra)
        result.assert_outcomes(passed=1)
        return calls.read_text().splitlines()

    # The ci profile's 25 examples give more than 6 distinct cases; 6 give at most 6.
    assert len(set(drawn("-k", "out_matches_reference"))) > 6
    assert 0 < len(drawn("-k", "out_matches_reference", "--flashcheck-examples", "6")) <= 6
    monkeypatch.setenv("FLASHCHECK_EXAMPLES", "6")
    assert 0 < len(drawn("-k", "out_matches_reference-shard1of2", "--flashcheck-shards", "2")) <= 3


# -- markers ---------------------------------------------------------------------------------------

MARKED = '''
import pytest

@pytest.mark.gpu
def test_on_gpu():
    pass

@pytest.mark.cpu
def test_on_cpu():
    pass

@pytest.mark.slow
def test_slow():
    pass

def test_plain():
    pass
'''


def test_the_other_devices_tests_are_skipped_with_a_reason(pytester):
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("-rs", "--run-slow")
    result.assert_outcomes(passed=3, skipped=1)
    if torch.cuda.is_available():
        result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_marked.py:*: marked cpu: needs Triton's interpreter*"])
    else:
        result.stdout.fnmatch_lines(
            ["SKIPPED [[]1[]] test_marked.py:*: marked gpu: needs a CUDA device, and torch sees none"])


@pytest.mark.parametrize(
    "args, slow_ran",
    [((), False), (("--run-slow",), True), (("-m", "slow"), True), (("-m", "slow or gpu"), True)],
    ids=["default", "run-slow", "m-slow", "m-expression"],
)
def test_slow_tests_run_only_when_selected(pytester, args, slow_ran):
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest_inprocess("-rs", "-v", *args)
    result.stdout.fnmatch_lines(["*::test_slow PASSED*" if slow_ran else "*::test_slow SKIPPED (marked slow*"])
    if not slow_ran:
        result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_marked.py:*: marked slow: run with --run-slow or -m slow"])


BENCHMARKED = '''
import pytest

@pytest.mark.speed
def test_speed():
    pass

@pytest.mark.benchmark(group="users-own")  # pytest-benchmark's settings marker: not a selection
def test_users_own_benchmark_settings():
    pass

def test_plain():
    pass
'''


@pytest.mark.parametrize(
    "args, benchmark_ran",
    [((), False), (("--run-benchmarks",), True), (("-m", "speed"), True),
     (("-m", "slow or speed"), True), (("--run-slow",), False)],
    ids=["default", "run-benchmarks", "m-speed", "m-expression", "run-slow"],
)
def test_benchmarks_run_only_when_selected(pytester, args, benchmark_ran):
    pytester.makepyfile(test_benchmarked=BENCHMARKED)
    result = pytester.runpytest_inprocess("-rs", "-v", "-p", "no:xdist", *args)
    if benchmark_ran:
        result.stdout.fnmatch_lines(["*::test_speed PASSED*"])
    else:
        result.stdout.fnmatch_lines([
            "SKIPPED [[]1[]] test_benchmarked.py:*: marked speed: run with --run-benchmarks or -m speed"])
    if "-m" not in args:
        result.stdout.fnmatch_lines(["*::test_users_own_benchmark_settings PASSED*"])


def test_the_markers_are_registered(pytester):
    result = pytester.runpytest_inprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.gpu: needs a CUDA device*", "@pytest.mark.cpu: runs on the CPU*",
                                 "@pytest.mark.slow: long-running*",
                                 "@pytest.mark.speed: speed benchmark; skipped unless --run-benchmarks*"])


# -- hypothesis profiles -------------------------------------------------------------------------

PROFILE_PROBE = '''
from hypothesis import settings

def test_profile():
    print("PROFILE", settings.get_current_profile_name(), settings.default.max_examples)
'''


@pytest.mark.parametrize(
    "args, env, expected",
    [
        (("--flashcheck-profile", "smoke"), None, "PROFILE smoke 5"),
        ((), "gpu", "PROFILE gpu 200"),
        (("--flashcheck-profile", "ci"), "gpu", "PROFILE ci 25"),
        (("--flashcheck-profile", "ci", "--hypothesis-profile", "dev"), None, "PROFILE dev 50"),
    ],
    ids=["option", "environment", "option-over-environment", "hypothesis-option-wins"],
)
def test_the_profile_option_selects_the_hypothesis_profile(pytester, monkeypatch, args, env, expected):
    if env is None:
        monkeypatch.delenv(hypothesis_profiles.PROFILE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(hypothesis_profiles.PROFILE_VARIABLE, env)
    pytester.makepyfile(test_probe=PROFILE_PROBE)
    before = settings.get_current_profile_name()
    result = pytester.runpytest_inprocess("-s", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*{expected}"])
    assert settings.get_current_profile_name() == before  # the inner run put ours back


def test_an_unknown_profile_is_a_usage_error(pytester):
    pytester.makepyfile(test_probe=PROFILE_PROBE)
    result = pytester.runpytest_inprocess("--flashcheck-profile", "turbo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --flashcheck-profile: unknown hypothesis profile 'turbo'*"])


def test_the_header_names_the_choices(tiny):
    result = tiny.runpytest_inprocess("--co", "--flashcheck-impl", "tinyattn:correct", "--flashcheck-size", "gpu",
                                      "--flashcheck-profile", "smoke")
    result.stdout.fnmatch_lines([
        "flashcheck: implementations tinyattn:correct (--flashcheck-impl); hypothesis profile smoke; sizes gpu; device *"
    ])


# -- the Triton interpreter switch -----------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter is chosen only without CUDA")
def test_without_cuda_triton_interpret_is_set_before_conftests_are_imported(pytester, monkeypatch):
    # A fresh interpreter: in this process triton is long imported.
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    pytester.makeconftest('import os, sys\nSEEN = (os.environ.get("TRITON_INTERPRET"), "triton" in sys.modules)\n')
    pytester.makepyfile(test_seen="from conftest import SEEN\n\ndef test_seen():\n    assert SEEN == ('1', False)\n")
    result = pytester.runpytest_subprocess("-p", "no:xdist")
    result.assert_outcomes(passed=1)


# -- GPU pinning under xdist -----------------------------------------------------------------------


@pytest.mark.parametrize("worker_id, expected", [
    ("gw0", 0), ("gw7", 7), ("gw13", 13),
    (None, None), ("master", None), ("gwx", None), ("gw", None),  # not an xdist worker
])
def test_an_xdist_worker_is_known_by_its_number(worker_id, expected):
    assert xdist_worker_number(worker_id) == expected


@pytest.mark.parametrize("worker_id, gpus, expected", [
    ("gw0", ["4", "6"], "4"), ("gw1", ["4", "6"], "6"), ("gw2", ["4", "6"], "4"),  # round-robin
    ("gw3", ["GPU-ab12"], "GPU-ab12"),  # one GPU: every worker on it
    ("gw1", [], "unpinned"), ("master", ["4", "6"], "unpinned"),  # no GPU; not an xdist worker
    ("gw1", None, "unpinned"),  # NVML cannot count the GPUs: no pin, and no set_device either
])
def test_an_xdist_worker_pins_itself_through_placement(monkeypatch, worker_id, gpus, expected):
    import torch

    monkeypatch.setattr(placement, "gpus_before_cuda", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: pytest.fail("set_device pins this process only"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "unpinned")
    _pin_xdist_worker(worker_id)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == expected


# Which GPU each worker takes and how a process pins itself: tests/test_placement.py.


# -- the order of the tests under pytest-xdist's worksteal scheduler ----------------------------


def test_worker_shares_split_the_collection_as_worksteal_first_does():
    assert pytest_plugin.worker_shares(10, 3) == [3, 3, 4]
    assert sum(pytest_plugin.worker_shares(2118, 12)) == 2118


def test_long_tests_start_each_workers_share_and_every_test_runs_once():
    # Tests 0-5 light, then three long ones collected together (as a suite's properties are).
    items = list(range(6)) + ["long-5", "long-3", "long-1"]
    weights = {"long-5": 5, "long-3": 3, "long-1": 1}
    order = pytest_plugin.long_tests_first(items, 3, weight=lambda item: weights.get(item, 0))
    assert sorted(map(str, order)) == sorted(map(str, items))
    shares = pytest_plugin.worker_shares(len(items), 3)
    starts = [sum(shares[:worker]) for worker in range(3)]
    assert [order[start] for start in starts] == ["long-5", "long-3", "long-1"]
    assert [item for item in order if item not in weights] == list(range(6)), "the others keep their order"


def test_a_property_weighs_by_what_it_runs_its_backward_whether_required_or_only_used():
    from types import SimpleNamespace

    def item(name):
        return SimpleNamespace(callspec=SimpleNamespace(params={"property_name": name, "shard": "shard1of3"}))

    weight = pytest_plugin.property_test_weight
    assert weight(item("out_matches_reference")) == 1
    assert weight(item("grads_match_reference")) == 3
    assert weight(item("repeated_calls_do_not_grow_memory")) == 3, "uses the backward where declared"
    assert weight(item("varlen_matches_separate_calls")) == 5, "packs sequences and uses the backward"
    assert weight(SimpleNamespace(callspec=SimpleNamespace(params={"x": 1}))) == 0, "not a property test"
