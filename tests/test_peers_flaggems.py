"""The FlagGems adapters (flaggems-sdpa, flaggems-flash, flaggems-varlen) against a fake of
``flag_gems.ops`` (tests/support/peer_fakes.py).

The fake follows the contracts the adapters assume, those of the aten operators FlagGems
replaces: its SDPA takes ``(B, H, N, D)``, a top-left ``is_causal`` and a boolean mask with
True = attend read as a full ``(B, H, Nq, Nk)`` tensor, and asserts in its backward what
FlagGems asserts (contiguous q, k, v and output gradient); its flash forward takes
``(B, N, H, D)`` with a stride-1 last dimension and FlashAttention-2's window; its varlen
function reads the keys through a page table. What FlagGems' kernels actually do with a
mask is a question for a GPU run (docs/peers.md).
"""
from __future__ import annotations

import sys

import pytest
import torch

from flashcheck.peers import flaggems, flaggems_call
from flashcheck.peers.common import gradient_properties
from tests.support import peer_fakes


@pytest.fixture
def fake(monkeypatch):
    module = peer_fakes.fake_flaggems()
    monkeypatch.setitem(sys.modules, "flag_gems.ops", module)
    return module


def assert_close_to_reference(out, expected, q):
    assert out.shape == q.shape and out.dtype == q.dtype
    torch.testing.assert_close(out, expected)


# ------------------------------------------------------------- flaggems-sdpa


def test_sdpa_uses_is_causal_where_top_left_and_bottom_right_agree(fake):
    q, k, v = peer_fakes.inputs(2, 6, 6, 4, 2, 16)
    out, lse = peer_fakes.on_cpu(flaggems.sdpa())(q, k, v, causal=True)
    call = fake.calls[-1]
    assert call["is_causal"] is True and call["attn_mask"] is None and call["enable_gqa"] is True
    assert call["q"].shape == (2, 4, 6, 16) and call["scale"] == pytest.approx(0.25)
    assert lse is None
    assert_close_to_reference(out, peer_fakes.reference(q, k, v, causal=True)[0], q)


@pytest.mark.parametrize("nq, nk, causal, window, masked", [
    (5, 9, True, (-1, -1), False),  # causal with Nq != Nk: a mask, not the top-left is_causal
    (9, 5, True, (-1, -1), False),
    (7, 7, False, (2, 1), False),
    (6, 6, True, (-1, -1), True),
    (4, 8, False, (-1, -1), True),
])
def test_sdpa_folds_every_other_restriction_into_one_full_boolean_mask(fake, nq, nk, causal, window, masked):
    q, k, v = peer_fakes.inputs(2, nq, nk, 4, 4, 32, dtype=torch.float32)
    mask = (torch.rand(2, 1, nq, nk, generator=torch.Generator().manual_seed(1)) > 0.3) if masked else None
    out, _ = peer_fakes.on_cpu(flaggems.sdpa())(q, k, v, causal=causal, window=window, attn_mask=mask)
    call = fake.calls[-1]
    assert call["is_causal"] is False
    assert call["attn_mask"].dtype == torch.bool and call["attn_mask"].shape == (2, 4, nq, nk)
    assert_close_to_reference(out, peer_fakes.reference(q, k, v, causal=causal, window=window, attn_mask=mask)[0], q)


def test_sdpa_gradients_reach_the_library_contiguous(fake):
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()
               for t in peer_fakes.inputs(2, 5, 7, 4, 2, 16))
    out, _ = peer_fakes.on_cpu(flaggems.sdpa())(q, k, v, window=(1, 1))
    call = fake.calls[-1]
    assert all(call[name].is_contiguous() for name in "qkv")
    out.float().sum().backward()  # the fake asserts a contiguous output gradient, as FlagGems does
    expected = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    peer_fakes.reference(*expected, window=(1, 1))[0].float().sum().backward()
    for got, want in zip((q, k, v), expected):
        torch.testing.assert_close(got.grad, want.grad)


def test_sdpa_hands_strided_inputs_over_as_views_without_gradients(fake):
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 16)
    peer_fakes.on_cpu(flaggems.sdpa())(q, k, v)
    assert fake.calls[-1]["q"].data_ptr() == q.data_ptr() and not fake.calls[-1]["q"].is_contiguous()


