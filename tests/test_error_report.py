"""``flashcheck report``: report.md with its figures, the verdict, usage errors.

Runs the ``sweep-tiny`` corpus on torch's SDPA math backend, cheap on any device.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from flashcheck.regress import plots
from flashcheck.cli import main


def _report(tmp_path, device, impl="sdpa-math"):
    out = tmp_path / "report"
    status = main(["report", "--impl", impl, "--device", device, "--corpus", "sweep-tiny", "--out", str(out)])
    return status, out


def _images(markdown: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)


def test_report_writes_markdown_and_the_figures_it_references(tmp_path, device, capsys):
    status, out = _report(tmp_path, device)
    assert status == 0
    markdown = (out / "report.md").read_text()
    images = _images(markdown)
    # sdpa-math: out and the gradients (it returns no lse), and the ratio histograms.
    assert set(images) == {"errors-out.png", "errors-dq.png", "errors-dk.png", "errors-dv.png", "ratios.png"}
    for name in images:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / name).stat().st_size > 1000
    assert sorted(p.name for p in out.glob("*.png")) == sorted(images)
    assert "Passed" in markdown and "FAILED" not in markdown
    assert "torch" in markdown and "sweep-tiny" in markdown
    rows = [line for line in markdown.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) == 6  # two lengths x three dtypes, one row per case


def test_report_of_an_implementation_beyond_its_allowance_fails_but_is_written(tmp_path, device, capsys):
    status, out = _report(tmp_path, device, impl="tests.support.noisy:twice_allowed")
    assert status == 1
    markdown = (out / "report.md").read_text()
    assert "FAILED" in markdown and re.search(r"\*\*\d", markdown)  # the ratios beyond 1 in bold
    assert "exceed their allowance" in capsys.readouterr().out


@pytest.mark.cpu  # its stub raises only on the CPU
def test_report_of_an_implementation_that_raises_fails_and_marks_the_cases(tmp_path, capsys):
    impl = "tests.support.stubs:needs_an_operator_torch_lacks_on_the_cpu"
    status, out = _report(tmp_path, "cpu", impl=impl)
    assert status == 1
    markdown = (out / "report.md").read_text()
    assert "**FAILED: the implementation raised on 6 cases**" in markdown and "Passed" not in markdown
    assert markdown.count("(**raised** NotImplementedError: Could not run 'aten::") == 6
    printed = capsys.readouterr().out
    assert f"FAILED: {impl} raised on 6 cases" in printed and printed.count("replay: flashcheck check") == 6


@pytest.mark.parametrize("extra, named", [
    (["--impl", "no-such-impl"], "--impl"),
    (["--corpus", "no-such-sweep"], "--corpus"),
])
def test_usage_errors_name_the_argument(tmp_path, device, extra, named, capsys):
    assert main(["report", "--device", device, "--out", str(tmp_path), *extra]) == 2
    assert named in capsys.readouterr().err


def test_an_unwritable_output_directory_is_a_usage_error(tmp_path, device, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    status = main(["report", "--impl", "sdpa-math", "--device", device, "--corpus", "sweep-tiny",
                   "--out", str(blocker / "report")])
    assert status == 2 and "--out" in capsys.readouterr().err


def test_histogram_counts_zeros_apart_and_clips_to_the_outer_bins():
    counts, zeros = plots.histogram(np.array([0.0, 0.0, 1e-12, 0.5, 0.5, np.inf]))
    assert zeros == 2 and counts.sum() == 4
    assert counts[0] == 1 and counts[-1] == 1  # below the first edge, and inf
    assert counts[np.searchsorted(plots.RATIO_EDGES, 0.5, side="right") - 1] == 2
