"""Cases with a boolean attn_mask (``mask=``) or packed sequences (``seqlens=``): validation
naming the field, the one-line spec, reproducible tensors that leave q, k, v of the dense
case untouched, the padded packed layout, and the ``allowed`` mask with its row counts.

The allowed sets are checked against the protocol text written out as loops here, not
against flashcheck.cases.masks.
"""
from __future__ import annotations

import pytest
import torch

from flashcheck.cases import masks
from flashcheck.cases.case import TRAILING_TOKENS, Case
from flashcheck.cases.maskspec import MaskSpec

MASKS = [
    "random:0.3",
    "random:0.0",
    "random:1.0,rows:1,cols:2",
    "blocks:3:0.5",
    "blocks:2:0.7,shape:B1QK",
    "random:0.5,shape:1HQK",
    "random:0.5,shape:BH1K",
    "random:0.5,shape:QK",
    "random:0.5,shape:1K",
]


@pytest.mark.parametrize("text", MASKS)
def test_masked_cases_round_trip_and_keep_the_dense_inputs(text):
    case = Case(batch=2, seqlen_q=5, seqlen_k=7, heads=2, mask=text, seed=11)
    assert Case.from_spec(case.spec()) == case and Case.from_spec(case.spec()).spec() == case.spec()
    assert f"mask={text}" in case.spec()
    mask = case.attn_mask()
    assert mask.dtype == torch.bool and torch.equal(mask, case.attn_mask())  # reproducible
    spec = MaskSpec.parse(text)
    assert mask.shape == spec.tensor_shape(2, 2, 5, 7)
    unmasked = Case(batch=2, seqlen_q=5, seqlen_k=7, heads=2, seed=11).materialize()
    for got, expected in zip(case.materialize(), unmasked):
        assert torch.equal(got, expected)  # the mask draws from its own generator


def test_dense_specs_print_as_before():
    assert "mask=" not in Case().spec() and "seqlens=" not in Case().spec()


def test_mask_structure():
    rows_cols = Case(batch=2, seqlen_q=6, seqlen_k=8, heads=3, mask="random:1.0,rows:2,cols:3").attn_mask()
    assert ((~rows_cols).all(dim=-1).sum(dim=-1) == 2).all()  # two empty rows per (b, h)
    assert ((~rows_cols).all(dim=-2).sum(dim=-1) == 3).all()  # three masked columns per (b, h)
    blocks = Case(seqlen_q=6, seqlen_k=6, mask="blocks:3:0.5", seed=4).attn_mask()[0, 0]
    tiles = blocks.unflatten(0, (2, 3)).unflatten(2, (2, 3))
    assert (tiles.all(dim=(1, 3)) | (~tiles).all(dim=(1, 3))).all()  # each tile all or nothing
    assert not Case(mask="random:0.0").attn_mask().any() and Case(mask="random:1.0").attn_mask().all()
    padding = Case(batch=3, seqlen_q=2, seqlen_k=5, mask="key-padding:5/0/2").attn_mask()
    assert padding.shape == (3, 1, 1, 5)
    assert padding.sum(dim=-1).flatten().tolist() == [5, 0, 2]


BAD = [
    ("mask", dict(mask="triangle")),
    ("mask", dict(mask="random:1.5")),
    ("mask", dict(mask="random:x")),
    ("mask", dict(mask="blocks:0:0.5")),
    ("mask", dict(mask="random:0.5,shape:BHQ1")),
    ("mask", dict(mask="random:0.5,shape:XHQK")),
    ("mask", dict(mask="random:0.5,rows:1,shape:BH1K")),
    ("mask", dict(mask="random:0.5,rows:99")),
    ("mask", dict(mask="random:0.5,colour:1")),
    ("mask", dict(batch=2, mask="key-padding:3")),
    ("mask", dict(mask="key-padding:99")),
    ("mask", dict(mask=3)),
    ("seqlens", dict(seqlens=())),
    ("seqlens", dict(seqlens=((1, 2, 3),))),
    ("seqlens", dict(seqlens=((-1, 2),))),
    ("seqlen_q", dict(batch=1, seqlen_q=3, seqlen_k=5, seqlens=((2, 5),))),
    ("seqlen_k", dict(batch=1, seqlen_q=2, seqlen_k=4, seqlens=((2, 5),))),
    ("batch", dict(batch=2, seqlen_q=2, seqlen_k=5, seqlens=((2, 5),))),
    ("mask", dict(batch=1, seqlen_q=2, seqlen_k=5, seqlens=((2, 5),), mask="random:0.5")),
]


@pytest.mark.parametrize("field, changes", BAD, ids=[repr(c) for _, c in BAD])
def test_bad_mask_and_seqlens_fields_are_rejected_naming_the_field(field, changes):
    with pytest.raises((TypeError, ValueError), match=rf"^{field}\b"):
        Case(**changes)


@pytest.mark.parametrize("text", ["seqlens=3", "seqlens=a:b", "mask=random", "mask=blocks:2"])
def test_bad_spec_text_is_rejected(text):
    with pytest.raises(ValueError):
        Case.from_spec(text)


