"""Where worker processes run: how many to start, which GPU each takes, how it is pinned
to it, and how it names the device it ended up on.

Three parts of flashcheck spread work over processes: the fuzzer's isolated workers
(:mod:`flashcheck.engine.fuzz_workers`), corpus runs (:mod:`flashcheck.regress.corpus_workers`) and the pytest
plugin under pytest-xdist (:mod:`flashcheck.pytest_plugin`). They share one way of doing it:

- **How many.** One worker per CPU core this process may use, up to a cap that each caller
  sets for its own reasons, at least one, and where the caller asks, at least one per GPU
  (:func:`default_worker_count`). The cost being spread is mostly single-threaded CPU work:
  Triton compiling kernel variants on a GPU, Python running the kernel in the interpreter.
- **Which GPU.** Worker ``i`` takes visible GPU ``i mod count`` (:func:`gpu_for_worker`), so
  that as many workers as GPUs get one each.
- **How it is pinned.** By narrowing ``CUDA_VISIBLE_DEVICES`` to that one GPU's entry of the
  parent's list (:func:`pin_environment`), set in the worker before CUDA is initialised
  there. The worker then sees its GPU as ``cuda:0``, and so does every process it starts;
  ``torch.cuda.set_device`` would pin the calling process only, and leave code that names
  ``cuda:0`` on the first GPU.
- **What it reports.** One line naming the device a worker runs on (:func:`describe_device`).

Importing this module initialises no CUDA, and neither does any function here but
:func:`describe_device` on a GPU, so a spawned worker may use it before it has pinned itself.
The functions that need torch import it themselves.
"""

from __future__ import annotations

import os

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
    first), so the caller stays able to start CUDA workers."""
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


def pin_environment(gpu: int, visible: str | None) -> dict[str, str]:
    """The environment that pins a worker process to visible GPU ``gpu``: ``{"CUDA_VISIBLE_DEVICES":
    entry}``, the entry being that GPU's in ``visible`` (the parent's ``CUDA_VISIBLE_DEVICES``:
    indices or UUIDs, comma-separated), or its index when the parent has none (``visible``
    None or empty). It must be set in the worker before CUDA is initialised there: in the
    environment the worker is started with, or first thing in a spawned worker, before
    anything asks torch about CUDA.

    Raises ValueError naming ``gpu`` when it is negative or not below the number of entries
    in ``visible``.
    """
    _check_count("gpu", gpu, 0)
    entries = _entries(visible or "")
    if not entries:
        return {VISIBLE_DEVICES: str(gpu)}
    if gpu >= len(entries):
        raise ValueError(f"gpu: expected an index below the {len(entries)} entries of {visible!r}, got {gpu}")
    return {VISIBLE_DEVICES: entries[gpu]}


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


def _entries(visible: str) -> list[str]:
    """The entries of a ``CUDA_VISIBLE_DEVICES`` value, blanks dropped."""
    return [part.strip() for part in visible.split(",") if part.strip()]
