"""The code Triton generates for the project kernels on a GPU, compiled on a machine without one.

``python -m flashcheck.devtools.codegen DTYPE HEAD_DIM causal|full SEQLEN [--arch 90]
[--unspecialised ARG ...]``

Makes the forward and backward launches of one benchmark configuration (16K tokens per
batch, hidden size 2048: :func:`flashcheck.bench.config`; the tuned launch settings of
:data:`flashcheck.kernels.config.TUNED_SM90` where the configuration has them) with every
launch recorded, not run, then compiles each kernel for the GPU architecture ``--arch``
with Triton's own compiler and prints its compile time, the length of its PTX and its
memory and matrix instructions (``ld``/``st``/``cp.async``/``wgmma``/``mma``, by kind and
vector width), and what ptxas reports of its resources: registers per thread and bytes
spilled to local memory. With ``--unspecialised`` each kernel is compiled again as if those
runtime arguments were marked ``do_not_specialize`` and what changed is shown: whether a
change to Triton's specialisation keeps the loads vectorised, the matrix instructions as
they were and the registers unspilled, checked before any GPU time is spent on benchmarks
(which remain the measure of speed: equal instructions did not mean equal speed when the
spills grew; docs/performance.md, ``do_not_specialize`` measured and rejected). Needs Triton's compiler, so
``TRITON_INTERPRET`` must be unset; the tensors are CPU tensors, which carry the alignment
that Triton specialises on.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability
from triton.compiler import ASTSource

from flashcheck import bench
from flashcheck.devtools.specialisations import LENGTH_ARGUMENTS, Launch, recorded_launches
from flashcheck.kernels import backward, config, forward

_INSTRUCTION = re.compile(r"^\s*(?:@!?%p\d+\s+)?((?:ld|st|cp\.async|wgmma|mma)\b[\w.]*)", re.MULTILINE)
_ELEMENT_TYPE = re.compile(r"\.(?:[bsuf](?:8|16|32|64)|bf16)$")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclasses.dataclass(frozen=True)
class Resources:
    """What ptxas reports of one kernel: registers per thread, bytes of spill stores and loads."""
    registers: int
    spill_stores: int
    spill_loads: int

    def __str__(self) -> str:
        spilled = "no spills" if not (self.spill_stores or self.spill_loads) else \
            f"spills {self.spill_stores} B stored, {self.spill_loads} B loaded"
        return f"{self.registers} registers, {spilled}"

def benchmark_launches(dtype: torch.dtype, head_dim: int, causal: bool, seqlen: int) -> list[Launch]:
    """The launches of one forward and one backward at a benchmark configuration
    (:func:`flashcheck.bench.config`: ValueError where ``head_dim`` does not divide the hidden size)."""
    shape = bench.config("fwd_bwd", str(dtype).removeprefix("torch."), head_dim, causal, seqlen)
    batch, heads = shape.batch, shape.heads
    q, k, v, out, grad_out, dq, dk, dv = (torch.empty(batch, seqlen, heads, head_dim, dtype=dtype) for _ in range(8))
    lse, delta = (torch.empty(batch, heads, seqlen, dtype=torch.float32) for _ in range(2))
    tuned = config.tuned_sm90(dtype, head_dim, causal)
    forward_settings = tuned["forward"] if tuned else config.forward_config(dtype, head_dim, banded=causal)
    backward_settings = ({"dk_dv": tuned["dk_dv"], "dq": tuned["dq"]} if tuned
                         else config.backward_config(dtype, head_dim, banded=causal))
    band = dict(softmax_scale=head_dim ** -0.5, left=-1, right=0 if causal else -1, emulate_bf16=False)
    with recorded_launches() as log:
        forward.launch(q, k, v, out, lse, config=forward_settings, **band)
        backward.launch(q, k, v, out, lse, grad_out, None, dq, dk, dv, delta, config=backward_settings, **band)
    return log


def source(launch: Launch, unspecialised=()) -> tuple[ASTSource, dict]:
    """The compiler's input for ``launch`` as Triton's launcher would build it, and the
    launch options; arguments named in ``unspecialised`` get no value specialisation."""
    constants = dict(launch.constants)
    options = {name: constants.pop(name) for name in ("num_warps", "num_stages") if name in constants}
    signature, constexprs, attributes = {}, {}, {}
    for index, (name, value, kind, attribute) in enumerate(launch.runtime_arguments(unspecialised)):
        signature[name] = kind
        if kind == "constexpr":  # an integer equal to 1, or a None pointer
            constexprs[(index,)] = value
        elif attribute == "D":
            attributes[(index,)] = [["tt.divisibility", 16]]
    for name, value in constants.items():
        signature[name], constexprs[(launch.kernel.arg_names.index(name),)] = "constexpr", value
    signature = {name: signature[name] for name in launch.kernel.arg_names}  # in parameter order
    return ASTSource(launch.kernel, signature, constexprs, attributes), options


def instructions(ptx: str) -> collections.Counter:
    """Memory and matrix instructions of ``ptx`` by opcode and modifiers, element type dropped."""
    return collections.Counter(_ELEMENT_TYPE.sub("", match) for match in _INSTRUCTION.findall(ptx))


def compile_launch(launch: Launch, arch: int, unspecialised=()) -> tuple[float, str]:
    """``(seconds, PTX)`` of compiling ``launch``'s kernel for ``sm_<arch>``, afresh: a
    compilation found in Triton's cache would time the cache."""
    triton.knobs.compilation.always_compile = True
    src, options = source(launch, unspecialised)
    start = time.perf_counter()
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)
    return time.perf_counter() - start, compiled.asm["ptx"]


