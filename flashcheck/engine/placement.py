"""Where worker processes run: how many to start, which GPU each takes, how it is pinned
to it, and how it names the device it ended up on.

Three parts of flashcheck spread work over processes: the fuzzer's isolated workers
(:mod:`flashcheck.engine.fuzz_workers`), corpus runs (:mod:`flashcheck.regress.corpus_workers`) and the pytest
plugin under pytest-xdist (:mod:`flashcheck.pytest_plugin`). They share one way of doing it,
all of it here:

- **How many.** One worker per CPU core this process may use, up to a cap that each caller
  sets for its own reasons, at least one, and where the caller asks, at least one per GPU
  (:func:`default_worker_count`). The cost being spread is mostly single-threaded CPU work:
  Triton compiling kernel variants on a GPU, Python running the kernel in the interpreter.
- **Which GPU.** Worker ``i`` takes visible GPU ``i mod count`` (:func:`gpu_for_worker`), so
  that as many workers as GPUs get one each; its pin is that GPU's entry of the visible
  GPUs (:func:`worker_pin`, :func:`worker_pins`). Every worker is pinned wherever there is a
  GPU, one GPU included (the pin then names the GPU it would have used anyway, and the
  worker's report says which it is); without one, none is.
- **How it is pinned.** By narrowing ``CUDA_VISIBLE_DEVICES`` to that one entry, in the worker,
  before CUDA is initialised there (:func:`pin_this_process`): a parent that starts its
  workers hands each its pin (the fuzzer), and workers that know only their own number
  compute it themselves (a process pool's initialiser, an xdist worker). The worker then
  sees its GPU as ``cuda:0``, and so does every process it starts.

  CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when it is initialised in a process. Where it
  already was (torch used CUDA before the pin), the variable no longer acts on that
  process: it stays on every GPU it was initialised with, and only the processes it starts
  from then on are pinned. :func:`pin_this_process` says so by returning False. A process
  that pins itself must therefore count the GPUs without initialising CUDA: from its own
  ``CUDA_VISIBLE_DEVICES``, else through NVML (:func:`gpus_before_cuda`); where NVML cannot
  count them, CUDA's runtime could only by initialising itself, so such a process stays
  unpinned, on the GPUs it sees. ``torch.cuda.set_device`` is no substitute for a pin and
  is never used: it moves the calling process's default device only, and leaves whatever
  names ``cuda:0``, and every process it starts, on the first GPU.
- **What it reports.** One line naming the device a worker runs on (:func:`describe_device`).

Importing this module initialises no CUDA, and neither does any function here but
:func:`describe_device` on a GPU and :func:`visible_gpus` where NVML cannot count the GPUs, so
a spawned worker may use it before it has pinned itself. The functions that need torch
import it themselves.
"""

from __future__ import annotations

import os
import sys

#: The variable that pins a process to GPUs: CUDA reads it once, when it is initialised.
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def _check_count(name: str, value, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name}: expected an int of at least {minimum}, got {value!r}")


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, where the platform has one;
    else every core of the machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1


def default_worker_count(cap: int, *, gpus: int = 0, cores: int | None = None) -> int:
    """Workers to start when the user names no count: one per core, at most ``cap``, at
    least one, and at least ``gpus`` (pass the visible GPUs' count where every GPU should
    get a worker, even beyond the cap).

    ``cores`` is the cores these workers may use, by default :func:`usable_cores`; a caller
    running several groups of workers at once passes its share. Raises ValueError naming
    the argument when ``cap`` is below 1 or ``gpus`` or ``cores`` below 0.
    """
    _check_count("cap", cap, 1)
    _check_count("gpus", gpus, 0)
    if cores is not None:
        _check_count("cores", cores, 0)
    return max(1, min(usable_cores() if cores is None else cores, cap), gpus)


def visible_gpus() -> list[str]:
    """The GPUs this process may hand to workers, as ``CUDA_VISIBLE_DEVICES`` entries: the
    entries of its own ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs) where that is set, else
    the indices of every GPU torch counts. Counting creates no CUDA context (torch asks NVML
    first, and where NVML cannot count, CUDA's runtime, which initialises CUDA here but makes
    no context), so the caller stays able to start CUDA workers; a process that is to pin
    itself counts with :func:`gpus_before_cuda` instead."""
    visible = os.environ.get(VISIBLE_DEVICES)
    if visible:
        return _entries(visible)
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def gpu_for_worker(worker: int, gpu_count: int) -> int:
    """The visible GPU, by index, that worker number ``worker`` (0, 1, ...) takes among
    ``gpu_count``: ``worker mod gpu_count``, round-robin, so that ``gpu_count`` workers get
    one GPU each. Raises ValueError naming the argument when ``worker`` is below 0 or
    ``gpu_count`` below 1."""
    _check_count("worker", worker, 0)
    _check_count("gpu_count", gpu_count, 1)
    return worker % gpu_count


