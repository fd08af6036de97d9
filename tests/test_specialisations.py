"""python -m flashcheck.kernels.specialisations: counting the compilations that drawn cases
need, by Triton's own classification of the launch arguments, without running a kernel."""
from __future__ import annotations

import pytest
import torch

from flashcheck.kernels import config, forward, launcher, specialisations

pytestmark = pytest.mark.skipif(not config.INTERPRETER, reason="counts launches in Triton's interpreter mode")


def forward_launch(seqlen_k: int, *, offset: int = 0):
    """``(pointers, scalars, constants)`` of a forward launch, alike but for ``seqlen_k``
    and q's offset in its storage (in elements)."""
    storage = torch.zeros(64 + offset, dtype=torch.float16)
    q = storage[offset:offset + 64]
    pointers = (q, q, q, q, q.float(), None, None, None)
    scalars = (1024, 64, 1024, 1) * 4 + (256, 64, 1) + (0, 0, 0, 0) + (4, 1, 48, seqlen_k, 64, 0.18, 2_000, 2_000)
    constants = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_D=64, FULL_D=True, POSITIVE_SCALE=True, FP32_IEEE=False,
                     EMULATE_BF16=False, HAS_MASK=False, IS_VARLEN=False, num_warps=1, num_stages=1)
    return pointers, scalars, constants


def key(seqlen_k, *, offset=0, unspecialised=()):
    return specialisations.specialisation(forward._attention_forward, *forward_launch(seqlen_k, offset=offset),
                                          unspecialised=unspecialised)


def test_an_integer_divisible_by_16_compiles_apart_from_one_that_is_not():
    assert key(32) != key(33)
    assert key(33) == key(35)  # both merely i32
    assert key(32) == key(48)  # both divisible by 16


def test_an_integer_equal_to_one_is_a_constant_of_its_own():
    assert key(1) not in {key(2), key(16)}


def test_an_argument_named_unspecialised_is_classified_by_its_type_alone():
    assert key(32, unspecialised=("seqlen_k",)) == key(33, unspecialised=("seqlen_k",))
    assert key(1, unspecialised=("seqlen_k",)) == key(33, unspecialised=("seqlen_k",))


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
