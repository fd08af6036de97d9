"""The FlashAttention-4 (fa4, fa4-varlen, fa4-deterministic) and FlashAttention-2 (fa2,
fa2-varlen) adapters against fakes of ``flash_attn.cute`` and ``flash_attn``.

Each fake (tests/support/peer_fakes.py) takes its library's conventions, asserts the encodings it
documents (FA4: an unbounded window side is None; FA2: -1; int32 cu_seqlens), records what
reaches it and returns a float64 reference in its own layout (lse natural log, ``(B, H, Nq)``
dense, ``(H, Tq)`` packed). The adapter's result must be the protocol's answer: out
``(B, Nq, H, D)`` in q's dtype, lse ``(B, H, Nq)`` float32, natural log.
"""
from __future__ import annotations

import sys

import pytest
import torch

from flashcheck.cases.case import Case
from flashcheck.peers import fa2, fa4
from tests.support import peer_fakes

# (b, nq, nk, h, hkv, d, causal, window)
CASES = [
    (2, 5, 9, 4, 4, 16, False, (-1, -1)),
    (2, 5, 9, 6, 2, 16, True, (-1, -1)),  # Nq < Nk, GQA 3:1
    (1, 9, 5, 4, 2, 8, True, (-1, -1)),  # Nq > Nk: the first rows see no key
    (2, 7, 11, 4, 1, 16, False, (2, 1)),  # window, MQA
    (2, 11, 7, 2, 2, 8, True, (2, -1)),  # causal with a left window
    (1, 6, 6, 2, 2, 16, False, (-1, 0)),  # a right bound of 0 without causal
]
IDS = [f"nq{c[1]}-nk{c[2]}-h{c[3]}:{c[4]}-{'causal' if c[6] else 'full'}-w{c[7][0]},{c[7][1]}" for c in CASES]


@pytest.fixture
def fake_fa4(monkeypatch):
    module = peer_fakes.fake_fa4()
    monkeypatch.setitem(sys.modules, "flash_attn.cute", module)
    monkeypatch.setattr(fa4, "_capability", lambda device: (9, 0))
    return module


@pytest.fixture
def fake_fa2(monkeypatch):
    module = peer_fakes.fake_fa2()
    monkeypatch.setitem(sys.modules, "flash_attn", module)
    monkeypatch.setattr(fa2, "_capability", lambda device: (8, 0))
    return module


def assert_protocol_result(out, lse, expected_out, expected_lse, q):
    assert out.shape == q.shape and out.dtype == q.dtype
    torch.testing.assert_close(out, expected_out)
    assert lse.dtype == torch.float32 and lse.shape == expected_lse.shape
    assert torch.equal(torch.isneginf(lse), torch.isneginf(expected_lse)), "rows without keys: lse -inf"
    torch.testing.assert_close(lse, expected_lse)


# ------------------------------------------------------------- FlashAttention-4


@pytest.mark.parametrize("b, nq, nk, h, hkv, d, causal, window", CASES, ids=IDS)
def test_fa4_passes_the_protocol_s_band_as_fa4_s_window_size_with_none_unbounded(fake_fa4, b, nq, nk, h, hkv, d,
                                                                                  causal, window):
    q, k, v = peer_fakes.inputs(b, nq, nk, h, hkv, d, dtype=torch.bfloat16)
    out, lse = peer_fakes.on_cpu(fa4.dense())(q, k, v, causal=causal, window=window)
    call = fake_fa4.calls[-1]
    right = 0 if causal else window[1]
    assert call["window_size"] == tuple(None if side == -1 else side for side in (window[0], right))
    assert call["causal"] is causal and call["return_lse"] is True and call["deterministic"] is False
    assert call["softmax_scale"] == pytest.approx(d ** -0.5)
    assert call["q"] is q and call["k"] is k and call["v"] is v, "inputs go in as they are"
    assert_protocol_result(out, lse, *peer_fakes.reference(q, k, v, causal=causal, window=window), q)


def test_fa4_hands_strided_inputs_over_untouched_and_an_explicit_scale(fake_fa4):
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in peer_fakes.inputs(2, 6, 6, 4, 2, 16))
    peer_fakes.on_cpu(fa4.dense())(q, k, v, softmax_scale=-0.7)
    call = fake_fa4.calls[-1]
    assert call["q"].stride() == q.stride() and call["softmax_scale"] == -0.7


