"""The speed benchmark's pieces that are not pytest: its grid, FLOP counts, providers, timer,
out-of-memory capture and peak-memory measurement.

The pytest side is ``tests/benchmarks/`` (collected under the ``speed`` marker); the
report from its JSON is :mod:`flashcheck.bench.report`.

**Grid.** Hidden size 2048 split into ``heads = 2048 / head_dim`` heads, and 16K tokens per
batch: ``batch = 16384 / seqlen`` for lengths 512 to 16K. 32K keeps ``batch = 1`` (32K
tokens: half a sequence per batch is not a batch). Forward and forward+backward, bfloat16
and float16, head dims 64 and 128, causal and not (``Nq == Nk``, so the top-left and
bottom-right causal alignments coincide and every backend expresses it natively).

**FLOPs** (FlashAttention's benchmark convention): the forward is two matmuls of
``2·N·N·D`` multiply-adds per head, ``4·B·H·N²·D`` FLOPs, halved for causal (half the
scores are masked); forward+backward counts ``3.5×`` the forward (the backward's five
matmuls, ``2.5×``, plus the forward). Recomputation inside a kernel is not counted: a kernel
that recomputes is charged its time, not credited its extra arithmetic. TFLOP/s is this
count divided by the measured time.

**Timing.** :func:`synchronized_timer` is the timer handed to pytest-benchmark: it waits for
the GPU before it reads the clock, so every timed round spans the GPU work it queued, not
just its launch. A round runs ``iterations`` calls back to back between two such reads
(:func:`plan`), long enough (about 25 ms) that the CPU's launch overhead overlaps the GPU
work of the calls before it, as it does in a model; pytest-benchmark divides by the
iterations. pytest-benchmark's own statistics are therefore genuine per-round timings (its
``--benchmark-compare`` works on them), and the JSON holds every round.

**Memory.** :func:`peak_extra_bytes`: ``torch.cuda.max_memory_allocated()`` over one call
(after ``reset_peak_memory_stats``) minus what was allocated just before it, i.e. the
inputs (q, k, v and, for the backward, the output gradient) and, for flex, its block mask:
the memory the call needs on top of its arguments (outputs, gradients and workspace
included).

**Out of memory.** :func:`capture_oom` turns ``torch.cuda.OutOfMemoryError`` into a recorded
outcome, frees what the failed call held and lets the run go on; standard attention
(``sdpa-math``) materialises the ``N×N`` scores and is expected to run out at long lengths.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass
from typing import Callable

import torch

HIDDEN = 2048
TOKENS = 16384
LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
HEAD_DIMS = (64, 128)
DTYPES = ("bfloat16", "float16")
MODES = ("fwd", "fwd_bwd")
#: The project kernel first; ``sdpa-math`` is standard attention (scores materialised). ``fa4``
#: is FlashAttention-4 (flashcheck.peers), unavailable (skipped) where flash-attn-4 is not
#: installed or the GPU is older than Hopper.
PROVIDERS = ("flash", "fa4", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "flex", "sdpa-math")
#: The tiny grid of the CPU smoke run (``FLASHCHECK_BENCH_SMOKE=1``): it checks the plumbing only.
SMOKE = dict(lengths=(32, 64), head_dims=(16,), dtypes=("float32",), hidden=32, tokens=128)
SMOKE_PROVIDERS = ("sdpa-math",)

#: forward+backward FLOPs as a multiple of the forward's (FlashAttention's convention).
BACKWARD_FACTOR = 3.5


@dataclass(frozen=True)
class Config:
    """One measured shape: q, k, v are ``(batch, seqlen, heads, head_dim)``."""

    mode: str
    dtype: str
    head_dim: int
    causal: bool
    seqlen: int
    batch: int
    heads: int

    @property
    def panel(self) -> str:
        """The configuration without its length: one panel of the plot, one table group."""
        return f"{self.mode} {self.dtype} d{self.head_dim} {'causal' if self.causal else 'full'}"

    @property
    def flops(self) -> float:
        return attention_flops(self.batch, self.heads, self.seqlen, self.head_dim,
                               causal=self.causal, mode=self.mode)


#: The longest "full-attention equivalent" length (causal counts half) at which the project
#: kernel's forward+backward is bound by its host: see :func:`host_bound`.
HOST_BOUND_LENGTH = 512


def host_bound(cfg: Config) -> bool:
    """Whether the project kernel's time at ``cfg`` measures the host more than the GPU:
    forward+backward of at most :data:`HOST_BOUND_LENGTH` tokens of full attention (causal
    counting half, so causal up to twice that).

    Measured on H100 machines (:func:`host_cost`, ``docs/performance.md``): queueing one
    forward+backward costs the host 640-780 µs on an idle machine, and up to about 1.15 ms
    on the same machine after 12 minutes of 16 test workers (``ci/gpu.sh``), against GPU
    times of 0.67-1.06 ms for these configurations and at least 1.4 ms for the others. Their
    timings follow the host's speed, which varies by half between runs minutes apart, so
    ``ci/gpu.sh`` measures and reports them but does not gate them."""
    effective = cfg.seqlen // 2 if cfg.causal else cfg.seqlen
    return cfg.mode == "fwd_bwd" and effective <= HOST_BOUND_LENGTH


def config(mode: str, dtype: str, head_dim: int, causal: bool, seqlen: int, *,
           hidden: int = HIDDEN, tokens: int = TOKENS) -> Config:
    """The :class:`Config` of one grid point: ``heads = hidden / head_dim`` and
    ``batch = max(1, tokens // seqlen)``."""
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    for name, value in (("head_dim", head_dim), ("seqlen", seqlen), ("hidden", hidden), ("tokens", tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    if hidden % head_dim:
        raise ValueError(f"head_dim: {head_dim} does not divide hidden={hidden}")
    dtype_of(dtype)  # validates the name
    return Config(mode, dtype, head_dim, bool(causal), seqlen, max(1, tokens // seqlen), hidden // head_dim)


def grid(*, lengths=LENGTHS, head_dims=HEAD_DIMS, dtypes=DTYPES, modes=MODES, causal=(False, True),
         hidden: int = HIDDEN, tokens: int = TOKENS) -> list[Config]:
    """Every combination, lengths innermost."""
    return [config(m, dt, d, c, n, hidden=hidden, tokens=tokens)
            for m in modes for dt in dtypes for d in head_dims for c in causal for n in lengths]


def attention_flops(batch: int, heads: int, seqlen: int, head_dim: int, *, causal: bool, mode: str) -> float:
    """FLOPs of attention by the convention in the module docstring:
    ``4·B·H·N²·D``, halved for causal, times :data:`BACKWARD_FACTOR` for ``"fwd_bwd"``."""
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
    forward = 4.0 * batch * heads * seqlen * seqlen * head_dim / (2 if causal else 1)
    return forward * (BACKWARD_FACTOR if mode == "fwd_bwd" else 1.0)


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype: expected a floating dtype name such as 'bfloat16', got {name!r}")
    return dtype


# ---------------------------------------------------------------- timing


def synchronized_timer() -> float:
    """``time.perf_counter()`` read after the GPU has finished everything queued (where
    CUDA is in use), so that an interval between two reads spans the GPU work launched in
    it. pytest-benchmark's ``timer`` for the benchmarks."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter()


def plan(seconds_per_call: float, *, round_seconds: float = 0.025, budget: float = 1.0,
         min_rounds: int = 3, max_rounds: int = 20) -> tuple[int, int]:
    """``(rounds, iterations)`` for a call that takes ``seconds_per_call``: enough calls per
    round to fill ``round_seconds`` (at least one), and as many rounds as ``budget`` seconds
    hold, between ``min_rounds`` and ``max_rounds``."""
    if not seconds_per_call > 0 or not math.isfinite(seconds_per_call):
        raise ValueError(f"seconds_per_call: expected a positive finite time, got {seconds_per_call!r}")
    slack = 1e-9  # 1.0 // 0.1 is 9.0 in binary floating point
    iterations = max(1, math.ceil(round_seconds / seconds_per_call - slack))
    rounds = math.floor(budget / (seconds_per_call * iterations) + slack)
    return min(max_rounds, max(min_rounds, rounds)), iterations


# ---------------------------------------------------------------- out of memory, memory


@dataclass(frozen=True)
class OutOfMemory:
    """What :func:`capture_oom` returns when the call ran out of device memory."""

    message: str


def capture_oom(function: Callable, *args, **kwargs):
    """``function(*args, **kwargs)``, or an :class:`OutOfMemory` if it raised
    ``torch.cuda.OutOfMemoryError``; any other exception propagates.

    After an OOM the memory the call held is released before returning: the exception's
    traceback keeps the failed frames (and their tensors) alive, so it is dropped first,
    then the garbage collector runs and the CUDA caching allocator returns its free blocks.
    """
    try:
        return function(*args, **kwargs)
    except torch.cuda.OutOfMemoryError as error:
        message = str(error).splitlines()[0] if str(error) else "CUDA out of memory"
        # `error` (and its traceback) is unbound when this clause ends.
    release_memory()
    return OutOfMemory(message)


def release_memory() -> None:
    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def peak_extra_bytes(call: Callable[[], object], device: torch.device | str) -> int | None:
    """Peak memory allocated during ``call()`` beyond what was allocated before it (see the
    module docstring); None where the device has no allocator statistics (the CPU)."""
    device = torch.device(device)
    if device.type != "cuda":
        call()
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    call()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


# ---------------------------------------------------------------- providers


def inputs(cfg: Config, device, *, seed: int = 0) -> dict:
    """q, k, v ``(B, N, H, D)`` (requiring grad for ``fwd_bwd``, with the output gradient
    ``grad``), drawn from a seeded normal distribution."""
    generator = torch.Generator(device=device).manual_seed(seed)
    shape = (cfg.batch, cfg.seqlen, cfg.heads, cfg.head_dim)
    dtype = dtype_of(cfg.dtype)
    backward = cfg.mode == "fwd_bwd"

    def draw():
        return torch.randn(shape, generator=generator, device=device, dtype=dtype).requires_grad_(backward)

    tensors = dict(q=draw(), k=draw(), v=draw())
    if backward:
        tensors["grad"] = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return tensors


def input_bytes(tensors: dict) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())


class Unavailable(Exception):
    """The provider cannot run this configuration here (a backend missing or refusing it)."""


def step(provider: str, cfg: Config, tensors: dict) -> Callable[[], None]:
    """A zero-argument callable running ``provider`` once on ``tensors``: the forward (under
    ``no_grad``) for ``fwd``; forward and ``torch.autograd.grad`` of the output for
    ``fwd_bwd`` (grad, not backward: nothing accumulates into ``.grad`` between calls).

    The peers are called through :mod:`flashcheck.peers` (FlashAttention-4 through
    :mod:`flashcheck.peers.fa4`, whose library is imported at the first call), the project kernel as
    ``flashcheck.kernels.flash_attention``; flex through :func:`_flex_attention` (its block
    mask built once here, not per call). Raises :class:`Unavailable` for a provider that
    cannot run here.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"provider: expected one of {PROVIDERS}, got {provider!r}")
    attention = _flex_attention(cfg, tensors["q"].device) if provider == "flex" else _resolve(provider)
    q, k, v = tensors["q"], tensors["k"], tensors["v"]
    if cfg.mode == "fwd":
        def forward():
            with torch.no_grad():
                attention(q, k, v, causal=cfg.causal)
        return forward
    grad = tensors["grad"]

    def forward_backward():
        out = attention(q, k, v, causal=cfg.causal)[0]
        torch.autograd.grad(out, (q, k, v), grad)
    return forward_backward


#: Backends that torch may be built without; asked before the first call, which would
#: otherwise fail inside the private op with a less clear error.
_BACKEND_PRESENT = {
    "sdpa-flash": lambda: getattr(torch.backends.cuda, "is_flash_attention_available", lambda: True)(),
    "sdpa-cudnn": lambda: torch.backends.cudnn.is_available(),
}


def _resolve(provider: str):
    from flashcheck import peers

    if not _BACKEND_PRESENT.get(provider, lambda: True)():
        raise Unavailable(f"{provider}: this torch build has no such backend")
    try:
        return peers.resolve(provider)
    except ImportError as error:  # e.g. triton missing for "flash", flash-attn-4 for "fa4"
        raise Unavailable(f"{provider}: {error}") from error


_compiled_flex = None


def _flex_attention(cfg: Config, device: torch.device):
    """Compiled FlexAttention with the configuration's block mask (None without causal),
    built once; compiled with static shapes, so each configuration compiles once.

    The adapter rebuilds its block mask on every call, which would time
    ``create_block_mask``; here the mask is part of the setup, as a model builds it once
    per shape. Runs under the adapters' guard against dynamo's silent fall-back to eager
    at the recompile limit (this grid compiles ~100 variants)."""
    global _compiled_flex
    if torch.device(device).type != "cuda":
        raise Unavailable("flex: the benchmark times compiled FlexAttention, which needs CUDA")
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError as error:
        raise Unavailable(f"flex: {error}") from error
    from flashcheck.peers.flex_call import no_silent_fallback

    if _compiled_flex is None:
        _compiled_flex = torch.compile(flex_attention, dynamic=False)
    block_mask = None
    if cfg.causal:
        block_mask = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None,
                                       cfg.seqlen, cfg.seqlen, device=device)

    def attention(q, k, v, *, causal):
        with no_silent_fallback():
            out = _compiled_flex(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block_mask=block_mask)
        return out.transpose(1, 2), None

    return attention


# ---------------------------------------------------------------- one measurement


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found; ``oom`` set (and nothing else) when it ran out of memory."""

    extra_info: dict
    oom: OutOfMemory | None = None


def measure(benchmark, provider: str, cfg: Config, device, *, budget: float = 0.3,
            round_seconds: float = 0.025) -> Measurement:
    """Measure ``provider`` on ``cfg`` with pytest-benchmark's ``benchmark`` fixture.

    Untimed first: one call (compiles and autotunes), one call under
    :func:`peak_extra_bytes`, one timed call to :func:`plan` the rounds (``budget`` and
    ``round_seconds`` are its arguments). Then
    ``benchmark.pedantic`` with one warm-up round. ``benchmark.extra_info`` gets the
    configuration, the FLOPs, the TFLOP/s at the median round and the peak extra memory.
    An out-of-memory anywhere is returned as ``Measurement(oom=...)`` (memory released);
    :class:`Unavailable` propagates.
    """
    info = dict(provider=provider, mode=cfg.mode, dtype=cfg.dtype, head_dim=cfg.head_dim, causal=cfg.causal,
                seqlen=cfg.seqlen, batch=cfg.batch, heads=cfg.heads, flops=cfg.flops,
                device=str(device), timer="synchronized_timer")

    def run():
        tensors = inputs(cfg, device)
        call = step(provider, cfg, tensors)
        call()
        extra = peak_extra_bytes(call, device)
        started = synchronized_timer()
        call()
        rounds, iterations = plan(max(synchronized_timer() - started, 1e-6), budget=budget,
                                  round_seconds=round_seconds)
        benchmark.pedantic(call, rounds=rounds, iterations=iterations, warmup_rounds=1)
        return extra, input_bytes(tensors)

    try:
        outcome = capture_oom(run)
    except NotImplementedError as error:  # an adapter declining what its backend cannot do
        raise Unavailable(str(error)) from error
    if isinstance(outcome, OutOfMemory):
        return Measurement(dict(info, oom=True), oom=outcome)
    extra, held = outcome
    release_memory()  # the next case starts from an empty cache
    median = benchmark.stats.stats.median if getattr(benchmark, "stats", None) else None
    info.update(peak_extra_bytes=extra, input_bytes=held, oom=False,
                tflops=cfg.flops / median / 1e12 if median else None)
    benchmark.extra_info.update(info)
    return Measurement(info)


# ---------------------------------------------------------------- host cost


@dataclass(frozen=True)
class HostCost:
    """Per-call times in seconds of ``calls`` calls back to back (see :func:`host_cost`)."""

    host: float  # to queue one call, the GPU busy meanwhile
    wall: float  # one call, queued and run, as a caller waits for it
    gpu: float  # the GPU's own time per call, with every call queued in advance

    @property
    def host_bound(self) -> bool:
        """The GPU waits for the host: queueing a call takes longer than running it."""
        return self.host > self.gpu


def host_cost(call: Callable[[], None], *, calls: int = 20, busy_cycles: int = 2_000_000_000) -> HostCost:
    """How much of a call's time is the host's: queueing ``calls`` calls while the GPU is
    held busy (``torch.cuda._sleep``, long enough that the queue never drains), the GPU
    time of those calls measured by CUDA events from the end of the busy kernel (so that
    launch gaps do not count), and the wall time of the same calls queued and run with
    nothing ahead of them. ``call`` must have run once already (compiled, warmed up).
    Needs CUDA; the numbers are per call."""
    if not torch.cuda.is_available():
        raise RuntimeError("host_cost: needs a CUDA device")
    if not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls: expected a positive int, got {calls!r}")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(busy_cycles)
    start.record()
    queued = time.perf_counter()
    for _ in range(calls):
        call()
    host = time.perf_counter() - queued
    end.record()
    busy_left = not start.query()  # the busy kernel outlasted the queueing, as it must
    torch.cuda.synchronize()
    if not busy_left:
        raise RuntimeError("host_cost: the GPU ran out of work while the host queued; raise busy_cycles")
    gpu = start.elapsed_time(end) / 1e3
    began = time.perf_counter()
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
    wall = time.perf_counter() - began
    return HostCost(host / calls, wall / calls, gpu / calls)


def main(argv=None) -> int:
    """``python -m flashcheck.bench PROVIDER MODE DTYPE HEAD_DIM causal|full SEQLEN...``:
    prints :func:`host_cost` of each length on this machine's GPU (µs per call)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m flashcheck.bench", description=main.__doc__)
    parser.add_argument("provider", choices=PROVIDERS)
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("dtype", choices=DTYPES)
    parser.add_argument("head_dim", type=int, choices=HEAD_DIMS)
    parser.add_argument("band", choices=("causal", "full"))
    parser.add_argument("seqlens", type=int, nargs="+")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("needs a CUDA device: the host cost is measured against the GPU's own time")
    for seqlen in args.seqlens:
        cfg = config(args.mode, args.dtype, args.head_dim, args.band == "causal", seqlen)
        call = step(args.provider, cfg, inputs(cfg, "cuda"))
        call()
        cost = host_cost(call)
        print(f"{args.provider} {cfg.panel} n{seqlen}: host {cost.host * 1e6:.0f} µs, wall {cost.wall * 1e6:.0f} µs, "
              f"GPU {cost.gpu * 1e6:.0f} µs per call{' (host-bound)' if cost.host_bound else ''}", flush=True)
        release_memory()
    return 0
