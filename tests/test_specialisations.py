"""python -m flashcheck.devtools.specialisations: counting the compilations that drawn cases
need, by Triton's own classification of the launch arguments, without running a kernel;
python -m flashcheck.devtools.codegen: the code those specialisations compile to on a GPU."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import triton
import torch

from flashcheck.devtools import specialisations
from flashcheck.kernels import config, forward, launcher

pytestmark = pytest.mark.skipif(not config.INTERPRETER, reason="counts launches in Triton's interpreter mode")


def forward_launch(seqlen_q: int, *, offset: int = 0, window_right: int = 2_000):
    """``(pointers, scalars, constants)`` of a forward launch, alike but for ``seqlen_q``,
    the right window bound and q's offset in its storage (in elements)."""
    storage = torch.zeros(64 + offset, dtype=torch.float16)
    q = storage[offset:offset + 64]
    pointers = (q, q, q, q, q.float(), None, None, None)
    scalars = (1024, 64, 1024, 1) * 4 + (256, 64, 1) + (0, 0, 0, 0) + (4, 1, seqlen_q, 48, 64, 0.18, 2_000, window_right)
    constants = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_D=64, FULL_D=True, POSITIVE_SCALE=True, FP32_IEEE=False,
                     EMULATE_BF16=False, HAS_MASK=False, IS_VARLEN=False, num_warps=1, num_stages=1)
    return pointers, scalars, constants


def key(seqlen_q, *, offset=0, window_right=2_000, unspecialised=()):
    launch = forward_launch(seqlen_q, offset=offset, window_right=window_right)
    return specialisations.Launch(forward._attention_forward, *launch).key(unspecialised)


def test_an_integer_divisible_by_16_compiles_apart_from_one_that_is_not():
    assert key(32) != key(33)
    assert key(33) == key(35)  # both merely i32
    assert key(32) == key(48)  # both divisible by 16


def test_an_integer_equal_to_one_is_a_constant_of_its_own():
    assert key(1) not in {key(2), key(16)}


def test_an_argument_named_unspecialised_is_classified_by_its_type_alone():
    assert key(32, unspecialised=("seqlen_q",)) == key(33, unspecialised=("seqlen_q",))
    assert key(1, unspecialised=("seqlen_q",)) == key(33, unspecialised=("seqlen_q",))


def test_the_window_bounds_are_not_specialised_by_the_forward():
    # Declared do_not_specialize (kernels/forward.py, UNSPECIALISED): 1, 16 and 7 compile alike.
    assert key(32, window_right=1) == key(32, window_right=16) == key(32, window_right=7)


def test_a_pointer_off_16_byte_alignment_compiles_apart():
    assert key(32, offset=1) != key(32)  # 2 bytes off
    assert key(32, offset=8) == key(32)  # 16 bytes off


def test_drawn_cases_are_counted_per_kernel_without_running_the_kernel():
    real = launcher.launch
    counts = specialisations.count("grads_match_reference", examples=8)
    assert launcher.launch is real
    assert set(counts) == {"_attention_forward", "_preprocess", "_dk_dv", "_dq"}
    for launches, keys, reduced in counts.values():
        assert 1 <= reduced <= keys <= launches


def test_a_forward_property_counts_only_the_forward():
    assert set(specialisations.count("out_matches_reference", examples=4)) == {"_attention_forward"}


def test_an_unknown_property_is_a_usage_error(capsys):
    assert specialisations.main(["no_such_property"]) == 2
    assert "property: unknown 'no_such_property'" in capsys.readouterr().err


# python -m flashcheck.devtools.codegen compiles for a GPU, which Triton's interpreter mode
# (set for this test process) rules out: it runs in a process of its own without it.

def codegen(*args):
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-m", "flashcheck.devtools.codegen", *args], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_codegen_shows_what_unspecialising_head_dim_would_cost_the_loads():
    lines = codegen("bfloat16", "64", "full", "256", "--unspecialised", "head_dim")
    kernels = [line.split(":")[0] for line in lines if not line.startswith(" ")]
    assert kernels == ["_attention_forward", "_preprocess", "_dk_dv", "_dq"]
    forward_lines = lines[:2]
    assert "ld.global.v4" in forward_lines[0] and "wgmma" in forward_lines[0]  # Hopper code
    # ptxas's resource report, for every compilation: registers per thread (at most 255) and spills.
    reported = [re.search(r", (\d+) registers, (no spills|spills \d+ B stored, \d+ B loaded);", line) for line in lines]
    assert all(reported) and all(1 <= int(match.group(1)) <= 255 for match in reported)
    lost = forward_lines[1].split("lost: ")[1]
    assert "ld.global.v4" in lost or "cp.async" in lost  # vector loads become scalar ones


def test_float32_at_head_dim_256_compiles_without_register_spills():
    # Its FMA dots hold each thread's share of both operands in registers: on 32 x 32 tiles
    # every kernel but _preprocess spilled, up to 77 KB per thread, and ran 5x slower on an H100.
    lines = codegen("float32", "256", "full", "256")
    assert len(lines) == 4
    assert all("no spills" in line for line in lines), "\n".join(lines)


def test_codegen_refuses_to_run_in_the_interpreter(capsys):
    from flashcheck.devtools import codegen as module

    assert module.main(["float16", "64", "full", "256"]) == 2
    assert "TRITON_INTERPRET" in capsys.readouterr().err


def test_arguments_the_kernel_declares_unspecialised_are_counted_so():
    declared = triton.jit(forward._attention_forward.fn, do_not_specialize=["seqlen_q"])
    pointers, scalars, constants = forward_launch(32)
    _, other_scalars, _ = forward_launch(33)
    assert specialisations.Launch(declared, pointers, scalars, constants).key() == \
        specialisations.Launch(declared, pointers, other_scalars, constants).key()
