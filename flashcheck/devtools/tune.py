"""Time candidate launch configurations of the project kernel on this GPU and print the
fastest per (dtype, padded head dim, banded): the rows of ``config.TUNED_SM90``.

    python -m flashcheck.devtools.tune [--dtypes bfloat16 float16] [--head-dims 64 128]
        [--lengths 512 1024 4096 16384] [--json tune.json] [--peers]

Shapes follow the speed benchmark: hidden size 2048 (``heads = 2048 / head_dim``) and 16K
tokens per batch. For each key the forward candidates are timed first, then the ``_dk_dv``
candidates (``_dq`` at the default), then the ``_dq`` candidates (``_dk_dv`` at its winner).
A candidate's score is the geometric mean over the lengths of its TFLOP/s (the median of
``triton.testing.do_bench``); the highest wins. The default lengths reach down to the
benchmark's shortest, 512 tokens: scored over 1K-16K alone, float16's head-dim-128 forward
once picked (128 x 128, 8 warps), which the benchmarks then found 11-25% slower at 512-2K
tokens. "banded" is timed as causal. A candidate
that fails to compile or launch (shared memory, registers) is reported and skipped.

Each winner is run once more against the default configuration on fresh inputs: block
shapes change the order of the sums, so outputs may differ in rounding, and the largest
difference is printed so that a wrong kernel variant cannot pass unnoticed. ``--peers``
adds torch SDPA's flash and cuDNN backends at the same shapes, for orientation.

Shapes and FLOPs are :mod:`flashcheck.bench`'s: the forward ``4·B·H·N²·D``, halved when
causal; the backward alone ``BACKWARD_FACTOR - 1`` (2.5) times that.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time

import torch
import triton

from flashcheck import bench
from flashcheck.kernels import backward, config, forward

#: The backward alone, as a multiple of the forward's FLOPs (the benchmark's convention).
BACKWARD_ALONE = bench.BACKWARD_FACTOR - 1

#: (BLOCK_M, BLOCK_N, num_warps, num_stages).
FORWARD_CANDIDATES = (
    (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 3), (128, 128, 8, 4), (128, 32, 4, 3), (128, 64, 4, 3),
    (64, 64, 4, 2), (64, 64, 4, 3), (64, 64, 4, 4), (64, 128, 4, 3),
)
#: (64, 64, 8, 2), (32, 64, 4, 2) and (64, 32, 4, 2) compile without the register spills of the
#: tuned d128 (64, 64, 4, 2) (``python -m flashcheck.devtools.codegen``), and ran 14-29% slower
#: than it on an H100 (docs/performance.md, the re-tune of the backward's tiles).
DK_DV_CANDIDATES = (
    (64, 64, 4, 1), (64, 64, 4, 2), (64, 64, 4, 3), (64, 64, 8, 2), (32, 64, 4, 2), (64, 32, 4, 2),
    (32, 128, 4, 2), (32, 128, 8, 2), (64, 128, 8, 2),
)
DQ_CANDIDATES = (
    (128, 32, 4, 2), (128, 32, 4, 3), (128, 32, 4, 4), (128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4),
    (64, 64, 4, 2), (64, 64, 4, 3), (64, 32, 4, 2),
)


def _launch(candidate) -> dict:
    block_m, block_n, warps, stages = candidate
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": warps, "num_stages": stages}


class Problem:
    """Inputs and buffers of one shape, allocated once and reused by every candidate."""

    def __init__(self, dtype: torch.dtype, head_dim: int, seqlen: int, causal: bool, seed: int = 0):
        grid_point = bench.config("fwd", str(dtype).removeprefix("torch."), head_dim, causal, seqlen)
        batch, heads = grid_point.batch, grid_point.heads
        generator = torch.Generator("cuda").manual_seed(seed)
        shape = (batch, seqlen, heads, head_dim)

        def draw():
            return torch.randn(shape, generator=generator, device="cuda", dtype=dtype)

        self.q, self.k, self.v, self.grad = draw(), draw(), draw(), draw()
        self.out, self.dq, self.dk, self.dv = (torch.empty_like(self.q) for _ in range(4))
        self.lse = torch.empty((batch, heads, seqlen), device="cuda", dtype=torch.float32)
        self.delta = torch.empty_like(self.lse)
        self.right = 0 if causal else -1
        self.scale = head_dim ** -0.5
        self.forward_flops = grid_point.flops
        self.dtype, self.head_dim, self.seqlen, self.causal = dtype, head_dim, seqlen, causal

    def forward(self, launch: dict) -> None:
        forward.launch(self.q, self.k, self.v, self.out, self.lse, softmax_scale=self.scale, left=-1,
                       right=self.right, config=launch, emulate_bf16=False)

    def backward(self, launches: dict) -> None:
        backward.launch(self.q, self.k, self.v, self.out, self.lse, self.grad, None, self.dq, self.dk, self.dv,
                        self.delta, softmax_scale=self.scale, left=-1, right=self.right, config=launches,
                        emulate_bf16=False)


def _median_ms(function) -> float:
    return triton.testing.do_bench(function, warmup=10, rep=40, return_mode="median")


def _score(problems, timed, flops_factor: float) -> tuple[float, list[float]]:
    """Geometric-mean TFLOP/s of ``timed(problem)`` (milliseconds) over the problems, and each one's."""
    rates = [flops_factor * p.forward_flops / (timed(p) * 1e-3) / 1e12 for p in problems]
    return math.exp(sum(map(math.log, rates)) / len(rates)), rates


