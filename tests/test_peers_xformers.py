"""The xformers adapter against a fake of ``xformers.ops`` (tests/support/peer_fakes.py).

The fake's ``memory_efficient_attention`` takes ``[B, M, H, K]`` or, for GQA, ``[B, M, G, H, K]``
with K/V expanded over each group's heads; it reads its ``attn_bias`` classes by their
documented formulas (bottom-right causal; local attention "q - window_left <= k + s <= q +
window_right") and an additive tensor as ``[B, (G,) H, Mq, Mkv]``, and asserts a stride-1 last
dimension. Its dispatch functions can refuse, as xformers' do when no operator fits.
"""
from __future__ import annotations

import sys

import pytest
import torch

from flashcheck.peers import xformers, xformers_call
from tests.support import peer_fakes


def install(monkeypatch, refuse=None):
    module = peer_fakes.fake_xformers(refuse)
    monkeypatch.setitem(sys.modules, "xformers.ops", module)
    return module


@pytest.fixture
def fake(monkeypatch):
    return install(monkeypatch)


def called(fake):
    return [c for c in fake.calls if c["function"] == "memory_efficient_attention"][-1]


@pytest.mark.parametrize("causal, window, bias", [
    (False, (-1, -1), type(None)),
    (True, (-1, -1), peer_fakes.LowerTriangularFromBottomRightMask),
    (False, (-1, 0), peer_fakes.LowerTriangularFromBottomRightMask),
    (True, (3, -1), peer_fakes.LowerTriangularFromBottomRightLocalAttentionMask),
    (False, (2, 1), peer_fakes.LocalAttentionFromBottomRightMask),
    (False, (-1, 2), peer_fakes.LocalAttentionFromBottomRightMask),
    (False, (1, -1), peer_fakes.LocalAttentionFromBottomRightMask),
])
@pytest.mark.parametrize("nq, nk", [(5, 9), (9, 5), (6, 6)])
def test_the_band_is_the_attn_bias_class_that_expresses_it(fake, causal, window, bias, nq, nk):
    q, k, v = peer_fakes.inputs(2, nq, nk, 4, 4, 16, dtype=torch.float32)
    out, lse = peer_fakes.on_cpu(xformers.memory_efficient())(q, k, v, causal=causal, window=window)
    call = called(fake)
    assert type(call["attn_bias"]) is bias and call["p"] == 0.0 and call["scale"] == pytest.approx(0.25)
    if bias is peer_fakes.LowerTriangularFromBottomRightLocalAttentionMask:
        assert call["attn_bias"]._window_size == 4
    assert lse is None
    torch.testing.assert_close(out, peer_fakes.reference(q, k, v, causal=causal, window=window)[0])


def test_a_mask_and_the_band_become_one_aligned_additive_bias(fake):
    q, k, v = peer_fakes.inputs(2, 5, 9, 4, 4, 16)
    mask = torch.rand(2, 1, 5, 9, generator=torch.Generator().manual_seed(2)) > 0.3
    out, _ = peer_fakes.on_cpu(xformers.memory_efficient())(q, k, v, causal=True, attn_mask=mask)
    bias = called(fake)["attn_bias"]
    assert bias.dtype == q.dtype and bias.shape == (2, 4, 5, 9)
    assert bias.stride(-2) % xformers_call.BIAS_ALIGNMENT == 0, "the key axis is stored padded (xformers' alignment)"
    torch.testing.assert_close(out, peer_fakes.reference(q, k, v, causal=True, attn_mask=mask)[0])


@pytest.mark.parametrize("masked", [False, True])
def test_gqa_goes_in_the_five_dimensional_format_with_expanded_keys(fake, masked):
    q, k, v = peer_fakes.inputs(2, 6, 8, 6, 2, 16)
    mask = torch.rand(1, 6, 6, 8, generator=torch.Generator().manual_seed(3)) > 0.2 if masked else None
    out, _ = peer_fakes.on_cpu(xformers.memory_efficient())(q, k, v, window=(2, 2), attn_mask=mask)
    call = called(fake)
    assert call["q"].shape == (2, 6, 2, 3, 16) and call["k"].shape == (2, 8, 2, 3, 16) and call["k"].stride(3) == 0
    if masked:
        assert call["attn_bias"].shape == (2, 2, 3, 6, 8)
    assert out.shape == q.shape
    torch.testing.assert_close(out, peer_fakes.reference(q, k, v, window=(2, 2), attn_mask=mask)[0])


def test_an_input_with_a_strided_last_dimension_is_copied_and_others_pass_as_they_are(fake):
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16, dtype=torch.float32)
    strided = torch.randn(1, 4, 2, 32)[..., ::2]
    heads_first = k.transpose(1, 2).contiguous().transpose(1, 2)
    peer_fakes.on_cpu(xformers.memory_efficient())(strided, heads_first, v)
    call = called(fake)
    assert call["q"].stride(-1) == 1 and call["k"] is heads_first and call["v"] is v


def test_the_dispatch_is_asked_first_forward_and_with_gradients_backward(fake):
    impl = peer_fakes.on_cpu(xformers.memory_efficient())
    impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16))
    assert [c["function"] for c in fake.calls] == ["_dispatch_fw", "memory_efficient_attention"]
    fake.calls.clear()
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16, requires_grad=True)
    out, _ = impl(q, k, v, causal=True)
    assert [c["function"] for c in fake.calls] == ["_dispatch_fw", "_dispatch_bw", "memory_efficient_attention"]
    assert fake.calls[0]["args"] == (True,) and fake.calls[1]["kwargs"] == {"varlen_lse_packed": None}
    out.float().sum().backward()
    assert q.grad is not None


def test_what_no_xformers_operator_supports_is_declined_with_xformers_reasons(monkeypatch):
    fake = install(monkeypatch, refuse="dtype=torch.float32 (supported: {torch.float16})")
    with pytest.raises(NotImplementedError) as raised:
        peer_fakes.on_cpu(xformers.memory_efficient())(*peer_fakes.inputs(1, 4, 4, 2, 2, 16, dtype=torch.float32))
    first_line = str(raised.value).splitlines()[0]
    assert first_line.startswith("xformers: no operator")
    assert "`cutlassF-pt` is not supported because: dtype=torch.float32" in first_line
    assert not [c for c in fake.calls if c["function"] == "memory_efficient_attention"]


def test_gqa_with_gradients_is_declined_as_xformers_documents_it_forward_only():
    q, k, v = peer_fakes.inputs(1, 4, 4, 4, 2, 16, requires_grad=True)
    with pytest.raises(NotImplementedError, match="supported only for the forward pass"):
        peer_fakes.on_cpu(xformers.memory_efficient())(q, k, v)


def test_the_dispatch_is_asked_as_xformers_asks_it_by_requires_grad_even_without_autograd(fake):
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16, requires_grad=True)
    with torch.no_grad():
        peer_fakes.on_cpu(xformers.memory_efficient())(q, k, v)
    assert [c["function"] for c in fake.calls][:2] == ["_dispatch_fw", "_dispatch_bw"]