def resources(ptx: str, arch: int) -> Resources:
    """Registers and spills of ``ptx`` as Triton's bundled ptxas reports them (``-v``) when
    assembling it for ``sm_<arch>``; Triton's own compile keeps no record of them on a
    machine without a GPU."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "w") as file:
            file.write(ptx)
        run = subprocess.run([get_ptxas(arch).path, "-v", f"--gpu-name={sm_arch_from_capability(arch)}", path,
                              "-o", path + ".o"], capture_output=True, text=True, check=True)
    registers, spills = _REGISTERS.search(run.stderr), _SPILLS.search(run.stderr)
    if registers is None or spills is None:
        raise RuntimeError(f"ptxas -v: no register or spill report in {run.stderr!r}")
    return Resources(int(registers.group(1)), int(spills.group(1)), int(spills.group(2)))


def _describe(counts: collections.Counter) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flashcheck.devtools.codegen", description=__doc__.split("\n\n")[0])
    parser.add_argument("dtype", choices=["float16", "bfloat16", "float32"])
    parser.add_argument("head_dim", type=int)
    parser.add_argument("mask", choices=["causal", "full"])
    parser.add_argument("seqlen", type=int)
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 90 for Hopper (default)")
    parser.add_argument("--unspecialised", nargs="*", default=None, metavar="ARG",
                        help=f"also compile without value specialisation of these arguments (no names: {' '.join(LENGTH_ARGUMENTS)})")
    args = parser.parse_args(argv)
    if config.INTERPRETER:
        print("error: TRITON_INTERPRET: expected it unset, since the kernels are compiled", file=sys.stderr)
        return 2
    if not 1 <= args.head_dim <= 256:
        print("error: head_dim: expected 1 to 256", file=sys.stderr)
        return 2
    try:
        launches = benchmark_launches(getattr(torch, args.dtype), args.head_dim, args.mask == "causal", args.seqlen)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    unspecialised = None if args.unspecialised is None else tuple(args.unspecialised or LENGTH_ARGUMENTS)
    for launch in launches:
        seconds, ptx = compile_launch(launch, args.arch)
        counts, used = instructions(ptx), resources(ptx, args.arch)
        print(f"{launch.kernel.fn.__name__}: compiled in {seconds:.1f} s, {len(ptx.splitlines())} PTX lines, "
              f"{used}; {_describe(counts)}")
        if unspecialised is not None:
            seconds, ptx = compile_launch(launch, args.arch, unspecialised)
            other, other_used = instructions(ptx), resources(ptx, args.arch)
            change = "memory and matrix instructions unchanged" if other == counts else \
                f"gained: {_describe(other - counts) or '-'}; lost: {_describe(counts - other) or '-'}"
            print(f"  without specialising {' '.join(unspecialised)}: compiled in {seconds:.1f} s, "
                  f"{len(ptx.splitlines())} PTX lines, {other_used}; {change}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