def test_fa4_deterministic_asks_for_the_deterministic_backward(fake_fa4):
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16)
    peer_fakes.on_cpu(fa4.deterministic())(q, k, v, causal=True)
    assert fake_fa4.calls[-1]["deterministic"] is True
    case = Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=2 kv_heads=2 head_dim=16 dtype=float16 seed=0")
    assert fa4.dense().flashcheck_known_divergences["backward_deterministic"].explains(case)
    # The deterministic mode is expected deterministic: only the negative-scale finding is declared.
    assert not fa4.deterministic().flashcheck_known_divergences["backward_deterministic"].explains(case)


def test_fa4_gradients_and_the_lse_s_gradient_flow_through_the_library(fake_fa4):
    q, k, v = peer_fakes.inputs(1, 5, 7, 4, 2, 16, requires_grad=True)
    out, lse = peer_fakes.on_cpu(fa4.dense())(q, k, v, causal=True)
    assert lse.requires_grad, "FA4's lse is differentiable with return_lse=True: returned as it is"
    (out.float().sum() + lse.sum()).backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (q, k, v))


def test_fa4_varlen_hands_packed_arguments_over_and_returns_lse_h_by_tq(fake_fa4):
    q, k, v, packed = peer_fakes.packed_inputs([(3, 5), (0, 2), (4, 1), (2, 0)], 4, 2, 16)
    out, lse = peer_fakes.on_cpu(fa4.varlen())(q, k, v, causal=True, window=(1, -1), **packed)
    call = fake_fa4.calls[-1]
    assert call["function"] == "flash_attn_varlen_func"
    assert call["cu_seqlens_q"] is packed["cu_seqlens_q"] and call["cu_seqlens_k"] is packed["cu_seqlens_k"]
    assert (call["max_seqlen_q"], call["max_seqlen_k"]) == (4, 5)
    assert call["window_size"] == (1, 0) and call["causal"] is True
    assert_protocol_result(out, lse, *peer_fakes.packed_reference(q, k, v, causal=True, window=(1, -1), **packed), q)


def test_fa4_varlen_runs_a_dense_batch_as_one_packed_sequence_per_batch_entry(fake_fa4):
    q, k, v = peer_fakes.inputs(3, 5, 8, 4, 2, 16)
    out, lse = peer_fakes.on_cpu(fa4.varlen())(q, k, v, window=(2, 1))
    call = fake_fa4.calls[-1]
    assert call["q"].shape == (15, 4, 16) and call["k"].shape == (24, 2, 16)
    assert call["cu_seqlens_q"].tolist() == [0, 5, 10, 15] and call["cu_seqlens_k"].tolist() == [0, 8, 16, 24]
    assert (call["max_seqlen_q"], call["max_seqlen_k"]) == (5, 8)
    assert_protocol_result(out, lse, *peer_fakes.reference(q, k, v, window=(2, 1)), q)


@pytest.mark.parametrize("capability, d, message", [
    ((8, 0), 64, "sm80"),
    ((13, 0), 64, "sm130"),
    ((9, 0), 264, "head dim 264"),
    ((9, 0), 12, "head dim 12"),
    ((10, 0), 192, "head dim 192"),
    ((11, 0), 136, "head dim 136"),
])
def test_fa4_declines_the_gpus_and_head_dims_its_source_excludes(monkeypatch, capability, d, message):
    monkeypatch.setattr(fa4, "_capability", lambda device: capability)
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, d)
    with pytest.raises(NotImplementedError, match=message):  # before flash_attn.cute is imported: it is absent
        peer_fakes.on_cpu(fa4.dense())(q, k, v)


@pytest.mark.parametrize("capability, d", [((9, 0), 256), ((9, 0), 8), ((10, 0), 128), ((10, 0), 256),
                                           ((12, 0), 96)])
def test_fa4_runs_the_head_dims_its_source_allows(fake_fa4, monkeypatch, capability, d):
    monkeypatch.setattr(fa4, "_capability", lambda device: capability)
    q, k, v = peer_fakes.inputs(1, 3, 3, 1, 1, d)
    peer_fakes.on_cpu(fa4.dense())(q, k, v)
    assert fake_fa4.calls


