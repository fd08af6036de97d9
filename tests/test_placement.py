"""Where worker processes run (:mod:`flashcheck.engine.placement`): how many by default, which GPU
each takes, the environment that pins it there, and the line that names its device."""
from __future__ import annotations

import os
import types

import pytest
import torch

from flashcheck.engine import placement


@pytest.fixture
def cores(monkeypatch):
    """Set the CPU cores this process may use."""
    def set_cores(count: int) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(count)), raising=False)
    return set_cores


# -- cores and the default worker count --------------------------------------------------------


def test_the_usable_cores_are_the_process_affinity_not_the_machine(cores):
    cores(3)
    assert placement.usable_cores() == 3


def test_without_an_affinity_mask_every_core_of_the_machine_is_usable(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    assert placement.usable_cores() == 12
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert placement.usable_cores() == 1


@pytest.mark.parametrize("usable, cap, expected", [(3, 8, 3), (64, 8, 8), (64, 16, 16), (1, 8, 1), (16, 1, 1)])
def test_by_default_one_worker_runs_per_usable_core_up_to_the_callers_cap(cores, usable, cap, expected):
    cores(usable)
    assert placement.default_worker_count(cap) == expected


def test_every_gpu_gets_a_worker_even_beyond_the_cores_and_the_cap(cores):
    cores(2)
    assert placement.default_worker_count(8, gpus=3) == 3
    cores(64)
    assert placement.default_worker_count(8, gpus=16) == 16
    assert placement.default_worker_count(8, gpus=2) == 8  # enough workers already


def test_a_callers_share_of_the_cores_replaces_the_usable_cores(cores):
    cores(64)
    assert placement.default_worker_count(8, cores=3) == 3
    assert placement.default_worker_count(8, cores=0) == 1  # never fewer than one worker


@pytest.mark.parametrize("arguments, named", [
    (dict(cap=0), "cap"), (dict(cap=-1), "cap"), (dict(cap="8"), "cap"), (dict(cap=True), "cap"),
    (dict(cap=8, gpus=-1), "gpus"), (dict(cap=8, gpus=1.0), "gpus"),
    (dict(cap=8, cores=-1), "cores"),
])
def test_a_bad_count_argument_raises_naming_it(arguments, named):
    with pytest.raises(ValueError, match=f"^{named}: expected an int of at least"):
        placement.default_worker_count(**arguments)


# -- the visible GPUs and which one a worker takes ---------------------------------------------


def test_the_visible_gpus_are_the_entries_of_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", " 4, 6,,GPU-ab12 ")
    assert placement.visible_gpus() == ["4", "6", "GPU-ab12"]


def test_without_cuda_visible_devices_every_gpu_torch_counts_is_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert placement.visible_gpus() == ["0", "1", "2"]


@pytest.mark.parametrize("worker, count, expected", [(0, 2, 0), (1, 2, 1), (2, 2, 0), (7, 4, 3), (13, 8, 5), (5, 1, 0)])
def test_workers_take_the_gpus_round_robin(worker, count, expected):
    assert placement.gpu_for_worker(worker, count) == expected


def test_as_many_workers_as_gpus_get_one_gpu_each():
    for count in range(1, 9):
        assert sorted(placement.gpu_for_worker(worker, count) for worker in range(count)) == list(range(count))


@pytest.mark.parametrize("worker, count, named", [(-1, 2, "worker"), ("0", 2, "worker"), (0, 0, "gpu_count"),
                                                   (0, -2, "gpu_count"), (0, None, "gpu_count")])
def test_a_bad_worker_or_gpu_count_raises_naming_it(worker, count, named):
    with pytest.raises(ValueError, match=f"^{named}: "):
        placement.gpu_for_worker(worker, count)


# -- the environment that pins a worker ----------------------------------------------------------


@pytest.mark.parametrize("gpu, visible, expected", [
    (1, None, "1"), (0, "", "0"),  # the parent has no list: the GPU's index
    (1, "4,6", "6"), (0, " GPU-ab12 , GPU-cd34", "GPU-ab12"),  # the parent's entry, index or UUID
])
def test_a_worker_is_pinned_to_its_entry_of_the_parents_cuda_visible_devices(gpu, visible, expected):
    assert placement.pin_environment(gpu, visible) == {"CUDA_VISIBLE_DEVICES": expected}


def test_a_gpu_beyond_the_parents_list_raises_naming_it():
    with pytest.raises(ValueError, match="^gpu: expected an index below the 2 entries of '4,6', got 2"):
        placement.pin_environment(2, "4,6")


@pytest.mark.parametrize("gpu", [-1, "1", None])
def test_a_gpu_that_is_not_an_index_raises_naming_it(gpu):
    with pytest.raises(ValueError, match="^gpu: "):
        placement.pin_environment(gpu, None)


# -- the device a worker reports ------------------------------------------------------------------


def test_a_cpu_worker_says_whether_the_triton_interpreter_runs_the_kernels(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert placement.describe_device("cpu") == "cpu, Triton interpreter"
    monkeypatch.delenv("TRITON_INTERPRET")
    assert placement.describe_device("cpu") == "cpu"


def test_a_gpu_worker_names_its_device_gpu_and_pin(monkeypatch):
    h100 = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", uuid="1a2b3c4d-0000-1111-2222-333344445555")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: h100)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert placement.describe_device("cuda") == "cuda:0 NVIDIA H100 80GB HBM3 GPU-1a2b3c4d (CUDA_VISIBLE_DEVICES=3)"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert placement.describe_device("cuda:1") == "cuda:1 NVIDIA H100 80GB HBM3 GPU-1a2b3c4d"


@pytest.mark.parametrize("device", ["gpu", "mps", "", None])
def test_a_device_that_is_neither_cpu_nor_cuda_raises_naming_it(device):
    with pytest.raises(ValueError, match="^device: "):
        placement.describe_device(device)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_description_names_the_gpu_torch_uses():
    assert placement.describe_device("cuda").startswith(f"cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}")