@pytest.mark.parametrize("d", [8, 48, 96])
def test_sdpa_declines_head_dims_outside_16_32_64_128_256(d):
    with pytest.raises(NotImplementedError, match=f"head dim {d}"):
        peer_fakes.on_cpu(flaggems.sdpa())(*peer_fakes.inputs(1, 4, 4, 2, 2, d))


# ------------------------------------------------------------- flaggems-flash


@pytest.mark.parametrize("causal, window", [(False, (-1, -1)), (True, (-1, -1)), (False, (3, 0)), (True, (2, -1)),
                                            (False, (1, 2))])
def test_flash_passes_fa2_s_window_ints_and_returns_lse_b_h_nq(fake, causal, window):
    q, k, v = peer_fakes.inputs(2, 7, 11, 4, 2, 32)
    out, lse = peer_fakes.on_cpu(flaggems.flash())(q, k, v, causal=causal, window=window)
    call = fake.calls[-1]
    assert (call["cu_q"], call["cu_k"], call["max_q"], call["max_k"]) == (None, None, 7, 11)
    assert call["is_causal"] is causal and call["dropout_p"] == 0.0
    assert (call["window_size_left"], call["window_size_right"]) == (window[0], 0 if causal else window[1])
    expected_out, expected_lse = peer_fakes.reference(q, k, v, causal=causal, window=window)
    assert_close_to_reference(out, expected_out, q)
    assert lse.shape == (2, 4, 7) and lse.dtype == torch.float32
    torch.testing.assert_close(lse, expected_lse)


def test_flash_copies_an_input_whose_last_dimension_is_strided_and_nothing_else(fake):
    q, k, v = peer_fakes.inputs(1, 4, 4, 2, 2, 32)
    strided = torch.randn(1, 4, 2, 64).to(q.dtype)[..., ::2]
    peer_fakes.on_cpu(flaggems.flash())(strided, k.transpose(1, 2).contiguous().transpose(1, 2), v)
    call = fake.calls[-1]
    assert call["q"].stride(-1) == 1 and call["q"].data_ptr() != strided.data_ptr()
    assert call["v"] is v and call["k"].stride() != call["k"].contiguous().stride()


@pytest.mark.parametrize("d", [16, 8, 48, 264])
def test_flash_declines_head_dims_outside_its_asserts(d):
    with pytest.raises(NotImplementedError, match=f"head dim {d}"):
        peer_fakes.on_cpu(flaggems.flash())(*peer_fakes.inputs(1, 4, 4, 2, 2, d))


def test_flash_and_varlen_are_forward_only_half_precision(fake):
    for impl in (flaggems.flash(), flaggems.varlen()):
        impl = peer_fakes.on_cpu(impl)
        with pytest.raises(NotImplementedError, match="gradients"):
            impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 32, requires_grad=True))
        with pytest.raises(NotImplementedError, match="float32"):
            impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 32, dtype=torch.float32))


# ------------------------------------------------------------- flaggems-varlen


def test_paged_keys_are_pages_of_one_token_in_sequence_order():
    k = torch.arange(2 * 6 * 3, dtype=torch.float32).reshape(6, 2, 3)
    cu_k = torch.tensor([0, 2, 2, 6], dtype=torch.int32)
    k_cache, v_cache, table, seqused = flaggems_call.paged_keys(k, k.clone(), cu_k, 4)
    assert k_cache.shape == (6, 1, 2, 3) and k_cache.stride() == v_cache.stride()
    assert table.dtype == torch.int32 and seqused.dtype == torch.int32
    assert seqused.tolist() == [2, 0, 4]
    assert table[0, :2].tolist() == [0, 1] and table[2].tolist() == [2, 3, 4, 5]
    assert int(table.max()) <= 5, "entries past a sequence's end stay valid pages"


def test_varlen_reads_the_packed_keys_through_the_page_table(fake):
    q, k, v, packed = peer_fakes.packed_inputs([(3, 5), (0, 2), (4, 1), (2, 0), (1, 3)], 4, 2, 16)
    out, lse = peer_fakes.on_cpu(flaggems.varlen())(q, k, v, causal=True, window=(2, -1), **packed)
    call = fake.calls[-1]
    assert call["cu_seqlens_k"] is None and call["cu_seqlens_q"] is packed["cu_seqlens_q"]
    assert call["seqused_k"].tolist() == [5, 2, 1, 0, 3] and call["return_softmax_lse"] is True
    assert call["window_size"] == (2, 0) and call["causal"] is True
    expected_out, expected_lse = peer_fakes.packed_reference(q, k, v, causal=True, window=(2, -1), **packed)
    assert_close_to_reference(out, expected_out, q)
    assert lse.shape == (4, q.shape[0])
    torch.testing.assert_close(lse, expected_lse)


