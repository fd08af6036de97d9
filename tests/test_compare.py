"""The comparison and its report: counts, the worst element by error over allowed, named
indices, non-finite handling, and the reproduction line."""

from __future__ import annotations

import math

import pytest
import torch

from flashcheck.cases.case import Case
from flashcheck.oracle import compare, expectation
from flashcheck.oracle.compare import PropertyFailure, Violation


def test_within_allowed_passes_and_reports_the_worst_ratio():
    expected = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    got = torch.tensor([1.0, 2.001, 3.0])
    metrics = compare.check_close("lse", got.view(1, 1, 3), expected.view(1, 1, 3), torch.full((1, 1, 3), 2e-3))
    assert metrics.exceeding == 0
    assert metrics.worst_index == (0, 0, 1)
    assert metrics.worst_ratio == pytest.approx(0.5, rel=1e-3)


def test_report_names_the_output_worst_index_errors_and_allowance():
    expected = torch.zeros(2, 3, 4, 5, dtype=torch.float64)
    got = expected.clone()
    got[1, 2, 3, 4] = 0.5  # the worst by ratio
    got[0, 0, 0, 0] = 0.9  # larger, but allowed more
    allowed = torch.full_like(expected, 1e-3)
    allowed[0, 0, 0, 0] = 0.5
    with pytest.raises(Violation) as info:
        compare.check_close("out", got, expected, allowed, explain=lambda index: f"because {index}")
    text = str(info.value)
    assert "out differs from the float64 reference" in text
    assert "Mismatched elements: 2 / 120" in text
    assert "Worst element (b=1, i=2, h=3, d=4): got 0.5, expected 0" in text
    assert "allowed 1.000e-03" in text and "error/allowed = 500" in text
    assert "because (1, 2, 3, 4)" in text
    assert "Greatest absolute difference: 9.000e-01 at (b=0, i=0, h=0, d=0)" in text


def test_nan_where_finite_expected_is_an_infinite_error():
    metrics = compare.measure(torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]), torch.full((2,), 1e9))
    assert metrics.exceeding == 1 and math.isinf(metrics.worst_error)


def test_non_finite_expectation_must_be_matched_exactly():
    expected = torch.tensor([-math.inf, 0.5], dtype=torch.float64)
    assert compare.measure(torch.tensor([-math.inf, 0.5]), expected, torch.zeros(2)).exceeding == 0
    assert compare.measure(torch.tensor([-1e30, 0.5]), expected, torch.full((2,), 1e300, dtype=torch.float64)).exceeding == 1
    assert compare.measure(torch.tensor([math.inf, 0.5]), expected, torch.full((2,), 1e300, dtype=torch.float64)).exceeding == 1


def test_check_equal_is_bitwise_but_equates_signed_zeros():
    a = torch.tensor([0.0, 1.0, float("nan")])
    compare.check_equal("x", torch.tensor([-0.0, 1.0, float("nan")]), a, what="a")
    with pytest.raises(Violation, match="1 / 3"):
        compare.check_equal("x", torch.tensor([0.0, 1.0000001, float("nan")]), a, what="a")


def test_check_equal_respects_where():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0])
    compare.check_equal("x", b, a, what="a", where=torch.tensor([True, False]))


def test_failure_prints_case_and_a_replay_command():
    case = Case(seqlen_q=3, window=(2, 0))
    failure = PropertyFailure("evidence", property_name="out_matches_reference", case=case, impl_name="my.mod:attn")
    text = str(failure)
    assert text.splitlines()[0] == "property out_matches_reference failed for my.mod:attn"
    assert f"case: {case.spec()}" in text
    assert failure.reproduction() == (
        f"flashcheck check --impl my.mod:attn --property out_matches_reference --case '{case.spec()}'"
    )
    assert Case.from_spec(case.spec()) == case


def test_a_replay_line_with_a_case_timeout_keeps_it_exactly():
    spec = "batch=1 seed=1"
    base = f"flashcheck check --impl flash --property out_matches_reference --case '{spec}'"
    assert compare.replay_command("flash", "out_matches_reference", spec) == base
    for seconds, written in [(2.0, "2"), (0.5, "0.5"), (120, "120"), (1234567.0, "1234567.0"),
                             (0.1 + 0.2, "0.30000000000000004")]:
        line = compare.replay_command("flash", "out_matches_reference", spec, seconds)
        assert line == f"{base} --case-timeout {written}" and float(line.split()[-1]) == seconds


def test_doubling_is_exact_excludes_a_subnormal_rounded_up_to_the_smallest_normal():
    """The case the GPU run found: x just below the smallest normal float16 rounds up to it,
    while 2x is representable just below twice that, so out(2V) != 2·out(V) there."""
    from flashcheck.properties.metamorphic import doubling_is_exact

    tiny = torch.finfo(torch.float16).tiny
    x = torch.tensor(tiny - 2.0**-25, dtype=torch.float64)  # halfway: rounds to even, up to tiny
    rounded = x.to(torch.float16)
    assert float(rounded) == tiny and float((2 * x).to(torch.float16)) != 2 * float(rounded)
    assert not doubling_is_exact(rounded.reshape(1)).any()
    normal = torch.tensor([3 * tiny, 1.0], dtype=torch.float16)
    assert doubling_is_exact(normal).all()


def test_packed_report_names_sequence_and_position():
    """For packed sequences, each index in a report also says which sequence and position."""
    case = Case.packed(((3, 5), (4, 2)), heads=2, dtype="float32")
    q, k, v = case.materialize()
    expected = expectation.expect(q, k, v, **case.attention_kwargs())
    wrong = expected.expected_out.float().clone()
    wrong[5, 1, 3] += 1.0  # token 5 is position 2 of sequence 1
    with pytest.raises(Violation) as failure:
        expected.check_out(wrong)
    lines = str(failure.value).splitlines()
    assert "Worst element (t=5, h=1, d=3) [sequence 1, position 2]" in lines[2]
    assert lines[-2].endswith("at (t=5, h=1, d=3) [sequence 1, position 2]")
