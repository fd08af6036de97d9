"""``flashcheck baseline record|check``: the margin rule, the file, and the command end to end.

The end-to-end tests run the ``tiny`` corpus on torch's SDPA math backend (``sdpa-math``),
cheap on any device; one test checks the project kernel against the committed CPU baseline
on the real CPU corpus.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashcheck.regress import baseline, corpus
from flashcheck.cli import main
from tests.support import noisy

REPO = Path(__file__).resolve().parent.parent
HALF = "tests.support.noisy:half_allowed"
TWICE = "tests.support.noisy:twice_allowed"
TORCH_LACKS = "tests.support.stubs:needs_an_operator_torch_lacks_on_the_cpu"


def _baseline(buckets: dict[str, float]) -> baseline.Baseline:
    return baseline.Baseline(
        impl="x", device_kind="cpu", device="cpu", corpus="tiny", corpus_digest="0", versions={},
        buckets={key: baseline.Bucket(ratio, 1, "case") for key, ratio in buckets.items()},
    )


def _measured(buckets: dict[str, float]) -> dict[str, baseline.Bucket]:
    return {key: baseline.Bucket(ratio, 1, "case") for key, ratio in buckets.items()}


def _verdicts(rows) -> dict[str, str]:
    return {row.key: row.verdict for row in rows}


# -- the margin rule --------------------------------------------------------------------------

def test_margin_is_relative_plus_an_absolute_floor_capped_at_one():
    margin = baseline.Margin(relative=0.25, absolute=0.01)
    assert margin.limit(0.4) == pytest.approx(0.4 * 1.25 + 0.01)
    assert margin.limit(0.0) == pytest.approx(0.01)
    assert margin.limit(0.9) == 1.0


def test_compare_gives_each_bucket_its_verdict():
    limit = baseline.MARGIN.limit(0.4)
    rows = baseline.compare(
        _baseline({"a": 0.4, "b": 0.4, "c": 0.4, "d": 0.9, "gone": 0.1}),
        _measured({"a": limit, "b": limit * 1.001, "c": 0.1, "d": 1.001, "fresh": 0.2}),
    )
    assert _verdicts(rows) == {"a": "ok", "b": "worse", "c": "better", "d": "exceeds", "gone": "missing",
                               "fresh": "new"}
    assert {row.key for row in rows if row.failed} == {"b", "d", "gone"}


def test_a_new_bucket_above_one_fails():
    rows = baseline.compare(_baseline({}), _measured({"fresh": 1.5}))
    assert _verdicts(rows) == {"fresh": "exceeds"} and rows[0].failed


# -- the file ---------------------------------------------------------------------------------

def test_file_is_json_with_one_bucket_per_line_and_reads_back():
    recorded = _baseline({"out float16 d<=32 none n<=32": 0.123456, "dq float16 d<=32 none n<=32": 0.5})
    text = recorded.dumps()
    assert json.loads(text)["buckets"]["out float16 d<=32 none n<=32"]["ratio"] == pytest.approx(0.1235)
    bucket_lines = [line for line in text.splitlines() if '"ratio"' in line]
    assert len(bucket_lines) == 2 and bucket_lines[0].lstrip().startswith('"out')  # out before dq
    again = baseline.Baseline.loads(text)
    assert again.buckets.keys() == recorded.buckets.keys() and again.margin == recorded.margin


def test_file_of_another_format_version_is_refused():
    data = json.loads(_baseline({"a": 0.1}).dumps())
    data["format_version"] = baseline.FORMAT_VERSION + 1
    with pytest.raises(baseline.BaselineError, match="format version"):
        baseline.Baseline.loads(json.dumps(data))


def test_buckets_group_by_output_dtype_head_dim_mask_and_length():
    cases = corpus.BASELINE_CORPORA["cpu"].cases
    keys = {baseline.bucket_key("out", case) for case in cases}
    assert len(keys) == len(cases)  # the CPU corpus puts each case in a bucket of its own
    assert {key.split()[3] for key in keys} == set(corpus.MASK_KINDS)
    assert {key.split()[1] for key in keys} == {"float16", "bfloat16", "float32"}


def test_cuda_corpus_covers_the_real_sizes_and_has_its_default_file():
    cases = corpus.BASELINE_CORPORA["cuda"].cases
    assert {case.head_dim for case in cases} == {64, 128, 256}
    assert max(corpus.length_of(case) for case in cases) >= 2048
    assert {corpus.mask_kind(case) for case in cases} == set(corpus.MASK_KINDS)
    assert baseline.default_path("flash", "cuda") == Path("ci/baselines/flash-cuda.json")


# -- the command ------------------------------------------------------------------------------

def _record(tmp_path, device, impl="sdpa-math", name="base.json"):
    path = tmp_path / name
    status = main(["baseline", "record", "--impl", impl, "--device", device, "--corpus", "tiny", "--file", str(path)])
    return status, path


def _check(path, device, impl="sdpa-math", *extra):
    return main(["baseline", "check", "--impl", impl, "--device", device, "--file", str(path), *extra])


def test_record_then_check_passes(tmp_path, device, capsys):
    status, path = _record(tmp_path, device)
    assert status == 0 and path.exists()
    recorded = baseline.read(path)
    assert recorded.corpus == "tiny" and recorded.corpus_digest == corpus.BASELINE_CORPORA["tiny"].digest()
    assert {key.split()[0] for key in recorded.buckets} == {"out", "dq", "dk", "dv"}  # sdpa-math returns no lse
    capsys.readouterr()
    assert _check(path, device) == 0
    assert "passed" in capsys.readouterr().out


def test_worse_implementation_within_tolerance_fails_check_naming_the_bucket(tmp_path, device, capsys):
    # The displaced implementation passes the properties: nothing exceeds its allowance ...
    results = corpus.measure_corpus(noisy.half_allowed, corpus.BASELINE_CORPORA["tiny"], device)
    assert results and not baseline.exceeded(results)
    # ... and yet its output ratios are worse than the peer's beyond the margin.
    _, path = _record(tmp_path, device)
    recorded = baseline.read(path)
    worse = {key for key, bucket in baseline.buckets(results).items()
             if key.startswith("out ") and bucket.ratio > recorded.margin.limit(recorded.buckets[key].ratio)}
    assert worse
    capsys.readouterr()
    assert _check(path, device, HALF) == 1
    out = capsys.readouterr().out
    for key in worse:
        assert f"worse: {key}" in out
    assert "FAILED" in out


def test_missing_bucket_fails(tmp_path, device, capsys):
    # Recorded from an implementation with lse; sdpa-math returns none, so the lse buckets are missing.
    status, path = _record(tmp_path, device, impl="tests.support.buggy:correct")
    assert status == 0
    lse_keys = [key for key in baseline.read(path).buckets if key.startswith("lse ")]
    assert lse_keys
    capsys.readouterr()
    assert _check(path, device) == 1
    out = capsys.readouterr().out
    for key in lse_keys:
        assert f"missing: {key}" in out


def test_record_refuses_an_implementation_beyond_its_allowance(tmp_path, device, capsys):
    status, path = _record(tmp_path, device, impl=TWICE)
    assert status == 1 and not path.exists()
    out = capsys.readouterr().out
    assert "refusing to record" in out and "output out" in out
    assert corpus.BASELINE_CORPORA["tiny"].cases[0].spec() in out


@pytest.mark.cpu  # its stub raises only on the CPU
def test_an_implementation_that_raises_is_refused_at_record_and_fails_check_with_replay_lines(tmp_path, capsys):
    # torch's own NotImplementedError (an operator without a CPU kernel) is a finding, not a
    # skipped case: a kernel that broke must not pass as one that runs fewer cases.
    status, path = _record(tmp_path, "cpu", impl=TORCH_LACKS)
    assert status == 1 and not path.exists()
    out = capsys.readouterr().out
    raised = len([case for case in corpus.BASELINE_CORPORA["tiny"].cases if not case.varlen])
    assert f"refusing to record: {TORCH_LACKS} raised on {raised} cases of corpus 'tiny':" in out
    assert out.count("raised NotImplementedError: Could not run 'aten::") == raised
    _, path = _record(tmp_path, "cpu")
    capsys.readouterr()
    assert _check(path, "cpu", TORCH_LACKS) == 1
    out = capsys.readouterr().out
    assert out.count("raised NotImplementedError: Could not run 'aten::") == raised
    assert f"replay: flashcheck check --impl {TORCH_LACKS} --property out_matches_reference --case" in out
    assert f"raised on {raised} cases" in out.splitlines()[-1] and out.splitlines()[-1].startswith("FAILED")


def test_version_mismatch_is_a_usage_error(tmp_path, device, capsys):
    _, path = _record(tmp_path, device)
    data = json.loads(path.read_text())
    data["format_version"] = baseline.FORMAT_VERSION + 1
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert _check(path, device) == 2
    assert "--file" in capsys.readouterr().err


def test_corpus_digest_mismatch_is_a_usage_error(tmp_path, device, capsys):
    _, path = _record(tmp_path, device)
    path.write_text(path.read_text().replace(corpus.BASELINE_CORPORA["tiny"].digest(), "0123456789abcdef"))
    capsys.readouterr()
    assert _check(path, device) == 2
    err = capsys.readouterr().err
    assert "has changed since it was recorded" in err and "0123456789abcdef" in err


@pytest.mark.parametrize("argv, named", [
    (["baseline", "check", "--file", "/nonexistent/base.json"], "--file"),
    (["baseline", "check", "--impl", "no-such-impl", "--file", "x.json"], "--impl"),
    (["baseline", "record", "--impl", "no-such-impl"], "--impl"),
    (["baseline", "record", "--impl", "sdpa-math", "--corpus", "no-such-corpus"], "--corpus"),
])
def test_usage_errors_name_the_argument(argv, named, device, capsys):
    assert main([*argv, "--device", device]) == 2
    assert named in capsys.readouterr().err


def test_project_kernel_matches_its_committed_baseline(device, capsys):
    if device == "cuda":
        pytest.skip("on a GPU, ci/gpu.sh runs `flashcheck baseline check` on the CUDA corpus (minutes) itself")
    path = REPO / baseline.default_path("flash", device)
    if not path.exists():
        pytest.skip(f"no baseline recorded for {device} yet ({path})")
    status = _check(path, device, "flash")
    assert status == 0, capsys.readouterr().out