SEQLENS = [((3, 5), (0, 2), (1, 1), (4, 0), (2, 2)), ((1, 1),), ((0, 0), (5, 3))]


@pytest.mark.parametrize("layout", ["contiguous", "heads-first", "padded"])
@pytest.mark.parametrize("seqlens", SEQLENS, ids=str)
def test_packed_cases(seqlens, layout):
    case = Case.packed(seqlens, heads=4, kv_heads=2, head_dim=8, causal=True, layout=layout, seed=5)
    assert Case.from_spec(case.spec()) == case
    tq, tk = sum(a for a, _ in seqlens), sum(b for _, b in seqlens)
    q, k, v = case.materialize()
    assert q.shape == (tq, 4, 8) and k.shape == v.shape == (tk, 2, 8)
    dense = Case(batch=1, seqlen_q=tq, seqlen_k=tk, heads=4, kv_heads=2, head_dim=8, seed=5).materialize()
    for got, expected in zip((q, k, v), dense):
        assert torch.equal(got, expected[0])  # the values of the dense batch of one
    kwargs = case.attention_kwargs()
    assert kwargs["cu_seqlens_q"].dtype == torch.int32
    assert kwargs["cu_seqlens_q"].tolist()[-1] == tq and kwargs["cu_seqlens_k"].tolist()[-1] == tk
    assert kwargs["max_seqlen_q"] == max(a for a, _ in seqlens)
    assert kwargs["max_seqlen_k"] == max(b for _, b in seqlens)
    assert case.out_shape == (tq, 4, 8) and case.lse_shape == (4, tq)


def test_padded_packed_layout_has_nan_around_and_beyond_the_last_token():
    case = Case.packed(((3, 5), (2, 2)), heads=2, head_dim=4, layout="padded")
    for t in case.materialize():
        storage = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
        assert torch.isfinite(t).all()
        assert int(storage.isnan().sum()) == storage.numel() - t.numel()
        end = t.storage_offset() + (t.shape[0] - 1) * t.stride(0) + t.shape[1] * t.stride(1)
        assert storage[end:].isnan().all() and storage.numel() - end >= TRAILING_TOKENS * t.stride(0)


def protocol_allowed(seqlens, causal, window):
    """The document mask from the protocol text, by loops."""
    tq, tk = sum(a for a, _ in seqlens), sum(b for _, b in seqlens)
    left, right = window
    if causal:
        right = 0
    allowed = torch.zeros(tq, tk, dtype=torch.bool)
    q0 = k0 = 0
    for nq, nk in seqlens:
        for i in range(nq):
            for j in range(nk):
                lo_ok = left == -1 or i + nk - nq - left <= j
                hi_ok = right == -1 or j <= i + nk - nq + right
                allowed[q0 + i, k0 + j] = lo_ok and hi_ok
        q0, k0 = q0 + nq, k0 + nk
    return allowed


@pytest.mark.parametrize("causal, window", [(False, (-1, -1)), (True, (-1, -1)), (False, (1, 2)), (True, (2, -1))])
@pytest.mark.parametrize("seqlens", SEQLENS, ids=str)
def test_document_mask_follows_the_protocol(seqlens, causal, window):
    case = Case.packed(seqlens, causal=causal, window=window)
    expected = protocol_allowed(seqlens, causal, window)
    assert torch.equal(case.allowed()[0, 0], expected)
    assert torch.equal(case.keys_per_row()[0, 0], expected.sum(dim=-1))
    assert case.has_empty_rows == bool((expected.sum(dim=-1) == 0).any())


def test_allowed_of_a_masked_case_is_band_and_mask():
    case = Case(batch=2, seqlen_q=6, seqlen_k=4, heads=3, causal=True, mask="random:0.6,shape:B1QK", seed=9)
    band = masks.band(torch.arange(6), 6, 4, -1, 0)
    expected = band & case.attn_mask()
    assert torch.equal(case.allowed(), expected)
    assert torch.equal(case.keys_per_row(), expected.sum(dim=-1))
    assert case.is_masked and case.has_empty_rows  # causal with Nq > Nk empties rows
    assert not Case(mask="random:1.0").is_masked and Case(mask="random:1.0,cols:1").is_masked
    assert not Case.packed(((4, 4),)).is_masked and Case.packed(((2, 2), (2, 2))).is_masked


def test_bad_cu_seqlens_are_rejected_naming_the_argument():
    good = torch.tensor([0, 2, 5], dtype=torch.int32)
    for bad, name in [
        (torch.tensor([0, 2, 5]), "cu_seqlens_q"),  # int64
        (torch.tensor([1, 2, 5], dtype=torch.int32), "cu_seqlens_q"),
        (torch.tensor([0, 4, 3, 5], dtype=torch.int32), "cu_seqlens_q"),
        (torch.tensor([0, 2, 6], dtype=torch.int32), "cu_seqlens_q"),
    ]:
        with pytest.raises((TypeError, ValueError), match=name):
            masks.allowed(5, 5, cu_seqlens_q=bad, cu_seqlens_k=good)
    with pytest.raises(ValueError, match="cu_seqlens_k"):
        masks.allowed(5, 5, cu_seqlens_q=good, cu_seqlens_k=torch.tensor([0, 5], dtype=torch.int32))
