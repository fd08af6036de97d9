"""Launches in Triton's interpreter (flashcheck.kernels.launcher): each ``@triton.jit``
function patches the language once per launch, and the kernels compute bitwise what they
compute when the interpreter patches it at every call."""
from __future__ import annotations

import contextlib

import pytest
import torch

from flashcheck.kernels import config, flash_attention, launcher

pytestmark = pytest.mark.skipif(
    not config.INTERPRETER or launcher._PATCH_LANG is None,
    reason="Triton's interpreter (TRITON_INTERPRET=1) with the internals the launcher relies on",
)


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
def test_patching_once_per_function_gives_bitwise_the_results_of_patching_at_every_call(monkeypatch, dtype, kwargs):
    once = _forward_backward(dtype, **kwargs)
    monkeypatch.setattr(launcher, "_language_patched_once_per_function", contextlib.nullcontext)
    every_call = _forward_backward(dtype, **kwargs)
    for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), once, every_call):
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


def test_the_interpreter_is_left_as_it_was_after_a_launch_and_after_one_that_raises():
    original = launcher._interpreter._patch_lang
    q, k, v = (t.detach() for t in _inputs(torch.float32))
    flash_attention(q, k, v)
    assert launcher._interpreter._patch_lang is original
    with pytest.raises(RuntimeError, match="planted"):
        with launcher._language_patched_once_per_function():
            assert launcher._interpreter._patch_lang is not original
            raise RuntimeError("planted")
    assert launcher._interpreter._patch_lang is original
