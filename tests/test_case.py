"""flashcheck.cases.case: validation, the one-line spec, and materialized tensors.

A Case is the reproducible description of a problem, so: every bad field is rejected with
an error naming it, ``from_spec(spec())`` gives back the same case, the same case gives
bitwise the same tensors every time (and on every device), layouts really have the memory
layout they claim, and each value distribution has the property it exists to test.
"""
from __future__ import annotations

import math

import pytest
import torch

from flashcheck.cases.case import DTYPES, LAYOUTS, VALUES, Case, Inputs

CUDA = torch.cuda.is_available()

# -- validation ----------------------------------------------------------------------------
BAD_FIELDS = [
    ("batch", dict(batch=-1)),
    ("batch", dict(batch=1.0)),
    ("batch", dict(batch=True)),
    ("seqlen_q", dict(seqlen_q=-1)),
    ("seqlen_q", dict(seqlen_q=None)),
    ("seqlen_k", dict(seqlen_k="3")),
    ("seqlen_k", dict(seqlen_k=-4)),
    ("heads", dict(heads=0)),
    ("kv_heads", dict(kv_heads=0)),
    ("head_dim", dict(head_dim=0)),
    ("head_dim", dict(head_dim=-3)),
    ("heads", dict(heads=3, kv_heads=2)),
    ("dtype", dict(dtype="float64")),
    ("dtype", dict(dtype=torch.float16)),
    ("causal", dict(causal=1)),
    ("causal", dict(causal="True")),
    ("window", dict(window=(3,))),
    ("window", dict(window=4)),
    ("window", dict(window=None)),
    ("window", dict(window=(1, 2, 3))),
    ("window", dict(window=(-2, 0))),
    ("window", dict(window=(1.0, 2))),
    ("window", dict(window=(True, 0))),
    ("window", dict(causal=True, window=(-1, 3))),
    ("softmax_scale", dict(softmax_scale=float("nan"))),
    ("softmax_scale", dict(softmax_scale=float("inf"))),
    ("softmax_scale", dict(softmax_scale="0.5")),
    ("softmax_scale", dict(softmax_scale=True)),
    ("layout", dict(layout="strided")),
    ("values", dict(values="uniform")),
    ("seed", dict(seed=-1)),
    ("seed", dict(seed=1.5)),
    ("seed", dict(seed=True)),
    ("seed", dict(seed=2**64)),
]


@pytest.mark.parametrize("field, changes", BAD_FIELDS, ids=[repr(c) for _, c in BAD_FIELDS])
def test_invalid_fields_are_rejected_naming_the_field(field, changes):
    with pytest.raises((TypeError, ValueError), match=rf"^{field}\b"):
        Case(**changes)


def test_valid_edge_values_are_accepted():
    Case(batch=0, seqlen_q=0, seqlen_k=0, heads=4, kv_heads=1, head_dim=1)
    Case(causal=True, window=(0, 0))
    Case(causal=True, window=[5, -1])
    Case(softmax_scale=-0.5)
    Case(softmax_scale=0.0)
    Case(softmax_scale=2)
    Case(seed=2**63)


def test_window_is_stored_as_a_tuple():
    case = Case(window=[2, 3])
    assert case.window == (2, 3) and isinstance(case.window, tuple)
    assert hash(case) == hash(Case(window=(2, 3)))


def test_derived_quantities():
    assert Case(head_dim=16).scale == 0.25
    assert Case(head_dim=16, softmax_scale=-0.7).scale == -0.7
    assert Case(causal=True).band == (-1, 0)
    assert Case(causal=True, window=(3, -1)).band == (3, 0)
    assert Case(seqlen_q=5, seqlen_k=3, causal=True).has_empty_rows
    assert not Case(seqlen_q=3, seqlen_k=5, causal=True).has_empty_rows
    assert Case(seqlen_q=5, seqlen_k=3, causal=True).keys_per_row().tolist() == [[[0, 0, 1, 2, 3]]]
    assert Case(causal=True, window=(1, 0), softmax_scale=0.5).attention_kwargs() == {
        "causal": True, "window": (1, 0), "softmax_scale": 0.5,
    }


# -- spec / from_spec ----------------------------------------------------------------------
ROUND_TRIP = [
    Case(),
    Case(batch=0, seqlen_q=0, seqlen_k=0),
    Case(batch=3, seqlen_q=17, seqlen_k=5, heads=8, kv_heads=2, head_dim=96, dtype="bfloat16"),
    Case(causal=True),
    Case(causal=True, window=(7, 0)),
    Case(causal=True, window=(4, -1)),
    Case(window=(0, 0)),
    Case(window=(-1, 12)),
    Case(softmax_scale=1 / 3),
    Case(softmax_scale=-0.125),
    Case(softmax_scale=0.0),
    Case(softmax_scale=1e-300),
    Case(softmax_scale=2),
    Case(dtype="float32", layout="padded", values="offset-logits", seed=2**40 + 1),
    Case(layout="heads-first", values="large-logits", seed=12345),
    *[Case(values=values) for values in VALUES],
    *[Case(layout=layout) for layout in LAYOUTS],
    *[Case(dtype=dtype) for dtype in DTYPES],
]