def test_varlen_runs_a_dense_batch_as_one_sequence_per_batch_entry(fake):
    q, k, v = peer_fakes.inputs(2, 5, 3, 4, 4, 24, dtype=torch.bfloat16)
    out, lse = peer_fakes.on_cpu(flaggems.varlen())(q, k, v, window=(1, 1))
    expected_out, expected_lse = peer_fakes.reference(q, k, v, window=(1, 1))
    assert_close_to_reference(out, expected_out, q)
    torch.testing.assert_close(lse, expected_lse)


@pytest.mark.parametrize("d", [12, 264])
def test_varlen_declines_head_dims_not_a_multiple_of_8_or_above_256(d):
    with pytest.raises(NotImplementedError, match=f"head dim {d}"):
        peer_fakes.on_cpu(flaggems.varlen())(*peer_fakes.inputs(1, 4, 4, 2, 2, d))


def test_sdpa_gradients_reach_the_library_with_its_inputs_strides_also_for_one_query(fake):
    # Found by fuzzing the adapter against the fake: with one query, torch calls a transposed
    # gradient contiguous although its strides differ from q's, which FlagGems asserts equal.
    q, k, v = (t.requires_grad_() for t in peer_fakes.inputs(1, 1, 64, 8, 4, 32))
    out, _ = peer_fakes.on_cpu(flaggems.sdpa())(q, k, v, causal=True)
    out.float().sum().backward()
    assert q.grad is not None and fake.calls[-1]["q"].stride() == torch.empty(1, 8, 1, 32).stride()


def test_the_survey_s_findings_are_declared_confined_to_the_cases_they_cover():
    from flashcheck.cases.case import Case

    base = "batch=1 heads=4 kv_heads=2 head_dim=64 dtype=float16 causal=True seed=0"
    keyless_rows = Case.from_spec(f"seqlen_q=21 seqlen_k=5 {base}")  # bottom-right causal, Nq > Nk
    negative = Case.from_spec(f"seqlen_q=5 seqlen_k=21 {base} softmax_scale=-1.0")
    ordinary = Case.from_spec(f"seqlen_q=5 seqlen_k=21 {base}")
    for adapter in (flaggems.flash(), flaggems.varlen()):
        for name, divergence in adapter.flashcheck_known_divergences.items():
            assert divergence.explains(keyless_rows) and divergence.explains(negative)
            # layout_invariance compares a contiguous case with padded views, which the flash kernel misreads.
            relaid = (adapter.name, name) == ("flaggems-flash", "layout_invariance")
            assert divergence.explains(ordinary) is relaid, (adapter.name, name)
    masked = Case.from_spec(f"seqlen_q=5 seqlen_k=21 {base} window=3,-1")
    forward = {name: divergence for name, divergence in flaggems.sdpa().flashcheck_known_divergences.items()
               if name not in gradient_properties()}
    assert "out_matches_reference" in forward
    for name, divergence in forward.items():
        assert divergence.explains(masked) and divergence.explains(keyless_rows), "a boolean mask reaches the call"
        assert divergence.explains(Case.from_spec(f"seqlen_q=21 seqlen_k=21 {base} layout=mixed")), "v's strides"
        if name in ("mask_equal_to_band_matches_flag", "masked_keys_with_huge_logits_change_nothing"):
            continue  # plain causal declared there too (the tests below)
        assert not divergence.explains(Case.from_spec(f"seqlen_q=21 seqlen_k=21 {base}")), "plain causal: is_causal"
        assert not divergence.explains(Case.from_spec(f"seqlen_q=21 seqlen_k=21 {base} layout=padded"))


def test_the_sdpa_values_read_with_the_keys_strides_are_declared_where_the_offsets_differ():
    from flashcheck.cases.case import Case

    known = flaggems.SDPA_VALUE_STRIDES

    def mixed(batch, heads, kv_heads, layout="mixed"):
        return Case.from_spec(f"batch={batch} seqlen_q=64 seqlen_k=64 heads={heads} kv_heads={kv_heads} "
                              f"head_dim=64 dtype=float16 layout={layout} seed=0")

    assert known.explains(mixed(2, 2, 1)) and known.explains(mixed(1, 4, 2))
    # One batch entry and one KV head: the misread offsets are 0 (measured right on an H100).
    assert not known.explains(mixed(1, 2, 1))
    assert not known.explains(mixed(2, 4, 2, layout="padded")), "k and v share their strides"


