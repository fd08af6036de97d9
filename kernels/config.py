"""Block sizes and launch settings for the forward kernel.

The configuration is pinned by (device kind, dtype, padded head dim) so that a given
problem always runs the same kernel variant: results are reproducible run to run and the
number of compiled variants stays small (five head-dim classes x three dtypes).
Interpreter runs use 16 x 16 blocks so that small CPU problems still span several blocks
and exercise every block-boundary path.
"""

from __future__ import annotations

import os

import torch
import triton

#: True when Triton runs kernels in its CPU interpreter. Triton reads the variable when
#: a kernel is defined, so it must be set before this package is imported.
INTERPRETER = os.environ.get("TRITON_INTERPRET", "0") == "1"

INTERPRETER_CONFIG = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 1}


def forward_config(dtype: torch.dtype, head_dim: int) -> dict:
    """Launch settings for the forward kernel on this device kind."""
    if INTERPRETER:
        return dict(INTERPRETER_CONFIG)
    block_d = max(16, triton.next_power_of_2(head_dim))
    if dtype == torch.float32:
        # float32 tiles take twice the shared memory of 16-bit ones.
        block_m = 64 if block_d <= 64 else 32
        return {"BLOCK_M": block_m, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2 if block_d <= 128 else 1}
    if block_d <= 64:
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}
    if block_d <= 128:
        return {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
    return {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}


def backward_config(dtype: torch.dtype, head_dim: int) -> dict:
    """Launch settings for the three backward kernels (pinned: the backward is deterministic
    for a given configuration, and a pinned one keeps it so across runs)."""
    if INTERPRETER:
        return dict(INTERPRETER_CONFIG)
    block_d = max(16, triton.next_power_of_2(head_dim))
    if dtype == torch.float32 or block_d > 128:
        return {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4, "num_stages": 1}
    if block_d <= 64:
        return {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}
    return {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}
