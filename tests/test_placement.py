"""Where worker processes run (:mod:`flashcheck.engine.placement`): how many by default, which GPU
each takes, the environment that pins it there, and the line that names its device."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


# -- each worker's pin ---------------------------------------------------------------------------


@pytest.mark.parametrize("visible, count, expected", [
    (None, 2, ["0", "1", "0"]), ("", 1, ["0", "0", "0"]),  # the parent has no list: the GPUs' indices
    ("4,6", 2, ["4", "6", "4"]), (" GPU-ab12 , GPU-cd34", 2, ["GPU-ab12", "GPU-cd34", "GPU-ab12"]),  # its entries
])
def test_each_worker_is_pinned_to_its_entry_of_the_parents_visible_gpus_round_robin(monkeypatch, visible, count,
                                                                                  expected):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert placement.worker_pins(3) == expected


def test_one_gpu_pins_every_worker_to_it_and_none_pins_none():
    assert placement.worker_pins(3, ["5"]) == ["5", "5", "5"]
    assert placement.worker_pins(2, []) == [None, None]
    assert placement.worker_pins(0, ["0", "1"]) == []


@pytest.mark.parametrize("worker, gpus, expected", [(0, ["4", "6"], "4"), (7, ["0", "1", "2", "3"], "3"),
                                                    (13, [str(i) for i in range(8)], "5"), (2, [], None)])
def test_a_worker_knowing_only_its_number_finds_the_same_pin(worker, gpus, expected):
    assert placement.worker_pin(worker, gpus) == expected == placement.worker_pins(worker + 1, gpus)[worker]


@pytest.mark.parametrize("call, named", [
    (lambda: placement.worker_pin(-1, ["0"]), "worker"), (lambda: placement.worker_pin("0", ["0"]), "worker"),
    (lambda: placement.worker_pins(-1, ["0"]), "workers"), (lambda: placement.worker_pins(None, ["0"]), "workers"),
])
def test_a_bad_worker_number_or_count_raises_naming_it(call, named):
    with pytest.raises(ValueError, match=f"^{named}: expected an int"):
        call()


# -- pinning this process ------------------------------------------------------------------------


def test_a_pin_sets_cuda_visible_devices_before_cuda_is_initialised(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert placement.pin_this_process("6") is True
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"
    assert placement.pin_this_process(None) is True  # nothing to pin: the environment as it was
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"


def test_a_pin_after_cuda_was_initialised_pins_only_the_processes_started_later_and_says_so(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: pytest.fail("set_device pins nothing but this process"))
    assert placement.pin_this_process("1") is False
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"


def test_a_process_about_to_pin_itself_counts_the_gpus_without_initialising_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: pytest.fail("CUDA's runtime initialises CUDA"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4, 6")
    assert placement.gpus_before_cuda() == ["4", "6"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 3, raising=False)
    assert placement.gpus_before_cuda() == ["0", "1", "2"]
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: -1, raising=False)  # NVML cannot count them
    assert placement.gpus_before_cuda() is None
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)
    assert placement.gpus_before_cuda() == []


def test_a_spawned_worker_pins_itself_before_anything_asks_torch_about_cuda():
    # The fuzzer's worker pins itself first thing; importing its module, placement included,
    # asks nothing about CUDA, and neither does the pin.
    code = textwrap.dedent("""
        import os, sys
        from flashcheck.engine import fuzz_worker, placement
        print(placement.pin_this_process("3"), os.environ["CUDA_VISIBLE_DEVICES"], "torch" in sys.modules)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "3", "False"]


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