def test_the_sdpa_backward_is_declared_on_every_case_of_the_gradient_properties_and_only_there():
    from flashcheck.cases.case import Case

    known = flaggems.sdpa().flashcheck_known_divergences
    plain = Case.from_spec("batch=1 seqlen_q=128 seqlen_k=128 heads=1 kv_heads=1 head_dim=64 dtype=float16 seed=0")
    # Every property that runs the backward, those that only use it where declared included.
    assert {"grads_match_reference", "varlen_matches_separate_calls", "nan_padding_never_leaks",
            "repeated_calls_do_not_grow_memory"} <= set(gradient_properties())
    assert "out_matches_reference" not in gradient_properties()
    assert all(known[name].explains(plain) for name in gradient_properties())
    assert not known["out_matches_reference"].explains(plain)
    # Its fault too, so that a campaign replaces the process it ends without a finding; no other error.
    for fault in ("CUDA error: an illegal memory access was encountered",
                  "CUDA error: an illegal instruction was encountered"):
        assert all(known[name].explains(plain, raised=True, message=fault) for name in gradient_properties())
        assert not known["out_matches_reference"].explains(plain, raised=True, message=fault)
    assert not known["grads_match_reference"].explains(plain, raised=True, message="CUDA out of memory")


def test_the_sdpa_backward_s_shared_memory_refusal_is_declared_in_float32_at_head_dim_256_alone():
    from flashcheck.cases.case import Case

    known = flaggems.sdpa().flashcheck_known_divergences
    # A campaign's case on the H100 (empty_rows_get_zero_dq, its backward raised).
    wide = Case.from_spec("batch=1 seqlen_q=1 seqlen_k=254 heads=16 kv_heads=4 head_dim=256 dtype=float32 "
                          "causal=False window=-1,2 layout=mixed values=small seed=65929049")
    refusal = "OutOfResources: out of resource: shared memory, Required: 591360, Hardware limit: 232448."
    assert all(known[name].explains(wide, raised=True, message=refusal) for name in gradient_properties())
    assert not known["grads_match_reference"].explains(wide.replace(head_dim=128), raised=True, message=refusal)
    assert not known["grads_match_reference"].explains(wide.replace(dtype="bfloat16"), raised=True, message=refusal)
    assert not known["out_matches_reference"].explains(wide, raised=True, message=refusal), "the forward runs it"


def test_the_flash_kernel_s_misread_strides_are_declared_where_they_were_measured():
    from flashcheck.cases.case import Case

    def case(nq, nk, heads, layout, kv_heads=1, head_dim=32, causal=False):
        return Case.from_spec(f"batch=1 seqlen_q={nq} seqlen_k={nk} heads={heads} kv_heads={kv_heads} "
                              f"head_dim={head_dim} dtype=float16 layout={layout} causal={causal} seed=0")

    known = flaggems.flash().flashcheck_known_divergences["out_matches_reference"]
    for wrong in (case(64, 129, 7, "contiguous"), case(1, 129, 7, "heads-first", kv_heads=7), case(1, 1, 1, "padded"),
                  case(2, 2, 1, "mixed"), case(1, 129, 7, "contiguous", kv_heads=7, head_dim=64),
                  case(1, 128, 7, "contiguous", kv_heads=7, head_dim=128)):
        assert known.explains(wrong), wrong.spec()
    # Causal with one query reaches mha_fwd with a right side of 0, which it does not swap: wrong as
    # any other one query (measured in heads-first storage on an H100).
    assert known.explains(case(1, 129, 7, "contiguous", causal=True))
    assert known.explains(case(1, 129, 7, "heads-first", causal=True))
    # One query: 128 keys right at head dims 32 and 64 (one split-KV split); GQA without a band swaps
    # the query groups into the sequence axis, right at 129 keys in both storages.
    for right in (case(64, 129, 7, "heads-first"), case(256, 256, 1, "contiguous"), case(1, 64, 7, "contiguous"),
                  case(1, 128, 7, "heads-first", kv_heads=7), case(1, 128, 7, "contiguous", kv_heads=7, head_dim=64),
                  case(1, 129, 7, "heads-first"), case(1, 129, 7, "contiguous", head_dim=128)):
        assert not known.explains(right), right.spec()


