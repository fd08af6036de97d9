"""Launches in Triton's interpreter (flashcheck.kernels.launcher): the work the launcher
spares the interpreter (patching the language at every call of a helper, overflow
conditions nobody asserts) changes no result, bitwise, and checks nothing when done."""
from __future__ import annotations

import contextlib
import dataclasses

import pytest
import torch
import triton
import triton.language as tl

from flashcheck.kernels import config, flash_attention, launcher

pytestmark = pytest.mark.skipif(
    not config.INTERPRETER or launcher._PATCH_LANG is None or launcher._BUILDER is None,
    reason="Triton's interpreter (TRITON_INTERPRET=1) with the internals the launcher relies on",
)

SAVINGS = ("_language_patched_once_per_function", "_without_discarded_overflow_checks")


def _inputs(dtype, *, batch=2, seqlen_q=21, seqlen_k=37, heads=4, kv_heads=2, head_dim=24, seed=0):
    generator = torch.Generator().manual_seed(seed)
    shapes = ((batch, seqlen_q, heads, head_dim), (batch, seqlen_k, kv_heads, head_dim),
              (batch, seqlen_k, kv_heads, head_dim))
    return [torch.randn(shape, generator=generator).to(dtype).requires_grad_() for shape in shapes]


def _forward_backward(dtype, **kwargs):
    """out, lse, dq, dk, dv of one call, upstream gradients of both outputs included."""
    q, k, v = _inputs(dtype)
    out, lse = flash_attention(q, k, v, **kwargs)
    generator = torch.Generator().manual_seed(1)
    grad_out = torch.randn(out.shape, generator=generator).to(dtype)
    grad_lse = torch.randn(lse.shape, generator=generator)
    loss = (out.float() * grad_out.float()).sum() + torch.where(torch.isfinite(lse), lse * grad_lse, 0.0).sum()
    return (out, lse, *torch.autograd.grad(loss, (q, k, v)))


CALLS = [
    pytest.param(torch.float16, dict(causal=True), id="float16-causal-gqa"),
    pytest.param(torch.bfloat16, dict(window=(5, 3)), id="bfloat16-window-gqa"),
    pytest.param(torch.float32, dict(attn_mask=torch.rand(21, 37, generator=torch.Generator().manual_seed(2)) < 0.7),
                 id="float32-mask-gqa"),
]


@pytest.mark.parametrize("dtype, kwargs", CALLS)
def test_the_spared_work_changes_no_result_bitwise(monkeypatch, dtype, kwargs):
    spared = _forward_backward(dtype, **kwargs)
    for saving in SAVINGS:
        monkeypatch.setattr(launcher, saving, contextlib.nullcontext)
    done = _forward_backward(dtype, **kwargs)
    for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), spared, done):
        assert torch.equal(a, b), name


def _counting_patches(monkeypatch):
    """Route Triton's patch of the language through a counter of calls per function."""
    interpreter, original = launcher._interpreter, launcher._PATCH_LANG
    counts = {}

    def counted(fn):
        counts[fn] = counts.get(fn, 0) + 1
        return original(fn)

    monkeypatch.setattr(interpreter, "_patch_lang", counted)
    monkeypatch.setattr(launcher, "_PATCH_LANG", counted)
    return counts


def test_a_launch_patches_the_language_once_per_function_it_calls(monkeypatch):
    counts = _counting_patches(monkeypatch)
    q, k, v = (t.detach() for t in _inputs(torch.float16))
    flash_attention(q, k, v, causal=True)
    assert counts and set(counts.values()) == {1}
    # Without it, the interpreter patches at every call of a helper: many times per launch.
    counts.clear()
    monkeypatch.setattr(launcher, "_language_patched_once_per_function", contextlib.nullcontext)
    flash_attention(q, k, v, causal=True)
    assert max(counts.values()) > 10


@triton.jit
def _square_plus_self(X, Y):
    x = tl.load(X + tl.arange(0, 4))
    tl.store(Y + tl.arange(0, 4), x * x + x)


def test_the_interpreter_asserts_no_overflow_condition_it_computes():
    """The premise of sparing the overflow conditions: with the interpreter's own options
    (sanitize_overflow on, debug off) an int32 overflow is not reported, so computing the
    conditions checks nothing. Should a Triton assert them, this fails: the saving would
    then drop a check and must go."""
    options = launcher._BUILDER.options
    assert options.sanitize_overflow and not options.debug
    x = torch.full((4,), 2**20, dtype=torch.int32)
    y = torch.empty_like(x)
    _square_plus_self[(1,)](x, y)  # not through the launcher: the interpreter as it comes
    assert y.tolist() == [2**20] * 4  # 2^40 + 2^20 wrapped to int32


def test_the_overflow_conditions_are_computed_where_debug_would_assert_them(monkeypatch):
    debug = dataclasses.replace(launcher._BUILDER.options, debug=True)
    monkeypatch.setattr(launcher._BUILDER, "options", debug)
    with launcher._without_discarded_overflow_checks():
        assert launcher._BUILDER.options is debug


def test_the_interpreter_is_left_as_it_was_after_a_launch_and_after_one_that_raises():
    patch_lang, options = launcher._interpreter._patch_lang, launcher._BUILDER.options
    q, k, v = (t.detach() for t in _inputs(torch.float32))
    flash_attention(q, k, v)
    assert launcher._interpreter._patch_lang is patch_lang and launcher._BUILDER.options is options
    with pytest.raises(RuntimeError, match="planted"):
        with launcher._language_patched_once_per_function(), launcher._without_discarded_overflow_checks():
            assert launcher._interpreter._patch_lang is not patch_lang
            assert not launcher._BUILDER.options.sanitize_overflow
            raise RuntimeError("planted")
    assert launcher._interpreter._patch_lang is patch_lang and launcher._BUILDER.options is options
