"""``--impl`` as every command that takes it checks it: an implementation that cannot be loaded,
or whose declarations name what does not exist, is a one-line usage error (exit 2) before any
work (docs/cli.md), whichever command is given it."""

from __future__ import annotations

import pytest

from flashcheck.cli.commands import EXIT_USAGE
from flashcheck.engine import fuzz_workers
from flashcheck.regress import corpus_workers, error_report
from tests.support.cli_process import flashcheck

PLAIN_CASE = "batch=1 seqlen_q=4 seqlen_k=6 heads=1 kv_heads=1 head_dim=8 dtype=float32 seed=3"


def fuzz(tmp_path):
    return ["fuzz", "--workers", "1", "--budget", "5", "--database", str(tmp_path / "examples")]


def check(tmp_path):
    return ["check", "--property", "out_matches_reference", "--case", PLAIN_CASE]


def baseline_record(tmp_path):
    return ["baseline", "record", "--corpus", "tiny", "--file", str(tmp_path / "baseline.json")]


def baseline_check(tmp_path):
    return ["baseline", "check", "--file", str(tmp_path / "baseline.json")]


def report(tmp_path):
    return ["report", "--corpus", "sweep-tiny", "--out", str(tmp_path / "report")]


@pytest.mark.parametrize("impl, message", [
    ("tests.support.stubs:unknown_feature",
     "--impl tests.support.stubs:unknown_feature: flashcheck_features names unknown feature 'casual'; known:"),
    ("tests.support.stubs:device_kind_misspelt",
     "--impl tests.support.stubs:device_kind_misspelt: flashcheck_features_by_device names 'gpu', not a device kind"),
    ("tests.support.stubs:misnamed_not_applicable",
     "--impl tests.support.stubs:misnamed_not_applicable: flashcheck_not_applicable names unknown property 'empty_row_exact'"),
    ("tests.support.raises_at_import:attention",
     "--impl: cannot import module 'tests.support.raises_at_import' of 'tests.support.raises_at_import:attention': RuntimeError"),
    ("no-such-impl", "--impl: unknown implementation 'no-such-impl'"),
], ids=["unknown-feature", "unknown-device-kind", "unknown-not-applicable-property", "raises-at-import", "unknown-name"])
@pytest.mark.parametrize("command", [fuzz, check, baseline_record, baseline_check, report],
                         ids=lambda command: command.__name__.replace("_", " "))
def test_every_command_refuses_an_implementation_it_cannot_use_in_one_line_before_any_work(
        tmp_path, monkeypatch, capsys, command, impl, message):
    for module, name in ((fuzz_workers, "fuzz"), (corpus_workers, "measure_corpus"), (error_report, "build")):
        monkeypatch.setattr(module, name, lambda *args, **kwargs: pytest.fail("work started"))
    assert flashcheck([*command(tmp_path), "--impl", impl, "--device", "cpu"]) == EXIT_USAGE
    captured = capsys.readouterr()
    [line] = captured.err.strip().splitlines()
    assert line.startswith("flashcheck") and message in line, line
    assert "Traceback" not in captured.out + captured.err
    assert list(tmp_path.iterdir()) == [], "nothing written"