def test_layout_invariance_of_the_flash_kernel_declares_the_misread_storage_it_compares_a_case_with():
    from flashcheck.cases.case import Case

    known = flaggems.flash().flashcheck_known_divergences["layout_invariance"]
    spec = "batch=1 seqlen_q=33 seqlen_k=533 heads=4 kv_heads=4 head_dim=32 dtype=float16 seed=0"
    assert known.explains(Case.from_spec(f"{spec} layout=heads-first")), "compared with contiguous: misread"
    assert not known.explains(Case.from_spec(spec.replace("heads=4 kv_heads=4", "heads=1 kv_heads=1")
                                             + " layout=heads-first")), "one head: both storages read right"


def test_the_varlen_kernel_s_compile_failure_at_head_dim_8_is_declared_as_that_error_alone():
    from flashcheck.cases.case import Case

    known = flaggems.varlen().flashcheck_known_divergences["out_matches_reference"]
    spec = "batch=1 seqlen_q=4 seqlen_k=4 heads=2 kv_heads=1 dtype=float16 seed=0"
    error = "at 214:12: gV = tl.make_block_ptr(base=v_ptr_seq, ..."
    assert known.explains(Case.from_spec(f"{spec} head_dim=8"), raised=True, message=error)
    assert not known.explains(Case.from_spec(f"{spec} head_dim=16"), raised=True, message=error)
    assert not known.explains(Case.from_spec(f"{spec} head_dim=8"), raised=True, message="CUDA out of memory")


def test_the_flash_kernel_s_windows_are_declared_wrong_where_they_were_measured_and_right_elsewhere():
    from flashcheck.cases.case import Case

    def case(nq, nk, window, causal=False):
        return Case.from_spec(f"batch=1 seqlen_q={nq} seqlen_k={nk} heads=1 kv_heads=1 head_dim=64 dtype=float16 "
                              f"causal={causal} window={window} layout=heads-first seed=0")

    known = flaggems.FLASH_WINDOWS
    # docs/repros/flaggems_flash_windows.py: one unbounded side (a side as long as the keys counts) at any
    # length; both sides bounded beyond the first 128 queries. (Plain causal is another finding.)
    for wrong in (case(31, 31, "4,-1"), case(31, 31, "-1,4"), case(20, 50, "-1,4"), case(31, 31, "12,31"),
                  case(50, 20, "30,30"), case(200, 200, "4,4"), case(200, 200, "0,0"), case(200, 200, "4,-1", True)):
        assert known.explains(wrong), wrong.spec()
    for right in (case(31, 31, "4,4"), case(31, 31, "4,0"), case(20, 50, "4,4"), case(31, 31, "4,-1", True),
                  case(31, 31, "30,30"), case(200, 200, "-1,-1", True), case(200, 200, "-1,-1")):
        assert not known.explains(right), right.spec()
    # A one-sided window runs without a band: wrong exactly where its side hides a key. (30, -1) with 31
    # queries and keys hides none (measured right on an H100); (29, -1) hides key 0 from the last row.
    assert not known.explains(case(31, 31, "30,-1")) and known.explains(case(31, 31, "29,-1"))
    assert not known.explains(case(20, 31, "-1,19")) and known.explains(case(20, 31, "-1,18"))
    # One query: the adapter passes causal folded in as a right side of 0, so a left side with it is a
    # bounded local window, whatever mha_fwd does with the causal flag (measured right on an H100).
    assert not known.explains(case(1, 31, "4,-1", True)) and not known.explains(case(1, 31, "30,-1", True))
    assert known.explains(case(1, 31, "4,-1"))
    # docs/repros/flaggems_flash_window_blocks.py: bounded windows past the first block are wrong only
    # where the queries leave a 128-query block part filled.
    for nq, nk in ((129, 129), (300, 300), (200, 384)):
        for window, causal in (("4,4", False), ("0,0", False), ("30,30", False), ("4,-1", True)):
            assert known.explains(case(nq, nk, window, causal)), (nq, nk, window)
    for nq, nk in ((256, 256), (384, 384), (512, 512), (256, 384)):
        for window, causal in (("4,4", False), ("0,0", False), ("30,30", False), ("4,-1", True)):
            assert not known.explains(case(nq, nk, window, causal)), (nq, nk, window)