@pytest.mark.parametrize("case", ROUND_TRIP, ids=[c.spec() for c in ROUND_TRIP])
def test_spec_round_trips(case):
    text = case.spec()
    assert "\n" not in text
    parsed = Case.from_spec(text)
    assert parsed == case
    assert parsed.spec() == text
    assert parsed.scale == case.scale  # the scale in effect survives bit for bit


def test_from_spec_fills_in_defaults():
    assert Case.from_spec("") == Case()
    assert Case.from_spec("seqlen_q=3 causal=True window=2,0") == Case(seqlen_q=3, causal=True, window=(2, 0))


@pytest.mark.parametrize(
    "text",
    [
        "foo=1",
        "batch=1 colour=red",
        "batch",
        "=3",
        "causal=yes",
        "causal=1",
        "batch=x",
        "window=3",
        "softmax_scale=abc",
        "heads=3 kv_heads=2",  # parsed, then rejected by the constructor
        "dtype=float64",
    ],
)
def test_from_spec_rejects_bad_text(text):
    with pytest.raises(ValueError):
        Case.from_spec(text)


def test_from_spec_error_on_unknown_key_names_the_item():
    with pytest.raises(ValueError, match="colour"):
        Case.from_spec("batch=1 colour=red")


# -- materialize ----------------------------------------------------------------------------
def bits(tensor: torch.Tensor) -> torch.Tensor:
    """The raw bit patterns, so that -0.0 != 0.0 and NaN payloads count."""
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}
    return tensor.cpu().contiguous().view(ints[tensor.element_size()])


def assert_bitwise_equal(a: Inputs, b: Inputs):
    for name, x, y in zip(Inputs._fields, a, b):
        assert x.shape == y.shape and x.dtype == y.dtype and x.stride() == y.stride(), name
        assert torch.equal(bits(x), bits(y)), name


SMALL = dict(batch=2, seqlen_q=5, seqlen_k=7, heads=4, kv_heads=2, head_dim=8)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("values", VALUES)
def test_materialize_is_bitwise_reproducible(values, layout):
    case = Case(**SMALL, values=values, layout=layout, seed=17)
    assert_bitwise_equal(case.materialize(), case.materialize())
    # and from a case rebuilt from its spec, as a reproduction command would
    assert_bitwise_equal(case.materialize(), Case.from_spec(case.spec()).materialize())


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("values", VALUES)
def test_materialize_gives_the_same_bits_on_cuda(values):
    case = Case(**SMALL, values=values, layout="padded", seed=5)
    on_cpu, on_cuda = case.materialize("cpu"), case.materialize("cuda")
    assert all(t.device.type == "cuda" for t in on_cuda)
    assert_bitwise_equal(on_cpu, on_cuda)