def test_fa4_deterministic_declines_gradients_on_sm12x_only(fake_fa4, monkeypatch):
    monkeypatch.setattr(fa4, "_capability", lambda device: (12, 0))
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16, requires_grad=True)
    with pytest.raises(NotImplementedError, match="deterministic backward"):
        peer_fakes.on_cpu(fa4.deterministic())(q, k, v)
    peer_fakes.on_cpu(fa4.dense())(q, k, v)
    with torch.no_grad():
        peer_fakes.on_cpu(fa4.deterministic())(q, k, v)


def test_fa4_declines_float32_and_a_mask(fake_fa4):
    impl = peer_fakes.on_cpu(fa4.dense())
    with pytest.raises(NotImplementedError, match="float32"):
        impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16, dtype=torch.float32))
    with pytest.raises(NotImplementedError, match="attn_mask"):
        impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16), attn_mask=torch.ones(4, 4, dtype=torch.bool))
    assert not fake_fa4.calls


# ------------------------------------------------------------- FlashAttention-2


@pytest.mark.parametrize("b, nq, nk, h, hkv, d, causal, window", CASES, ids=IDS)
def test_fa2_passes_the_protocol_s_window_as_it_is_and_asks_for_the_lse(fake_fa2, b, nq, nk, h, hkv, d, causal,
                                                                        window):
    q, k, v = peer_fakes.inputs(b, nq, nk, h, hkv, d)
    out, lse = peer_fakes.on_cpu(fa2.dense())(q, k, v, causal=causal, window=window)
    call = fake_fa2.calls[-1]
    assert call["window_size"] == (window[0], 0 if causal else window[1]) and call["causal"] is causal
    assert call["return_attn_probs"] is True and call["dropout_p"] == 0.0
    assert call["softmax_scale"] == pytest.approx(d ** -0.5)
    assert_protocol_result(out, lse, *peer_fakes.reference(q, k, v, causal=causal, window=window), q)


def test_fa2_returns_its_lse_detached_as_its_backward_discards_the_lse_s_gradient(fake_fa2):
    q, k, v = peer_fakes.inputs(1, 5, 7, 4, 2, 16, requires_grad=True)
    out, lse = peer_fakes.on_cpu(fa2.dense())(q, k, v, causal=True)
    assert out.requires_grad and not lse.requires_grad
    out.float().sum().backward()
    assert all(t.grad is not None for t in (q, k, v))


def test_fa2_varlen_hands_packed_arguments_over_and_returns_lse_h_by_tq(fake_fa2):
    q, k, v, packed = peer_fakes.packed_inputs([(3, 5), (0, 2), (4, 1)], 4, 4, 16, dtype=torch.bfloat16)
    out, lse = peer_fakes.on_cpu(fa2.varlen())(q, k, v, window=(1, 2), **packed)
    call = fake_fa2.calls[-1]
    assert call["cu_seqlens_q"] is packed["cu_seqlens_q"] and (call["max_seqlen_q"], call["max_seqlen_k"]) == (4, 5)
    assert call["window_size"] == (1, 2)
    assert_protocol_result(out, lse, *peer_fakes.packed_reference(q, k, v, window=(1, 2), **packed), q)


def test_fa2_varlen_runs_a_dense_batch_as_one_packed_sequence_per_batch_entry(fake_fa2):
    q, k, v = peer_fakes.inputs(2, 4, 6, 2, 1, 8)
    out, lse = peer_fakes.on_cpu(fa2.varlen())(q, k, v, causal=True)
    assert fake_fa2.calls[-1]["cu_seqlens_k"].tolist() == [0, 6, 12]
    assert_protocol_result(out, lse, *peer_fakes.reference(q, k, v, causal=True), q)


@pytest.mark.parametrize("capability, d, message", [((7, 5), 64, "sm75"), ((9, 0), 264, "head dim 264")])
def test_fa2_declines_pre_ampere_gpus_and_head_dims_above_256(monkeypatch, capability, d, message):
    monkeypatch.setattr(fa2, "_capability", lambda device: capability)
    with pytest.raises(NotImplementedError, match=message):
        peer_fakes.on_cpu(fa2.dense())(*peer_fakes.inputs(1, 4, 4, 2, 2, d))