def test_the_flash_kernel_s_causal_rows_cut_short_are_declared_where_the_queries_leave_a_block_part_filled():
    from flashcheck.cases.case import Case

    def case(nq, nk, causal=True, window="-1,-1"):
        return Case.from_spec(f"batch=1 seqlen_q={nq} seqlen_k={nk} heads=1 kv_heads=1 head_dim=256 dtype=float16 "
                              f"causal={causal} window={window} layout=heads-first seed=0")

    known = flaggems.flash().flashcheck_known_divergences["lse_matches_reference"]
    # docs/repros/flaggems_flash_causal_blocks.py, flash_fwd_kernel under its 128 x 32 configurations.
    for wrong in (case(307, 307), case(300, 300), case(129, 129), case(200, 200), case(200, 307)):
        assert flaggems.FLASH_CAUSAL_KEYS_CUT.explains(wrong) and known.explains(wrong), wrong.spec()
    for right in (case(128, 128), case(256, 256), case(1024, 1024), case(100, 307), case(307, 307, causal=False)):
        assert not known.explains(right), right.spec()
    # 250 queries stop 6 keys early, which the 32-key rounding gives back.
    assert not flaggems.FLASH_CAUSAL_KEYS_CUT.explains(case(250, 250))
    # A window is another finding's (FLASH_WINDOWS), not this one's.
    assert not flaggems.FLASH_CAUSAL_KEYS_CUT.explains(case(307, 307, window="4,-1"))
    # mha_fwd drops a side as long as the keys and runs a band of (-1, 0) as plain causal, whatever
    # the causal flag: those cases are this finding's, and not FLASH_WINDOWS'.
    for plain_causal in (case(300, 300, window="300,-1"), case(300, 300, causal=False, window="-1,0"),
                         case(300, 300, causal=False, window="400,0")):
        assert flaggems.FLASH_CAUSAL_KEYS_CUT.explains(plain_causal) and known.explains(plain_causal), plain_causal.spec()
        assert not flaggems.FLASH_WINDOWS.explains(plain_causal), plain_causal.spec()
    for right in (case(256, 256, window="256,-1"), case(256, 256, causal=False, window="-1,0")):
        assert not known.explains(right), right.spec()


def test_the_sdpa_kernel_s_negative_scale_is_declared_where_the_keys_leave_a_key_block_part_filled():
    from flashcheck.cases.case import Case

    def case(nk, scale):
        return Case.from_spec(f"batch=1 seqlen_q=1 seqlen_k={nk} heads=7 kv_heads=1 head_dim=64 dtype=float16 "
                              f"softmax_scale={scale} layout=contiguous seed=0")

    known = flaggems.sdpa().flashcheck_known_divergences["out_matches_reference"]
    # docs/repros/flaggems_sdpa_negative_scale.py: NaN at 395, 392, 1, 17, 129 keys; right at 384, 128, 1024.
    for nk in (395, 392, 1, 17, 129):
        assert known.explains(case(nk, -1.0)) and known.explains(case(nk, -0.001)), nk
        assert not known.explains(case(nk, 0.125)), nk
    for nk in (128, 1024):
        assert not known.explains(case(nk, -1.0)), nk
    assert not known.explains(case(395, 0.125).replace(layout="heads-first")), "a positive scale is checked"


def test_the_varlen_kernel_s_one_sided_windows_are_declared_wrong_where_they_were_measured_and_right_elsewhere():
    from flashcheck.cases.case import Case

    fields = dict(heads=8, kv_heads=2, head_dim=64, dtype="float16", seed=0)
    known = flaggems.varlen().flashcheck_known_divergences["out_matches_reference"]
    # docs/repros/flaggems_varlen_windows.py, packed and paged alike: a right side alone (or (-1, 0)
    # without the causal flag) is ignored, a left side alone hides the keys from the diagonal on.
    for seqlens in (((5, 5), (17, 17), (40, 40)), ((30, 50), (200, 200))):
        def case(window, causal=False):
            return Case.packed(seqlens, window=window, causal=causal, **fields)

        for wrong in (case((-1, 2)), case((-1, 0)), case((3, -1))):
            assert known.explains(wrong), wrong.spec()
        for right in (case((-1, -1)), case((-1, -1), True), case((2, 2)), case((4, -1), True)):
            assert not known.explains(right), right.spec()
    # A right side that hides no key of any query is not a wrong window: one query a sequence.
    assert not known.explains(Case.packed(((1, 9), (1, 4)), window=(-1, 0), **fields))
    # A side the longest key length long is dropped, so a bounded left side meets an unbounded right.
    assert known.explains(Case.packed(((4, 4), (6, 6)), window=(2, 6), **fields))
    # A right side the longest key length long is dropped, yet with more queries than keys it hid keys.
    for seqlens, window in ((((63, 17),), (55, 46)), (((63, 17),), (-1, 20)), (((40, 10), (5, 5)), (-1, 12))):
        assert known.explains(Case.packed(seqlens, window=window, **fields)), (seqlens, window)
    assert not known.explains(Case.packed(((30, 30),), window=(-1, 40), **fields))
    # A dense batch runs as one sequence per entry.
    dense = Case.from_spec("batch=2 seqlen_q=31 seqlen_k=31 heads=2 kv_heads=1 head_dim=64 dtype=float16 seed=0")
    assert known.explains(dense.replace(window=(-1, 4))) and not known.explains(dense.replace(window=(4, 4)))


