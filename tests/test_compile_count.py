"""How many kernel compilations the property suite's GPU-size cases need, and which kernel
variants they reach: counted on the CPU by recording the project kernel's launches in
Triton's interpreter mode (:mod:`flashcheck.devtools.specialisations`), for 200 derandomized
cases of the gpu case sizes, as a GPU run of the suite would draw them.

On a GPU the suite is compile-bound: every launch whose Triton specialisation is new compiles
again, for seconds. Before compile-aware drawing (``case_sizes.GPU.focus``) and the kernels'
``do_not_specialize`` declarations, ``grads_match_reference`` needed 518 compilations for its
200 cases and ``out_matches_reference`` 119 (docs/performance.md); the limits below
are a fifth of those.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import itertools

import pytest

from flashcheck.cases import compile_classes
from flashcheck.cases.case import LAYOUTS
from flashcheck.cases.sizes import GPU
from flashcheck.devtools import specialisations
from flashcheck.kernels import config

pytestmark = pytest.mark.skipif(not config.INTERPRETER, reason="counts launches in Triton's interpreter mode")

#: Distinct specialisations (compilations on a fresh GPU machine) allowed for 200 cases.
LIMITS = {"grads_match_reference": 104, "out_matches_reference": 24}

_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "uint8": "u8", "int32": "i32", "none": "-",
          True: "1", False: "0"}

#: The kernel variants (:func:`flashcheck.devtools.specialisations.variants`: constexprs but the
#: launch settings, and each tensor argument's element type, ``-`` where absent) that the 200
#: cases of each property reached before compile-aware drawing: obtained on commit 51b5be1
#: (9670bfb's kernels and strategies, with ``specialisations.launches``/``variants`` added) by
#: ``TRITON_INTERPRET=1 python -c "from flashcheck.devtools import specialisations as s;
#: print(s.variants('grads_match_reference'))"`` (and likewise for out_matches_reference),
#: each variant written as its values in the order of the field names.
BEFORE = {
    'grads_match_reference': {
        '_attention_forward': ('BLOCK_D CuSeqlensK CuSeqlensQ EMULATE_BF16 FP32_IEEE FULL_D HAS_MASK IS_VARLEN K Lse Mask Out POSITIVE_SCALE Q V', """
            128 - - 0 0 0 0 0 f16 f32 - f32 1 f16 f16
            128 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            128 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            128 - - 1 0 0 1 0 bf16 f32 u8 f32 1 bf16 bf16
            128 - - 1 0 1 0 0 bf16 f32 - f32 1 bf16 bf16
            128 - - 1 0 1 1 0 bf16 f32 u8 f32 1 bf16 bf16
            128 i32 i32 0 0 0 0 1 f16 f32 - f32 1 f16 f16
            128 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            128 i32 i32 1 0 0 0 1 bf16 f32 - f32 1 bf16 bf16
            16 - - 0 0 0 0 0 f16 f32 - f32 0 f16 f16
            16 - - 0 0 1 0 0 f16 f32 - f32 1 f16 f16
            16 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            16 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            16 - - 1 0 0 0 0 bf16 f32 - f32 1 bf16 bf16
            16 - - 1 0 1 0 0 bf16 f32 - f32 1 bf16 bf16
            16 i32 i32 0 1 0 0 1 f32 f32 - f32 1 f32 f32
            16 i32 i32 0 1 1 0 1 f32 f32 - f32 0 f32 f32
            16 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            16 i32 i32 1 0 0 0 1 bf16 f32 - f32 1 bf16 bf16
            16 i32 i32 1 0 1 0 1 bf16 f32 - f32 1 bf16 bf16
            256 - - 0 0 0 0 0 f16 f32 - f32 0 f16 f16
            256 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            256 - - 0 1 0 1 0 f32 f32 u8 f32 1 f32 f32
            256 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            256 - - 1 0 0 0 0 bf16 f32 - f32 1 bf16 bf16
            256 - - 1 0 1 1 0 bf16 f32 u8 f32 1 bf16 bf16
            256 i32 i32 1 0 0 0 1 bf16 f32 - f32 1 bf16 bf16
            32 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            32 - - 0 1 1 1 0 f32 f32 u8 f32 1 f32 f32
            32 - - 1 0 1 0 0 bf16 f32 - f32 1 bf16 bf16
            32 - - 1 0 1 1 0 bf16 f32 u8 f32 1 bf16 bf16
            32 i32 i32 0 0 1 0 1 f16 f32 - f32 1 f16 f16
            32 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            32 i32 i32 1 0 1 0 1 bf16 f32 - f32 1 bf16 bf16
            64 - - 0 0 0 0 0 f16 f32 - f32 1 f16 f16
            64 - - 0 0 1 0 0 f16 f32 - f32 1 f16 f16
            64 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            64 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            64 - - 1 0 1 0 0 bf16 f32 - f32 1 bf16 bf16
            64 - - 1 0 1 1 0 bf16 f32 u8 f32 1 bf16 bf16
            64 i32 i32 0 0 1 0 1 f16 f32 - f32 1 f16 f16
            64 i32 i32 1 0 0 0 1 bf16 f32 - f32 1 bf16 bf16
            64 i32 i32 1 0 1 0 1 bf16 f32 - f32 1 bf16 bf16
        """),
        '_dk_dv': ('BLOCK_D Bounds CuSeqlensK CuSeqlensQ DK DOut DV Delta EMULATE_BF16 FLOAT16_DS FP32_IEEE FULL_D HAS_MASK IS_VARLEN K Lse Mask Q SCALE_DS V', """
            128 f32 - - bf16 bf16 bf16 f32 1 0 0 0 1 0 bf16 f32 u8 bf16 0 bf16
            128 f32 - - bf16 bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            128 f32 - - bf16 bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            128 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            128 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            128 f32 - - f32 f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            128 f32 - - f32 f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            128 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            128 f32 i32 i32 f16 f16 f16 f32 0 1 0 0 0 1 f16 f32 - f16 0 f16
            128 f32 i32 i32 f16 f16 f16 f32 0 1 0 0 0 1 f16 f32 - f16 1 f16
            128 f32 i32 i32 f32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            16 f32 - - bf16 bf16 bf16 f32 1 0 0 0 0 0 bf16 f32 - bf16 0 bf16
            16 f32 - - bf16 bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            16 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            16 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            16 f32 - - f16 f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 0 f16
            16 f32 - - f16 f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 1 f16
            16 f32 - - f32 f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            16 f32 - - f32 f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            16 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            16 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
            16 f32 i32 i32 f32 f32 f32 f32 0 0 1 0 0 1 f32 f32 - f32 0 f32
            16 f32 i32 i32 f32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            256 f32 - - bf16 bf16 bf16 f32 1 0 0 0 0 0 bf16 f32 - bf16 0 bf16
            256 f32 - - bf16 bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            256 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            256 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            256 f32 - - f32 f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            256 f32 - - f32 f32 f32 f32 0 0 1 0 1 0 f32 f32 u8 f32 0 f32
            256 f32 - - f32 f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            256 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            32 f32 - - bf16 bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            32 f32 - - bf16 bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            32 f32 - - f32 f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            32 f32 - - f32 f32 f32 f32 0 0 1 1 1 0 f32 f32 u8 f32 0 f32
            32 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
            32 f32 i32 i32 f16 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 0 f16
            32 f32 i32 i32 f16 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 1 f16
            32 f32 i32 i32 f32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            64 f32 - - bf16 bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            64 f32 - - bf16 bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            64 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            64 f32 - - f16 f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            64 f32 - - f16 f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 0 f16
            64 f32 - - f16 f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 1 f16
            64 f32 - - f32 f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            64 f32 - - f32 f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            64 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            64 f32 i32 i32 bf16 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
        """),
        '_dq': ('BLOCK_D Bounds CuSeqlensK CuSeqlensQ DOut DQ Delta EMULATE_BF16 FLOAT16_DS FP32_IEEE FULL_D HAS_MASK IS_VARLEN K Lse Mask Q SCALE_DS V', """
            128 f32 - - bf16 bf16 f32 1 0 0 0 1 0 bf16 f32 u8 bf16 0 bf16
            128 f32 - - bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            128 f32 - - bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            128 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            128 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            128 f32 - - f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            128 f32 - - f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            128 f32 i32 i32 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            128 f32 i32 i32 f16 f16 f32 0 1 0 0 0 1 f16 f32 - f16 0 f16
            128 f32 i32 i32 f16 f16 f32 0 1 0 0 0 1 f16 f32 - f16 1 f16
            128 f32 i32 i32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            16 f32 - - bf16 bf16 f32 1 0 0 0 0 0 bf16 f32 - bf16 0 bf16
            16 f32 - - bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            16 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            16 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            16 f32 - - f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 0 f16
            16 f32 - - f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 1 f16
            16 f32 - - f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            16 f32 - - f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            16 f32 i32 i32 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            16 f32 i32 i32 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
            16 f32 i32 i32 f32 f32 f32 0 0 1 0 0 1 f32 f32 - f32 0 f32
            16 f32 i32 i32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            256 f32 - - bf16 bf16 f32 1 0 0 0 0 0 bf16 f32 - bf16 0 bf16
            256 f32 - - bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            256 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            256 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            256 f32 - - f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            256 f32 - - f32 f32 f32 0 0 1 0 1 0 f32 f32 u8 f32 0 f32
            256 f32 - - f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            256 f32 i32 i32 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            32 f32 - - bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            32 f32 - - bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            32 f32 - - f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            32 f32 - - f32 f32 f32 0 0 1 1 1 0 f32 f32 u8 f32 0 f32
            32 f32 i32 i32 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
            32 f32 i32 i32 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 0 f16
            32 f32 i32 i32 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 1 f16
            32 f32 i32 i32 f32 f32 f32 0 0 1 1 0 1 f32 f32 - f32 0 f32
            64 f32 - - bf16 bf16 f32 1 0 0 1 0 0 bf16 f32 - bf16 0 bf16
            64 f32 - - bf16 bf16 f32 1 0 0 1 1 0 bf16 f32 u8 bf16 0 bf16
            64 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 0 f16
            64 f32 - - f16 f16 f32 0 1 0 0 0 0 f16 f32 - f16 1 f16
            64 f32 - - f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 0 f16
            64 f32 - - f16 f16 f32 0 1 0 1 0 0 f16 f32 - f16 1 f16
            64 f32 - - f32 f32 f32 0 0 1 0 0 0 f32 f32 - f32 0 f32
            64 f32 - - f32 f32 f32 0 0 1 1 0 0 f32 f32 - f32 0 f32
            64 f32 i32 i32 bf16 bf16 f32 1 0 0 0 0 1 bf16 f32 - bf16 0 bf16
            64 f32 i32 i32 bf16 bf16 f32 1 0 0 1 0 1 bf16 f32 - bf16 0 bf16
            64 f32 i32 i32 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 0 f16
            64 f32 i32 i32 f16 f16 f32 0 1 0 1 0 1 f16 f32 - f16 1 f16
        """),
        '_preprocess': ('BLOCK_D Bounds DLse DOut Delta FLOAT16_DS HAS_DLSE Out V', """
            128 f32 f32 bf16 f32 0 1 f32 bf16
            128 f32 f32 f16 f32 1 1 f32 f16
            128 f32 f32 f32 f32 0 1 f32 f32
            16 f32 f32 bf16 f32 0 1 f32 bf16
            16 f32 f32 f16 f32 1 1 f32 f16
            16 f32 f32 f32 f32 0 1 f32 f32
            256 f32 f32 bf16 f32 0 1 f32 bf16
            256 f32 f32 f16 f32 1 1 f32 f16
            256 f32 f32 f32 f32 0 1 f32 f32
            32 f32 f32 bf16 f32 0 1 f32 bf16
            32 f32 f32 f16 f32 1 1 f32 f16
            32 f32 f32 f32 f32 0 1 f32 f32
            64 f32 f32 bf16 f32 0 1 f32 bf16
            64 f32 f32 f16 f32 1 1 f32 f16
            64 f32 f32 f32 f32 0 1 f32 f32
        """),
    },
    'out_matches_reference': {
        '_attention_forward': ('BLOCK_D CuSeqlensK CuSeqlensQ EMULATE_BF16 FP32_IEEE FULL_D HAS_MASK IS_VARLEN K Lse Mask Out POSITIVE_SCALE Q V', """
            128 - - 0 0 0 0 0 f16 f32 - f16 1 f16 f16
            128 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            128 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            128 - - 1 0 0 1 0 bf16 f32 u8 bf16 1 bf16 bf16
            128 - - 1 0 1 0 0 bf16 f32 - bf16 1 bf16 bf16
            128 - - 1 0 1 1 0 bf16 f32 u8 bf16 1 bf16 bf16
            128 i32 i32 0 0 0 0 1 f16 f32 - f16 1 f16 f16
            128 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            128 i32 i32 1 0 0 0 1 bf16 f32 - bf16 1 bf16 bf16
            16 - - 0 0 0 0 0 f16 f32 - f16 0 f16 f16
            16 - - 0 0 1 0 0 f16 f32 - f16 1 f16 f16
            16 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            16 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            16 - - 1 0 0 0 0 bf16 f32 - bf16 1 bf16 bf16
            16 - - 1 0 1 0 0 bf16 f32 - bf16 1 bf16 bf16
            16 i32 i32 0 1 0 0 1 f32 f32 - f32 1 f32 f32
            16 i32 i32 0 1 1 0 1 f32 f32 - f32 0 f32 f32
            16 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            16 i32 i32 1 0 0 0 1 bf16 f32 - bf16 1 bf16 bf16
            16 i32 i32 1 0 1 0 1 bf16 f32 - bf16 1 bf16 bf16
            256 - - 0 0 0 0 0 f16 f32 - f16 0 f16 f16
            256 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            256 - - 0 1 0 1 0 f32 f32 u8 f32 1 f32 f32
            256 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            256 - - 1 0 0 0 0 bf16 f32 - bf16 1 bf16 bf16
            256 - - 1 0 1 1 0 bf16 f32 u8 bf16 1 bf16 bf16
            256 i32 i32 1 0 0 0 1 bf16 f32 - bf16 1 bf16 bf16
            32 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            32 - - 0 1 1 1 0 f32 f32 u8 f32 1 f32 f32
            32 - - 1 0 1 0 0 bf16 f32 - bf16 1 bf16 bf16
            32 - - 1 0 1 1 0 bf16 f32 u8 bf16 1 bf16 bf16
            32 i32 i32 0 0 1 0 1 f16 f32 - f16 1 f16 f16
            32 i32 i32 0 1 1 0 1 f32 f32 - f32 1 f32 f32
            32 i32 i32 1 0 1 0 1 bf16 f32 - bf16 1 bf16 bf16
            64 - - 0 0 0 0 0 f16 f32 - f16 1 f16 f16
            64 - - 0 0 1 0 0 f16 f32 - f16 1 f16 f16
            64 - - 0 1 0 0 0 f32 f32 - f32 1 f32 f32
            64 - - 0 1 1 0 0 f32 f32 - f32 1 f32 f32
            64 - - 1 0 1 0 0 bf16 f32 - bf16 1 bf16 bf16
            64 - - 1 0 1 1 0 bf16 f32 u8 bf16 1 bf16 bf16
            64 i32 i32 0 0 1 0 1 f16 f32 - f16 1 f16 f16
            64 i32 i32 1 0 0 0 1 bf16 f32 - bf16 1 bf16 bf16
            64 i32 i32 1 0 1 0 1 bf16 f32 - bf16 1 bf16 bf16
        """),
    },
}


def _encoded(variant: tuple) -> tuple[str, str]:
    return " ".join(name for name, _ in variant), " ".join(_SHORT.get(value, str(value)) for _, value in variant)


#: Cases drawn in each compile class when counting what a fuzz run's classes reach.
CASES_PER_CLASS = 12


def _launches_in_every_class(prop: str) -> list:
    """The launches of a few cases drawn in each class of the gpu sizes' catalogue in turn, as
    the workers of a fuzz run draw them (each starts in a class of its own and widens)."""
    classes = len(compile_classes.compile_classes(GPU, GPU.dtypes, ("dense", "mask", "varlen"), LAYOUTS))
    return [launch for start in range(classes)
            for launch in specialisations.launches(
                prop, examples=CASES_PER_CLASS, size=dataclasses.replace(GPU, focus_start=start, focus_classes=1))]


@functools.cache
def _reached(prop: str, in_every_class: bool = False):
    """``({kernel: distinct specialisations}, {kernel: (field names, set of variants)})`` of
    the 200 derandomized cases, or with ``in_every_class`` of :func:`_launches_in_every_class`."""
    keys, variants = collections.defaultdict(set), collections.defaultdict(set)
    names = {}
    for launch in (_launches_in_every_class(prop) if in_every_class else specialisations.launches(prop)):
        kernel = launch.kernel.fn.__name__
        keys[kernel].add(launch.key())
        names[kernel], encoded = _encoded(launch.variant())
        variants[kernel].add(encoded)
    return {k: len(v) for k, v in keys.items()}, {k: (names[k], v) for k, v in variants.items()}


def _choices(names: str, variant: str) -> frozenset:
    return frozenset(zip(names.split(), variant.split()))


@pytest.mark.parametrize("prop", sorted(LIMITS))
def test_gpu_size_cases_need_at_most_a_fifth_of_the_compilations(prop):
    counts, _ = _reached(prop)
    assert sum(counts.values()) <= LIMITS[prop], counts


@pytest.mark.parametrize("prop", sorted(LIMITS))
def test_every_pair_of_variant_choices_reached_before_is_still_reached(prop):
    # Every variant reached before cannot be: the 43 forward variants alone outnumber the
    # 24 compilations allowed for out_matches_reference. What is kept instead: every choice
    # (a constexpr's value, a tensor's element type or absence) and every pair of choices
    # that some variant combined before is combined by some variant now, in every kernel,
    # by cases drawn in each compile class as a fuzz run's workers draw them. (200
    # derandomized draws need not visit every class: hypothesis draws some classes far more
    # often than others, and a pair of choices may live in one class alone.)
    _, now = _reached(prop, in_every_class=True)
    assert set(now) == set(BEFORE[prop])
    for kernel, (names, table) in BEFORE[prop].items():
        now_names, now_variants = now[kernel]
        assert set(names.split()) <= set(now_names.split())  # a kernel may gain arguments, not lose them
        before = [_choices(names, line) for line in table.split("\n") if line.strip()]
        reached = [_choices(now_names, line) for line in now_variants]
        for size in (1, 2):
            wanted = {pair for v in before for pair in itertools.combinations(sorted(v), size)}
            got = {pair for v in reached for pair in itertools.combinations(sorted(v), size)}
            assert wanted <= got, (kernel, sorted(wanted - got))