def worker_pin(worker: int, gpus: list[str]) -> str | None:
    """The pin of worker number ``worker`` (0, 1, ...): the ``CUDA_VISIBLE_DEVICES`` entry of the
    GPU it takes among ``gpus`` (entries as :func:`visible_gpus` gives them), the
    ``worker mod len(gpus)``-th (:func:`gpu_for_worker`); None without GPUs (nothing to pin).
    Raises ValueError naming ``worker`` when it is below 0."""
    _check_count("worker", worker, 0)
    return gpus[gpu_for_worker(worker, len(gpus))] if gpus else None


def worker_pins(workers: int, gpus: list[str] | None = None) -> list[str | None]:
    """The pins of ``workers`` workers numbered 0, 1, ... (:func:`worker_pin`), among ``gpus``,
    by default the GPUs this process sees (:func:`visible_gpus`, for a parent that pins only
    the processes it starts). Raises ValueError naming ``workers`` when it is below 0."""
    _check_count("workers", workers, 0)
    gpus = visible_gpus() if gpus is None else gpus
    return [worker_pin(worker, gpus) for worker in range(workers)]


def gpus_before_cuda() -> list[str] | None:
    """The GPUs this process sees, as :func:`visible_gpus` gives them, counted without
    initialising CUDA here, for a process about to pin itself: the entries of its
    ``CUDA_VISIBLE_DEVICES`` where that is set, else the indices of the GPUs NVML counts; an
    empty list where torch was built without CUDA; None where NVML cannot count them (CUDA's
    runtime would count them only by initialising itself, after which no pin acts here)."""
    visible = os.environ.get(VISIBLE_DEVICES)
    if visible:
        return _entries(visible)
    import torch

    if not torch.backends.cuda.is_built():
        return []
    count = getattr(torch.cuda, "_device_count_nvml", lambda: -1)()
    return None if count < 0 else [str(index) for index in range(count)]


def pin_this_process(pin: str | None) -> bool:
    """Pin this process to the GPU ``pin`` names (a ``CUDA_VISIBLE_DEVICES`` entry, from
    :func:`worker_pin`) by setting ``CUDA_VISIBLE_DEVICES`` to it; None leaves the environment
    as it is. Call it before anything initialises CUDA in this process: first thing in a
    spawned worker, before torch is asked about CUDA. Returns whether the pin acts on this
    process: False where torch had already initialised CUDA here, when the variable, set all
    the same, pins only the processes this one starts from then on (see the module's
    docstring); True otherwise, None included."""
    if pin is None:
        return True
    torch = sys.modules.get("torch")  # not imported: CUDA not initialised by it
    initialised = torch is not None and torch.cuda.is_initialized()
    os.environ[VISIBLE_DEVICES] = pin
    return not initialised


def describe_device(device: str) -> str:
    """The device this process computes on, in one line, for reports of where each worker ran.

    On CUDA (``device`` ``"cuda"`` or ``"cuda:N"``): the torch device, the GPU's name and the
    start of its UUID, and the ``CUDA_VISIBLE_DEVICES`` the process was pinned with, where
    it has one: ``cuda:0 NVIDIA H100 80GB HBM3 GPU-1a2b3c4d (CUDA_VISIBLE_DEVICES=3)``. This
    initialises CUDA. On the CPU: ``cpu``, or ``cpu, Triton interpreter`` where
    ``TRITON_INTERPRET=1`` runs the Triton kernels. Raises ValueError naming ``device`` for
    anything but a CPU or CUDA device.
    """
    kind = device.split(":")[0] if isinstance(device, str) else None
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if kind == "cpu":
        return "cpu" + (", Triton interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "")
    import torch

    index = torch.device(device).index
    if index is None:
        index = torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    uuid = str(getattr(properties, "uuid", "") or "")
    visible = os.environ.get(VISIBLE_DEVICES)
    return (f"cuda:{index} {properties.name}" + (f" GPU-{uuid[:8]}" if uuid else "")
            + (f" ({VISIBLE_DEVICES}={visible})" if visible else ""))


def compute_capability(device: str) -> str | None:
    """The compute capability of the GPU this process computes on (``"9.0"``), where ``device``
    is CUDA (this initialises CUDA); None on the CPU. Recorded with each fuzz worker, so that a
    result read elsewhere says which GPU its GPU-dependent declarations were read for
    (:mod:`flashcheck.engine.triage`)."""
    if not isinstance(device, str) or not device.startswith("cuda"):
        return None
    import torch

    index = torch.device(device).index
    major, minor = torch.cuda.get_device_capability(torch.cuda.current_device() if index is None else index)
    return f"{major}.{minor}"


def _entries(visible: str) -> list[str]:
    """The entries of a ``CUDA_VISIBLE_DEVICES`` value, blanks dropped."""
    return [part.strip() for part in visible.split(",") if part.strip()]