def test_the_varlen_kernel_s_windows_are_declared_on_separate_calls_where_a_sequence_alone_drops_a_side():
    from flashcheck.cases.case import Case

    fields = dict(heads=5, kv_heads=5, head_dim=136, dtype="bfloat16", seed=0)
    separate = flaggems.varlen().flashcheck_known_divergences["varlen_matches_separate_calls"]
    # A campaign's case: (3, 1) is kept for the packed call (896 keys at most), while the last
    # sequence alone (3 keys) drops its left side and runs a right side alone.
    lead = Case.packed(((180, 180), (896, 896), (0, 2), (3, 3)), window=(3, 1), **fields)
    assert separate.explains(lead)
    assert not flaggems.varlen().flashcheck_known_divergences["out_matches_reference"].explains(lead)
    # No sequence whose own key length reaches a side: nothing dropped alone either.
    assert not separate.explains(Case.packed(((180, 180), (896, 896), (5, 5)), window=(3, 1), **fields))
    assert not separate.explains(Case.packed(((180, 180), (3, 3)), window=(-1, -1), **fields))


def test_the_flash_kernel_s_value_strides_are_declared_on_the_layout_whose_values_are_strided_unlike_its_keys():
    from flashcheck.cases.case import Case

    known = flaggems.flash().flashcheck_known_divergences["value_linearity"]
    spec = "batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=64 dtype=bfloat16 seed=0"
    assert flaggems.FLASH_VALUE_STRIDES.explains(Case.from_spec(f"{spec} layout=mixed"))
    assert not known.explains(Case.from_spec(f"{spec} layout=heads-first"))


def test_the_flash_kernel_s_reused_autotuning_is_declared_as_out_of_resources_at_the_head_dims_it_reaches():
    from flashcheck.cases.case import Case

    known = flaggems.flash().flashcheck_known_divergences["out_matches_reference"]
    spec = "batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 dtype=bfloat16 layout=heads-first seed=0"
    error = "OutOfResources: out of resource: shared memory, Required: 589824, Hardware limit: 232448."
    for d in (96, 128, 192, 256):  # 96: its tiles are padded to 128 columns, asking what 128 asks
        case = Case.from_spec(f"{spec} head_dim={d}")
        assert known.explains(case, raised=True, message=error)
        assert not known.explains(case), "the error alone: a wrong result at these head dims is another finding"
        assert not known.explains(case, raised=True, message="CUDA out of memory")
    for d in (32, 64):
        assert not known.explains(Case.from_spec(f"{spec} head_dim={d}"), raised=True, message=error)


def test_the_varlen_kernel_s_query_group_swap_is_declared_where_it_was_measured():
    from flashcheck.cases.case import Case

    known = flaggems.varlen().flashcheck_known_divergences["lse_matches_reference"]

    def case(seqlens, heads, kv_heads, **fields):
        return Case.packed(seqlens, heads=heads, kv_heads=kv_heads, head_dim=64, dtype="float16", seed=0, **fields)

    # docs/repros/flaggems_varlen_edges.py: lse wrong with several one-query sequences under GQA ...
    for wrong in (case(((1, 5), (1, 9)), 8, 2), case(((1, 5), (1, 9), (1, 3)), 7, 1)):
        assert known.explains(wrong), wrong.spec()
    # ... right with one sequence, without GQA, or with a window that survives the drop.
    for right in (case(((1, 5),), 8, 2), case(((1, 5), (1, 9)), 2, 2), case(((1, 5), (1, 9)), 8, 2, window=(2, 2))):
        assert not known.explains(right), right.spec()
    dense = Case.from_spec("batch=2 seqlen_q=1 seqlen_k=1 heads=7 kv_heads=1 head_dim=112 dtype=float16 seed=0 "
                           "window=55,46")  # the campaign's case: both sides dropped
    assert known.explains(dense)
    # A sequence without a query: the swap's reshape raises, that error alone.
    reshape = "RuntimeError: shape '[2, 2, 4, 64]' is invalid for input of size 512"
    empty = case(((1, 5), (0, 3)), 8, 2)
    assert known.explains(empty, raised=True, message=reshape)
    assert not known.explains(case(((1, 5), (0, 3)), 2, 2), raised=True, message=reshape)