def test_different_seeds_give_different_tensors():
    a, b = Case(**SMALL, seed=1).materialize(), Case(**SMALL, seed=2).materialize()
    assert not any(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("values", VALUES)
def test_layout_changes_memory_not_values(values):
    tensors = [Case(**SMALL, values=values, layout=layout).materialize() for layout in LAYOUTS]
    for other in tensors[1:]:
        for x, y in zip(tensors[0], other):
            assert torch.equal(bits(x), bits(y))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_materialized_shapes_dtypes_and_device(dtype, layout, device):
    case = Case(**SMALL, dtype=dtype, layout=layout)
    q, k, v = case.materialize(device)
    assert q.shape == (2, 5, 4, 8) and k.shape == v.shape == (2, 7, 2, 8)
    for t in (q, k, v):
        assert t.dtype == DTYPES[dtype] == case.torch_dtype
        assert t.device.type == device


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("values", VALUES)
def test_empty_dimensions_materialize(values, layout):
    q, k, v = Case(batch=1, seqlen_q=0, seqlen_k=0, heads=2, kv_heads=1, head_dim=4,
                   values=values, layout=layout).materialize()
    assert q.shape == (1, 0, 2, 4) and k.shape == v.shape == (1, 0, 1, 4)


def test_contiguous_layout_is_contiguous():
    assert all(t.is_contiguous() for t in Case(**SMALL).materialize())


def test_heads_first_layout_has_transposed_strides():
    """Stored (B, H, N, D), viewed (B, N, H, D): strides (H*N*D, D, N*D, 1)."""
    b, nq, nk, h, hkv, d = 2, 5, 7, 4, 2, 8
    q, k, v = Case(**SMALL, layout="heads-first").materialize()
    assert q.stride() == (h * nq * d, d, nq * d, 1)
    assert k.stride() == v.stride() == (hkv * nk * d, d, nk * d, 1)
    for t in (q, k, v):
        assert not t.is_contiguous()
        assert t.transpose(1, 2).is_contiguous()
        assert t.stride(1) < t.stride(2)  # the sequence stride is below the head stride


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_padded_layout_is_a_view_into_nan(dtype):
    for t in Case(**SMALL, dtype=dtype, layout="padded").materialize():
        base = t._base
        assert base is not None, "padded tensors must be views"
        assert all(bs > ts for bs, ts in zip(base.shape, t.shape)), "padded on every dimension"
        assert t.storage_offset() > 0
        assert t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        # The whole storage: the view's elements are finite, everything else NaN.
        storage = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
        assert storage.numel() == base.numel()
        assert torch.isfinite(t).all()
        assert int(storage.isnan().sum()) == storage.numel() - t.numel()
        assert torch.isnan(base).sum() == base.numel() - t.numel()


@pytest.mark.parametrize("shape", [dict(heads=1, kv_heads=1, head_dim=8), dict(heads=4, kv_heads=2, head_dim=1)])
@pytest.mark.parametrize("packed", [False, True])
def test_mixed_layout_gives_q_k_and_v_strides_of_their_own(shape, packed):
    """q heads-first, k padded, v padded wider: whatever the shapes (one head, head dim 1),
    no two share a sequence or head stride, so a kernel that reads one tensor with
    another's strides reads the wrong elements; the values are those of every layout."""
    case = (Case.packed(((3, 5), (2, 0)), **shape, layout="mixed") if packed
            else Case(batch=2, seqlen_q=5, seqlen_k=7, **shape, layout="mixed"))
    q, k, v = case.materialize()
    for t, contiguous in zip((q, k, v), case.replace(layout="contiguous").materialize()):
        assert torch.equal(t, contiguous)
    sequence_and_head = [t.stride()[-3:-1] for t in (q, k, v)]
    assert len({strides[0] for strides in sequence_and_head}) == 3
    assert len({strides[1] for strides in sequence_and_head}) == 3
    for t in (k, v):  # padded views into NaN
        storage = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
        assert int(storage.isnan().sum()) == storage.numel() - t.numel() > 0


# -- value distributions ---------------------------------------------------------------------
def logits(case: Case, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """float64 scale * q_i . k_j, shape (B, H, Nq, Nk), KV heads repeated per group."""
    group = case.heads // case.kv_heads
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(group, dim=1)
    return case.scale * (qd @ kd.transpose(-1, -2))


SHAPES = [
    dict(batch=1, seqlen_q=8, seqlen_k=8, heads=2, kv_heads=1, head_dim=16),
    dict(batch=2, seqlen_q=4, seqlen_k=9, heads=3, kv_heads=3, head_dim=64),
    dict(batch=1, seqlen_q=6, seqlen_k=6, heads=1, kv_heads=1, head_dim=1),
    dict(batch=1, seqlen_q=5, seqlen_k=6, heads=2, kv_heads=2, head_dim=128),
]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"D{s['head_dim']}")
@pytest.mark.parametrize("values", VALUES)
def test_every_distribution_is_finite_in_every_dtype(values, shape, dtype):
    for t in Case(**shape, values=values, dtype=dtype, seed=3).materialize():
        assert torch.isfinite(t).all()


@pytest.mark.parametrize("softmax_scale", [None, 0.5, -0.3])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"D{s['head_dim']}")
def test_large_logits_overflow_float32_exp(shape, dtype, softmax_scale):
    """|scale q.k| of order hundreds: exp of the largest would overflow float32 (> 88.7)."""
    case = Case(**shape, values="large-logits", dtype=dtype, softmax_scale=softmax_scale, seed=1)
    q, k, _ = case.materialize()
    magnitude = logits(case, q, k).abs()
    assert magnitude.max() > 88.8
    assert 30 < magnitude.median() < 2000
    assert torch.isinf(torch.exp(magnitude.max().float()))


@pytest.mark.parametrize("softmax_scale", [None, 0.5, 2.0, -0.3])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"D{s['head_dim']}")
def test_offset_logits_are_all_near_minus_two_e4(shape, dtype, softmax_scale):
    """Every logit is about -2e4 (within 5%), so a running max started at a finite
    sentinel above that underflows; the spread within a row stays ordinary."""
    case = Case(**shape, values="offset-logits", dtype=dtype, softmax_scale=softmax_scale, seed=2)
    q, k, _ = case.materialize()
    s = logits(case, q, k)
    assert (s > -2.1e4).all() and (s < -1.9e4).all(), (float(s.min()), float(s.max()))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"D{s['head_dim']}")
def test_constant_values_make_every_key_and_value_of_a_head_identical(shape):
    case = Case(**shape, values="constant", seed=4)
    q, k, v = case.materialize()
    for t in (k, v):
        assert torch.equal(t, t[:, :1].expand_as(t))
        # but heads and batches differ, or the case would be degenerate
        if t.shape[2] > 1:
            assert not torch.equal(t[:, :, 0], t[:, :, 1])
    assert not torch.equal(q, q[:, :1].expand_as(q))


def test_near_ties_keys_are_close_but_not_equal():
    q, k, _ = Case(**SMALL, values="near-ties", dtype="float32").materialize()
    spread = (k - k[:, :1]).abs()
    assert spread.max() < 0.02 and spread[:, 1:].gt(0).any()


def test_small_values_give_tiny_logits():
    case = Case(**SMALL, values="small", dtype="float32")
    q, k, _ = case.materialize()
    assert logits(case, q, k).abs().max() < 0.5
