"""An implementation whose call runs a Triton kernel autotuned on the query length (as the Triton
tutorial's fused attention is on ``N_CTX``) and declares it in ``flashcheck_autotuners``: correct
attention (:data:`tests.support.standalone_kernels.correct`) beside a kernel that writes the block
size of the configuration it ran, kept in :data:`RAN`; its autotuner times configurations with the
wall clock, so that it tunes under Triton's interpreter too, and each key it tuned is kept in
:data:`TUNED`.

- ``attention``: declares the autotuner (flashcheck pins it);
- ``declares_a_function``: declares a plain function as an autotuner (a malformed declaration).
"""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

from tests.support import standalone_kernels

BLOCKS = (16, 32, 64)
#: The block size of the configuration each call ran.
RAN: list[int] = []
#: The keys (query lengths) the autotuner tuned, timing every configuration.
TUNED: list[int] = []


def _wall_clock(kernel_call, quantiles):
    """Times one run of ``kernel_call`` (Triton's benchmarker needs a GPU driver)."""
    start = time.perf_counter()
    kernel_call()
    elapsed = time.perf_counter() - start
    return [elapsed] * len(quantiles)


@triton.autotune(configs=[triton.Config({"BLOCK": block}) for block in BLOCKS], key=["n"], do_bench=_wall_clock)
@triton.jit
def tagged(out, n, BLOCK: tl.constexpr):
    """Writes its configuration's block size."""
    tl.store(out + tl.arange(0, 1), tl.full((1,), BLOCK, tl.float32))


def attention(q, k, v, **kwargs):
    tag = torch.zeros(1, device=q.device)
    tuned_before = len(tagged.cache)
    length = q.shape[-3] if q.dim() == 4 else q.shape[0]
    tagged[(1,)](tag, length)
    if len(tagged.cache) > tuned_before:
        TUNED.append(length)
    RAN.append(int(tag.item()))
    return standalone_kernels.correct(q, k, v, **kwargs)


def declares_a_function(q, k, v, **kwargs):
    return attention(q, k, v, **kwargs)


DTYPES = frozenset({"float16", "bfloat16", "float32"})
for _impl in (attention, declares_a_function):
    _impl.flashcheck_features = standalone_kernels.FEATURES | DTYPES
attention.flashcheck_autotuners = [tagged]
declares_a_function.flashcheck_autotuners = [attention]
