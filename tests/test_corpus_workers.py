"""Corpus runs spread over worker processes (``--jobs``): the same measurements as one
process, in corpus order, with crashes reported by case rather than as a broken pool."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

from flashcheck import peers, protocol
from flashcheck.regress import corpus, corpus_workers
from flashcheck.cli import main

TINY = corpus.BASELINE_CORPORA["tiny"]


def _ratios(results):
    return [(r.case.spec(), r.skipped, {name: e.worst_ratio for name, e in r.outputs.items()}) for r in results]


def test_workers_measure_exactly_what_one_process_measures(device):
    seen = []
    pooled = corpus_workers.measure_corpus("sdpa-math", TINY, device, jobs=2,
                                           on_case=lambda index, result: seen.append(index))
    alone = corpus.measure_corpus(peers.resolve("sdpa-math"), TINY, device)
    assert _ratios(pooled) == _ratios(alone)
    assert [r.case for r in pooled] == list(TINY.cases)  # corpus order, the parent's own Case objects
    assert sorted(seen) == list(range(len(TINY.cases)))


def raising(q, k, v, **kwargs):
    raise RuntimeError("planted in a worker")


def dying(q, k, v, **kwargs):
    import os

    os.abort()


raising.flashcheck_features = dying.flashcheck_features = protocol.features_of(peers.resolve("sdpa-math"), "cpu")


def test_what_the_implementation_raises_in_a_worker_is_that_cases_finding_as_in_one_process(device):
    pooled = corpus_workers.measure_corpus("tests.test_corpus_workers:raising", TINY, device, jobs=2)
    alone = corpus.measure_corpus(raising, TINY, device)
    assert [(r.raised, r.skipped) for r in pooled] == [(r.raised, r.skipped) for r in alone]
    measured = [r for r in pooled if not r.skipped]
    assert measured and all(r.raised == "RuntimeError: planted in a worker" and not r.outputs for r in measured)


def test_a_worker_that_dies_fails_the_command_with_replay_lines(tmp_path, device, capsys):
    status = main(["baseline", "record", "--impl", "tests.test_corpus_workers:dying", "--corpus", "tiny",
                   "--device", device, "--jobs", "2", "--file", str(tmp_path / "b.json")])
    out = capsys.readouterr().out
    assert status == 1 and "worker process died" in out
    assert "flashcheck check --impl tests.test_corpus_workers:dying --property out_matches_reference --case" in out
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("command", [["baseline", "check"], ["baseline", "record"], ["report", "--out", "r"]])
def test_jobs_below_one_is_a_usage_error_naming_the_argument(command, device, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--device", device, "--jobs", "0"])
    assert exit_info.value.code == 2 and "--jobs" in capsys.readouterr().err


def test_default_jobs_use_the_cores_on_a_gpu_and_one_process_on_the_cpu(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(3)), raising=False)
    assert corpus_workers.default_jobs("cuda") == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert corpus_workers.default_jobs("cuda") == corpus_workers.MAX_DEFAULT_JOBS == 8
    assert corpus_workers.default_jobs("cpu") == 1


# -- GPU pinning ----------------------------------------------------------------------------------


def test_with_several_gpus_each_worker_is_pinned_through_cuda_visible_devices_in_turn(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6,7")  # as the worker inherits it from the parent
    counter = multiprocessing.get_context("spawn").Value("i", 0)
    pinned = []
    for _ in range(4):  # four workers starting, each running the initialiser once
        corpus_workers._start_worker(counter, ["4", "6", "7"])
        pinned.append(os.environ["CUDA_VISIBLE_DEVICES"])
    assert pinned == ["4", "6", "7", "4"]


def test_with_one_gpu_every_worker_is_pinned_to_it_and_without_one_the_environment_is_left_alone(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    counter = multiprocessing.get_context("spawn").Value("i", 0)
    corpus_workers._start_worker(counter, ["5"])
    corpus_workers._start_worker(counter, ["5"])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    corpus_workers._start_worker(counter, [])  # on the CPU
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_a_spawned_worker_loads_this_module_without_asking_torch_about_cuda():
    # The pin acts only if CUDA is not initialised before the initialiser runs, and a spawned
    # worker imports this module (and what it imports) to find the initialiser.
    code = textwrap.dedent("""
        import torch
        asked = []
        for name in ("is_available", "device_count", "current_device", "init", "_lazy_init"):
            def spy(*args, _name=name, _real=getattr(torch.cuda, name), **kwargs):
                asked.append(_name)
                return _real(*args, **kwargs)
            setattr(torch.cuda, name, spy)
        import flashcheck.regress.corpus_workers
        print(asked)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