def test_fa2_declines_float32_and_a_mask_and_runs_an_unaligned_head_dim(fake_fa2):
    impl = peer_fakes.on_cpu(fa2.dense())
    with pytest.raises(NotImplementedError, match="float32"):
        impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16, dtype=torch.float32))
    with pytest.raises(NotImplementedError, match="attn_mask"):
        impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16), attn_mask=torch.ones(4, 4, dtype=torch.bool))
    impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 12))  # FA2's Python wrapper pads the head dim itself


def test_fa4_s_sm90_backward_divergence_covers_head_dims_off_multiples_of_32_on_hopper_alone(monkeypatch):
    from flashcheck.cases.case import Case

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    spec = "batch=1 seqlen_q=128 seqlen_k=256 heads=4 kv_heads=1 dtype=float16 seed=0"
    known = fa4.dense().flashcheck_known_divergences
    assert "out_matches_reference" not in known or not known["out_matches_reference"].explains(
        Case.from_spec(f"{spec} head_dim=72")), "the forward is right at every head dim"
    grads = known["grads_match_reference"]
    monkeypatch.setattr(fa4, "_capability", lambda device: (9, 0))
    for wrong in (48, 72, 80, 104, 112):
        assert grads.explains(Case.from_spec(f"{spec} head_dim={wrong}"))
    for right in (64, 96, 128, 160):
        assert not grads.explains(Case.from_spec(f"{spec} head_dim={right}"))
    compile_error = "Operation creation failed: error: unknown: failed to partition `input` with `tiled_mma`"
    assert grads.explains(Case.from_spec(f"{spec} head_dim=104"), raised=True, message=compile_error)
    assert not grads.explains(Case.from_spec(f"{spec} head_dim=104"), raised=True, message="CUDA out of memory")
    monkeypatch.setattr(fa4, "_capability", lambda device: (10, 0))
    assert not grads.explains(Case.from_spec(f"{spec} head_dim=72")), "measured on sm90 only"


@pytest.mark.parametrize("adapter", [fa4.dense, fa4.varlen, fa4.deterministic], ids=["fa4", "fa4-varlen",
                                                                                        "fa4-deterministic"])
def test_fa4_s_float16_offset_values_divergence_covers_float16_offset_cases_of_the_gradient_properties_alone(
        adapter, monkeypatch):
    monkeypatch.setattr(fa4, "_capability", lambda device: (9, 0))
    spec = "batch=1 seqlen_q=2 seqlen_k=2 heads=4 kv_heads=1 head_dim=128 causal=True seed=0"
    known = adapter().flashcheck_known_divergences
    offset = Case.from_spec(f"{spec} dtype=float16 values=offset-values")
    for name in ("grads_match_reference", "varlen_matches_separate_calls", "repeated_calls_do_not_grow_memory"):
        assert known[name].explains(offset), name
    grads = known["grads_match_reference"]
    for other in (f"{spec} dtype=bfloat16 values=offset-values", f"{spec} dtype=float16 values=normal"):
        assert not grads.explains(Case.from_spec(other)), other
    assert "out_matches_reference" not in known or not known["out_matches_reference"].explains(offset)
    assert not grads.explains(offset, raised=True, message="CUDA out of memory"), "a numerical divergence only"


@pytest.mark.parametrize("adapter", [fa4.dense, fa4.varlen, fa4.deterministic], ids=["fa4", "fa4-varlen",
                                                                                        "fa4-deterministic"])
def test_fa4_s_float16_range_divergence_covers_the_gradient_properties_own_inputs_where_ds_overflows(
        adapter, monkeypatch):
    monkeypatch.setattr(fa4, "_capability", lambda device: (9, 0))
    known = adapter().flashcheck_known_divergences
    # A campaign's case on the H200: dK NaN where float64 gives 18513.6, exact |dS| 1.39e5.
    overflowing = Case.from_spec("batch=1 seqlen_q=1738 seqlen_k=1738 heads=1 kv_heads=1 head_dim=64 dtype=float16 "
                                 "causal=False window=0,300 softmax_scale=None layout=contiguous values=outliers "
                                 "seed=4294967294")
    for name in ("grads_match_reference", "gqa_grads_match_repeated_kv"):
        assert known[name].explains(overflowing), name
    assert not known["grads_match_reference"].explains(overflowing.replace(dtype="bfloat16"))
    assert not known["grads_match_reference"].explains(overflowing.replace(values="normal"))
    assert "out_matches_reference" not in known or not known["out_matches_reference"].explains(overflowing)