def _sweep(name, candidates, problems, timed, flops_factor, log) -> tuple[tuple, float, list[float]]:
    best = None
    for candidate in candidates:
        try:
            score, rates = _score(problems, lambda p: timed(p, candidate), flops_factor)
        except Exception as error:  # compile or launch failure: out of shared memory, registers
            log(f"    {name} {candidate}: failed ({type(error).__name__}: {str(error).splitlines()[0][:90]})")
            continue
        log(f"    {name} {candidate}: {score:6.1f} TFLOP/s  ({', '.join(f'{r:.0f}' for r in rates)})")
        if best is None or score > best[1]:
            best = (candidate, score, rates)
    if best is None:
        raise RuntimeError(f"{name}: no candidate ran")
    return best


def _agreement(dtype, head_dim, causal, tuned: dict, default_forward: dict, default_backward: dict) -> float:
    """Largest |difference| between the tuned and default configurations' out, dq, dk, dv
    on fresh inputs (4K tokens)."""
    results = []
    for fwd, bwd in ((tuned["forward"], {"dk_dv": tuned["dk_dv"], "dq": tuned["dq"]}),
                     (default_forward, default_backward)):
        problem = Problem(dtype, head_dim, 4096, causal, seed=1)
        problem.forward(fwd)
        problem.backward(bwd)
        results.append([t.float() for t in (problem.out, problem.dq, problem.dk, problem.dv)])
    return max((a - b).abs().max().item() for a, b in zip(*results))


def _peers(problems, log) -> dict:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    measured = {}
    for name, backend in (("sdpa-flash", SDPBackend.FLASH_ATTENTION), ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
        rows = []
        for p in problems:
            q, k, v = (t.transpose(1, 2).requires_grad_() for t in (p.q.clone(), p.k.clone(), p.v.clone()))
            grad = p.grad.transpose(1, 2)
            with sdpa_kernel([backend]):
                def fwd():
                    with torch.no_grad():
                        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=p.causal)

                def fwd_bwd():
                    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=p.causal)
                    torch.autograd.grad(out, (q, k, v), grad)
                try:
                    rows.append((p.forward_flops / (_median_ms(fwd) * 1e-3) / 1e12,
                                 bench.BACKWARD_FACTOR * p.forward_flops / (_median_ms(fwd_bwd) * 1e-3) / 1e12))
                except Exception as error:
                    log(f"    {name} n{p.seqlen}: failed ({str(error).splitlines()[0][:90]})")
                    rows.append((float("nan"), float("nan")))
        measured[name] = rows
        log(f"    {name}: fwd " + ", ".join(f"{r[0]:.0f}" for r in rows)
            + " | fwd+bwd " + ", ".join(f"{r[1]:.0f}" for r in rows) + " TFLOP/s")
    return measured


