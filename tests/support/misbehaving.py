"""Implementations that take their process down, for the fuzzer's crash and hang isolation.

Each wraps the correct pure-torch implementation of :mod:`tests.support.buggy` and misbehaves on
every case with more than one query, so that a run meets it at once and the smallest
case hypothesis draws first (one query) passes. Float32 only, to keep the runs short.
"""

from __future__ import annotations

import ctypes
import os
import time

import torch

from tests.support import buggy

FEATURES = frozenset({"lse", "float32"})


def _misbehaving(act):
    def attention(q, k, v, **kwargs):
        if q.shape[-3] > 1:
            act()
        return buggy.correct(q, k, v, **kwargs)

    attention.flashcheck_features = FEATURES
    return attention


#: Reads address 0: the process dies with SIGSEGV, as a kernel writing through a wild pointer would.
segfault = _misbehaving(lambda: ctypes.string_at(0))
#: Aborts: the process dies with SIGABRT, as a failed assertion in native code would.
abort = _misbehaving(os.abort)
def _raise():
    raise RuntimeError("planted")


#: Raises an ordinary exception: a failure of the property, not a crash.
raising = _misbehaving(_raise)


def _lose_the_cuda_context():
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


#: Raises what torch raises once a kernel has stored through a wild pointer (the CUDA context
#: is lost: nothing more can run in the process), without a GPU: a fatal error, not a failure.
fatal_cuda_error = _misbehaving(_lose_the_cuda_context)
#: Never returns, as a kernel spinning on a barrier would.
hang = _misbehaving(lambda: time.sleep(10**6))

#: Seconds that each case of :data:`compiles_slowly` and :data:`runs_slowly` takes.
SLOW_SECONDS = 3


def _compile_slowly():
    """Spend :data:`SLOW_SECONDS` in a Triton compilation, announced as Triton's JIT
    announces one (its hooks before and after): what the first call of a new kernel variant
    does on a GPU."""
    from triton import knobs

    details = dict(key=None, repr="slow", fn=None, compile={}, is_manual_warmup=False, already_compiled=False)
    if knobs.runtime.jit_cache_hook:
        knobs.runtime.jit_cache_hook(**details)
    time.sleep(SLOW_SECONDS)
    if knobs.runtime.jit_post_compile_hook:
        knobs.runtime.jit_post_compile_hook(**details)


#: Compiles for a few seconds on every case: not a hang, however short the per-case timeout.
compiles_slowly = _misbehaving(_compile_slowly)
#: Takes as long on every case without compiling: a hang when that is past the timeout.
runs_slowly = _misbehaving(lambda: time.sleep(SLOW_SECONDS))


def _illegal_address():
    """Store through a wild pointer on the GPU: CUDA reports an illegal address, and the
    process's CUDA context is unusable from then on (only a fresh process recovers)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def wild_store(pointer):
        tl.store(pointer + (1 << 40), 1.0)

    target = torch.zeros(1, device="cuda")
    wild_store[(1,)](target)
    torch.cuda.synchronize()


#: A kernel that stores far outside its tensor (CUDA only: the interpreter checks no bounds
#: and would scribble over this process's memory instead).
illegal_address = _misbehaving(_illegal_address)


def _racy():
    from tests.support import mutants

    attention = mutants.nondeterministic(buggy.correct)
    attention.flashcheck_features = FEATURES
    attention.flashcheck_known_divergences = {"deterministic": "one output element moves by an ulp between calls"}
    return attention


#: Not bitwise reproducible (one element moves by one unit in the last place per call), and
#: declares it: a known divergence, which fuzzing reports without counting it a finding.
racy_declared = _racy()


#: Environment variable naming the file :data:`hangs_announced` creates as it starts to hang.
HANGING_MARKER = "FLASHCHECK_TEST_HANGING_MARKER"


def _hang_announced():
    marker = os.environ.get(HANGING_MARKER)
    if marker:
        open(marker, "a").close()
    time.sleep(10**6)


#: Never returns, as :data:`hang`, after creating the file :data:`HANGING_MARKER` names: a test
#: can interrupt a run while a case is in flight.
hangs_announced = _misbehaving(_hang_announced)

#: Environment variable naming the file :data:`shrinks_slowly` creates once it is shrinking.
SHRINKING_MARKER = "FLASHCHECK_TEST_SHRINKING_MARKER"
#: Seconds each call of :data:`shrinks_slowly` takes while it shrinks.
SHRINK_CALL_SECONDS = 10
_failing_calls = []


def _fail_slowly():
    """Fail, and from the second failing call on (hypothesis shrinking the first failure)
    create the file :data:`SHRINKING_MARKER` names and take :data:`SHRINK_CALL_SECONDS` per
    call, so that a test can interrupt the run while it shrinks."""
    _failing_calls.append(None)
    if len(_failing_calls) > 1:
        marker = os.environ.get(SHRINKING_MARKER)
        if marker:
            open(marker, "a").close()
        time.sleep(SHRINK_CALL_SECONDS)
    raise RuntimeError("planted")


#: Raises on every case with more than one query, and shrinks slowly: a failure found at
#: once and still being shrunk seconds later.
shrinks_slowly = _misbehaving(_fail_slowly)


#: Environment variable naming the file :data:`crashes_once` creates before it crashes.
CRASHED_MARKER = "FLASHCHECK_TEST_CRASHED_MARKER"


def crashes_once(q, k, v, **kwargs):
    """Aborts its process at its first call of a run, which creates the file
    :data:`CRASHED_MARKER` names, and is correct at every call after it (without the variable,
    always): one crash, after which a fresh worker goes on."""
    marker = os.environ.get(CRASHED_MARKER)
    if marker and not os.path.exists(marker):
        open(marker, "a").close()
        os.abort()
    return buggy.correct(q, k, v, **kwargs)


crashes_once.flashcheck_features = FEATURES


#: The ways the device's running out of memory reaches Python, by name: torch's allocator, and
#: CUDA's own error from a call outside it (a copy, a kernel launch), as torch and as Triton's
#: launcher raise it, which leaves the CUDA context alive.
OUT_OF_MEMORY_KINDS = ("allocator", "cuda-error", "triton-launcher")


def out_of_memory_error(kind: str) -> RuntimeError:
    """A fresh error of ``kind`` (:data:`OUT_OF_MEMORY_KINDS`): fresh, since an exception raised
    again keeps the frames it was raised through before, which say who raised it."""
    if kind == "allocator":
        return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    if kind == "triton-launcher":
        return RuntimeError("Triton Error [CUDA]: out of memory")
    return torch.AcceleratorError("CUDA error: out of memory")
