"""Block sizes and launch settings of the forward and backward kernels.

The configuration is pinned by (device kind, dtype, padded head dim, banded or not): a
given problem always runs the same kernel variant, so results are reproducible run to run
(the backward is bitwise deterministic for a given configuration, and a pinned one keeps it
so across runs and processes) and the number of compiled variants stays small.

On Hopper GPUs (compute capability 9.x) the 16-bit configurations for head dims up to 128
come from :data:`TUNED_SM90`, measured by ``python -m flashcheck.devtools.tune`` (it times
every candidate of :mod:`flashcheck.devtools.tune` and prints this table); "banded" means a
causal or sliding-window band, whose diagonal blocks shift the best shapes. Everything else
(other GPUs, float32, head dims above 128) uses the conservative defaults below, which fit
the shared memory of any GPU since Ampere.

Interpreter runs use 32-row query blocks and 16-key key blocks, so that small CPU problems
still span several blocks and exercise every block-boundary path (band edges, free blocks,
partial blocks), and with tiles that are not square, as the tuned GPU settings' are: code
that confuses ``BLOCK_M`` with ``BLOCK_N`` computes the same with square tiles.
``tests/test_kernel_tiles.py`` runs other shapes too.
"""

from __future__ import annotations

import functools
import os

import torch
import triton

#: True when Triton runs kernels in its CPU interpreter. Triton reads the variable when
#: a kernel is defined, so it must be set before this package is imported.
INTERPRETER = os.environ.get("TRITON_INTERPRET", "0") == "1"

INTERPRETER_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 1, "num_stages": 1}


def _launch(block_m, block_n, num_warps, num_stages) -> dict:
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": num_warps, "num_stages": num_stages}


#: Tuned on Hopper: (dtype name, padded head dim, banded) -> {"forward", "dk_dv", "dq"}.
#: Printed by ``python -m flashcheck.devtools.tune``. How each row was chosen and measured (H100 sweeps, benchmark gate): docs/performance.md.
TUNED_SM90: dict[tuple[str, int, bool], dict[str, dict]] = {
    ("bfloat16", 64, False): {"forward": _launch(128, 64, 8, 3), "dk_dv": _launch(64, 64, 4, 3), "dq": _launch(64, 64, 4, 3)},
    ("bfloat16", 64, True): {"forward": _launch(128, 64, 8, 3), "dk_dv": _launch(64, 64, 4, 3), "dq": _launch(128, 32, 4, 3)},
    ("bfloat16", 128, False): {"forward": _launch(64, 64, 4, 3), "dk_dv": _launch(64, 64, 4, 2), "dq": _launch(128, 64, 8, 3)},
    ("bfloat16", 128, True): {"forward": _launch(64, 64, 4, 3), "dk_dv": _launch(64, 64, 4, 2), "dq": _launch(128, 64, 8, 3)},
    ("float16", 64, False): {"forward": _launch(128, 64, 8, 3), "dk_dv": _launch(64, 64, 4, 3), "dq": _launch(64, 64, 4, 3)},
    ("float16", 64, True): {"forward": _launch(128, 64, 8, 3), "dk_dv": _launch(64, 64, 4, 2), "dq": _launch(128, 32, 4, 3)},
    ("float16", 128, False): {"forward": _launch(64, 64, 4, 3), "dk_dv": _launch(64, 64, 4, 2), "dq": _launch(128, 64, 8, 3)},
    ("float16", 128, True): {"forward": _launch(64, 64, 4, 3), "dk_dv": _launch(64, 64, 4, 2), "dq": _launch(128, 64, 8, 3)},
}


#: float32 above head dim 128, forward and backward. float32 products are IEEE FMA dots, not
#: tensor-core ones, and each thread holds its share of both operands in registers, so at
#: BLOCK_D 256 the 32 x 32 tiles of the other float32 rows spilled 36-77 KB per thread
#: (ptxas, sm90); 16 x 16 tiles spill nothing. Measured on an H100 (docs/performance.md):
#: 5x faster (forward+backward, 2048 tokens) and 4.6x faster to compile.
_FLOAT32_WIDE = _launch(16, 16, 4, 1)


def padded_head_dim(head_dim: int) -> int:
    """The head dim the kernels tile with (``BLOCK_D``): the next power of two, at least 16."""
    return max(16, triton.next_power_of_2(head_dim))


@functools.cache
def _capability(device_index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(device_index)


def _tuned(dtype: torch.dtype, head_dim: int, banded: bool, device) -> dict | None:
    device = torch.device(device) if device is not None else None
    if device is None or device.type != "cuda" or dtype not in (torch.float16, torch.bfloat16):
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    if _capability(index)[0] != 9:
        return None
    return tuned_sm90(dtype, head_dim, banded)


def tuned_sm90(dtype: torch.dtype, head_dim: int, banded: bool) -> dict | None:
    """The :data:`TUNED_SM90` entry of a call, or None where there is none."""
    return TUNED_SM90.get((str(dtype).removeprefix("torch."), padded_head_dim(head_dim), bool(banded)))


def forward_config(dtype: torch.dtype, head_dim: int, *, banded: bool = False, device=None) -> dict:
    """Launch settings of the forward kernel: ``BLOCK_M``, ``BLOCK_N``, ``num_warps``,
    ``num_stages``. ``banded``: the call has a causal or window band. ``device``: where it
    runs (None: the defaults)."""
    if INTERPRETER:
        return dict(INTERPRETER_CONFIG)
    tuned = _tuned(dtype, head_dim, banded, device)
    if tuned is not None:
        return dict(tuned["forward"])
    block_d = padded_head_dim(head_dim)
    if dtype == torch.float32:
        if block_d > 128:
            return dict(_FLOAT32_WIDE)
        # float32 tiles take twice the shared memory of 16-bit ones.
        return _launch(64 if block_d <= 64 else 32, 32, 4, 2)
    if block_d <= 64:
        return _launch(128, 64, 4, 3)
    if block_d <= 128:
        return _launch(128, 64, 8, 2)
    return _launch(64, 32, 4, 2)


def backward_config(dtype: torch.dtype, head_dim: int, *, banded: bool = False, device=None) -> dict:
    """Launch settings of the backward: ``{"dk_dv": ..., "dq": ...}``, one set per kernel
    (``_dk_dv`` holds a ``BLOCK_N`` key block and walks ``BLOCK_M`` query blocks; ``_dq``
    the other way round), each as for :func:`forward_config`."""
    if INTERPRETER:
        return {"dk_dv": dict(INTERPRETER_CONFIG), "dq": dict(INTERPRETER_CONFIG)}
    tuned = _tuned(dtype, head_dim, banded, device)
    if tuned is not None:
        return {"dk_dv": dict(tuned["dk_dv"]), "dq": dict(tuned["dq"])}
    block_d = padded_head_dim(head_dim)
    if dtype == torch.float32 and block_d > 128:
        default = dict(_FLOAT32_WIDE)
    elif dtype == torch.float32 or block_d > 128:
        default = _launch(32, 32, 4, 1)
    elif block_d <= 64:
        default = _launch(64, 64, 4, 2)
    else:
        default = _launch(64, 64, 8, 2)
    return {"dk_dv": default, "dq": dict(default)}