def test_a_band_handed_as_a_mask_beside_a_plain_causal_call_is_declared_inverted_and_only_there():
    from flashcheck.cases.case import Case

    known = flaggems.sdpa().flashcheck_known_divergences["mask_equal_to_band_matches_flag"]
    causal_square = Case.from_spec("batch=1 seqlen_q=1 seqlen_k=1 heads=1 kv_heads=1 head_dim=64 dtype=float16 "
                                   "causal=True seed=0")
    assert known.explains(causal_square)  # its own call is_causal, the property's mask read inverted
    for both_masked in ("causal=True", "window=3,0"):  # both calls pass a mask, inverted alike: no cover needed
        case = Case.from_spec(f"batch=1 seqlen_q=5 seqlen_k=9 heads=1 kv_heads=1 head_dim=64 dtype=float16 "
                              f"{both_masked} seed=0")
        assert known.explains(case)  # declared through SDPA_MASK_INVERTED, on every property
    assert not flaggems.sdpa().flashcheck_known_divergences["key_shift_invariance"].explains(causal_square)


def test_huge_hidden_logits_are_declared_leaking_through_the_native_causal_band_and_only_there():
    from flashcheck.cases.case import Case

    known = flaggems.sdpa().flashcheck_known_divergences
    shape = "batch=1 heads=4 kv_heads=1 head_dim=32 dtype=bfloat16 seed=0"
    campaign = Case.from_spec(f"seqlen_q=65 seqlen_k=65 {shape} causal=True")  # the campaign's case
    assert known["masked_keys_with_huge_logits_change_nothing"].explains(campaign)
    # Only that property makes logits past the finite -1e6 the band adds.
    assert not known["out_matches_reference"].explains(campaign)
    assert not known["future_keys_cannot_change_output"].explains(campaign)
    # Hidden by a mask (a window, unequal lengths) the keys go as a boolean mask, declared inverted on every property.
    for masked in (f"seqlen_q=65 seqlen_k=65 {shape} window=3,0", f"seqlen_q=33 seqlen_k=65 {shape} causal=True"):
        assert known["out_matches_reference"].explains(Case.from_spec(masked))


def test_the_sdpa_call_pins_flaggems_sdpa_autotuners_and_the_flash_call_leaves_its_own(fake, monkeypatch):
    """FlagGems' SDPA autotuners (keyed on the key length) run pinned; the flash forward's
    (tuned once per head dim and process) runs as FlagGems tunes it (docs/peers.md)."""
    import types

    from flashcheck import autotune_pin
    from tests.test_autotune_pin import tuned

    forward, backward, flash_kernel = tuned(), tuned(), tuned()
    attention = types.ModuleType("flag_gems.ops.attention")
    attention._attn_fwd, attention._attn_bwd = types.SimpleNamespace(fn=forward), types.SimpleNamespace(fn=backward)
    attention.flash_fwd_kernel = flash_kernel
    fake.__path__ = []  # a package, so that flag_gems.ops.attention is importable below it
    monkeypatch.setitem(sys.modules, "flag_gems.ops.attention", attention)
    monkeypatch.setattr(autotune_pin, "_SEARCHED", set())
    q, k, v = peer_fakes.inputs(1, 6, 6, 2, 2, 32, dtype=torch.float16)
    peer_fakes.on_cpu(flaggems.flash())(q, k, v, causal=True)
    assert not any("run" in vars(tuner) for tuner in (forward, backward, flash_kernel))
    peer_fakes.on_cpu(flaggems.sdpa())(q, k, v, causal=True)
    assert "run" in vars(forward) and "run" in vars(backward) and "run" not in vars(flash_kernel)