def tune(dtypes, head_dims, lengths, *, peers: bool, log=print):
    """Sweep every key, yielding one record per key as it is done (see the module docstring)."""
    for dtype_name, head_dim, banded in itertools.product(dtypes, head_dims, (False, True)):
        dtype = getattr(torch, dtype_name)
        started = time.perf_counter()
        log(f"== {dtype_name} d{head_dim} {'banded (causal)' if banded else 'full'}")
        problems = [Problem(dtype, head_dim, n, banded) for n in lengths]
        default_forward = config.forward_config(dtype, head_dim, banded=banded)
        default_backward = config.backward_config(dtype, head_dim, banded=banded)

        def forward_ms(p, candidate):
            return _median_ms(lambda: p.forward(_launch(candidate)))

        before_forward, _ = _score(problems, lambda p: _median_ms(lambda: p.forward(default_forward)), 1.0)
        fwd, fwd_score, fwd_rates = _sweep("forward", FORWARD_CANDIDATES, problems, forward_ms, 1.0, log)
        for p in problems:  # out and lse for the backward
            p.forward(_launch(fwd))

        def backward_ms(p, launches):
            return _median_ms(lambda: p.backward(launches))

        before_backward, _ = _score(problems, lambda p: backward_ms(p, default_backward), BACKWARD_ALONE)
        dk_dv, _, _ = _sweep("dk_dv", DK_DV_CANDIDATES, problems,
                             lambda p, c: backward_ms(p, {"dk_dv": _launch(c), "dq": default_backward["dq"]}),
                             BACKWARD_ALONE, log)
        dq, bwd_score, bwd_rates = _sweep(
            "dq", DQ_CANDIDATES, problems,
            lambda p, c: backward_ms(p, {"dk_dv": _launch(dk_dv), "dq": _launch(c)}), BACKWARD_ALONE, log)
        tuned = {"forward": _launch(fwd), "dk_dv": _launch(dk_dv), "dq": _launch(dq)}
        difference = _agreement(dtype, head_dim, banded, tuned, default_forward, default_backward)
        record = dict(dtype=dtype_name, head_dim=config.padded_head_dim(head_dim), banded=banded, lengths=list(lengths),
                      tuned=tuned, forward_tflops=fwd_rates, backward_tflops=bwd_rates,
                      default_forward_score=before_forward, forward_score=fwd_score,
                      default_backward_score=before_backward, backward_score=bwd_score,
                      max_difference_to_default=difference, seconds=time.perf_counter() - started)
        if peers:
            record["peers"] = _peers(problems, log)
        log(f"  forward {fwd}: {fwd_score:.1f} TFLOP/s (default {before_forward:.1f}); "
            f"backward dk_dv {dk_dv} dq {dq}: {bwd_score:.1f} (default {before_backward:.1f}); "
            f"max |tuned - default| {difference:.3g}; {record['seconds']:.0f} s")
        yield record
        del problems
        torch.cuda.empty_cache()


def table_source(records: list[dict]) -> str:
    """The records as the Python literal of ``config.TUNED_SM90``."""
    lines = ["TUNED_SM90: dict[tuple[str, int, bool], dict[str, dict]] = {"]
    for r in records:
        t = r["tuned"]
        parts = ", ".join(f'"{kind}": _launch({t[kind]["BLOCK_M"]}, {t[kind]["BLOCK_N"]}, {t[kind]["num_warps"]}, '
                          f'{t[kind]["num_stages"]})' for kind in ("forward", "dk_dv", "dq"))
        lines.append(f'    ("{r["dtype"]}", {r["head_dim"]}, {r["banded"]}): {{{parts}}},')
    lines.append("}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flashcheck.devtools.tune", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16"], choices=["bfloat16", "float16"])
    parser.add_argument("--head-dims", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--lengths", nargs="+", type=int, default=[512, 1024, 4096, 16384])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--peers", action="store_true", help="also time torch SDPA's flash and cuDNN backends")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() or config.INTERPRETER:
        print("tune: needs a CUDA GPU and the compiled Triton backend (TRITON_INTERPRET unset)", file=sys.stderr)
        return 2
    for name, values in (("--head-dims", args.head_dims), ("--lengths", args.lengths)):
        if any(v < 1 for v in values):
            print(f"tune: {name} expects positive integers, got {values}", file=sys.stderr)
            return 2
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}, triton {triton.__version__}")

    def log(line):
        print(line, flush=True)

    records = []
    for record in tune(args.dtypes, args.head_dims, args.lengths, peers=args.peers, log=log):
        records.append(record)
        if args.json:  # rewritten after every key, so that an interrupted run keeps what it measured
            with open(args.json, "w") as handle:
                json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                               triton=triton.__version__, records=records), handle, indent=1)
    print(table_source(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
