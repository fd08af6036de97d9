"""Packed variable-length sequences and boolean masks in the project kernel.

Checked against the kernel's own dense path (varlen must equal one dense call per
sequence, bitwise: a sequence's programs run the same tiles in the same order as a dense
call on its tokens) and against a float64 masked attention written out below. The checks
are plain functions of an implementation (or of raw launchers) so that the planted bugs of
``tests/support/mutants.py`` are shown to be caught by the very checks the correct kernel passes.
Sizes are small (a few dozen tokens; 32 x 16 blocks in the interpreter, so several blocks
per sequence).
"""

from __future__ import annotations

import math

import pytest
import torch

from flashcheck.kernels import backward, config, flash_attention, forward

from tests.support import mutants
from tests.support.witness import allowed_matrix as band

DTYPES = [torch.float16, torch.bfloat16, torch.float32]

#: Where the kernel runs: a GPU when there is one, else the CPU interpreter. Tensors are
#: drawn on the CPU from seeded generators and moved, so both see the same inputs.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(autouse=True)
def _tensors_on_the_kernel_device():
    """Factory calls below that name no device (buffers, masks, offsets) make tensors on DEVICE."""
    with torch.device(DEVICE):
        yield


# -- float64 reference ----------------------------------------------------------------------
def reference(q, k, v, *, causal=False, window=(-1, -1), attn_mask=None, softmax_scale=None):
    """Dense float64 attention with explicit masks, differentiable; rows with no allowed key
    give out 0, lse -inf and zero gradient."""
    batch, nq, heads, dim = q.shape
    nk, kv_heads = k.shape[1], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    q, k, v = q.double(), k.double(), v.double()
    k = k.repeat_interleave(heads // kv_heads, dim=2)
    v = v.repeat_interleave(heads // kv_heads, dim=2)
    allowed = band(nq, nk, causal, window).to(q.device).expand(batch, heads, nq, nk)
    if attn_mask is not None:
        allowed = allowed & attn_mask
    s = torch.einsum("bihd,bjhd->bhij", q, k) * scale
    s = s.masked_fill(~allowed, -math.inf)
    m = s.amax(-1, keepdim=True).detach()
    m = torch.where(torch.isinf(m), 0.0, m)
    p = torch.exp(s - m)
    total = p.sum(-1, keepdim=True)
    empty = total == 0
    total = torch.where(empty, 1.0, total)
    out = torch.einsum("bhij,bjhd->bihd", p / total, v)
    lse = torch.where(empty, -math.inf, m + torch.log(total)).squeeze(-1)
    return out, lse


# -- helpers ----------------------------------------------------------------------------------
def randn(*shape, dtype, generator, scale=1.0):
    return (torch.randn(*shape, generator=generator, device="cpu") * scale).to(dtype).to(DEVICE)


def offsets(lengths):
    return torch.tensor([0, *torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()], dtype=torch.int32)


def padded(tensor, pad, fill=math.nan):
    """``tensor`` copied into the middle of a larger buffer filled with ``fill`` (``pad``
    extra on both sides of every dim); returns the view, so reading past it reads ``fill``."""
    buffer = torch.full([s + 2 * pad for s in tensor.shape], fill, dtype=tensor.dtype)
    view = buffer[tuple(slice(pad, pad + s) for s in tensor.shape)]
    view.copy_(tensor)
    return view


def gradients(attention, q, k, v, grad_out, grad_lse, **kwargs):
    """out, lse and (dq, dk, dv) of ``attention`` by autograd, upstream (grad_out, grad_lse)."""
    q, k, v = (x.detach().requires_grad_(True) for x in (q, k, v))
    out, lse = attention(q, k, v, **kwargs)
    grads = torch.autograd.grad((out, lse), (q, k, v), (grad_out, grad_lse))
    return out.detach(), lse.detach(), grads


class Packed:
    """A packed batch: q (Tq, H, D), k and v (Tk, Hkv, D) with their offsets, optionally as
    views into NaN-filled buffers (``pad`` tokens, heads and dims on every side)."""

    def __init__(self, lengths_q, lengths_k, *, heads=4, kv_heads=2, dim=24, dtype=torch.float16, seed=0, pad=0):
        generator = torch.Generator(device="cpu").manual_seed(seed)
        self.cu_q, self.cu_k = offsets(lengths_q), offsets(lengths_k)
        self.lengths_q, self.lengths_k = list(lengths_q), list(lengths_k)
        tq, tk = sum(lengths_q), sum(lengths_k)
        q = randn(tq, heads, dim, dtype=dtype, generator=generator)
        k = randn(tk, kv_heads, dim, dtype=dtype, generator=generator)
        v = randn(tk, kv_heads, dim, dtype=dtype, generator=generator)
        self.grad_out = randn(tq, heads, dim, dtype=dtype, generator=generator)
        self.grad_lse = randn(heads, tq, dtype=torch.float32, generator=generator)
        self.q, self.k, self.v = (padded(x, pad) if pad else x for x in (q, k, v))

    def kwargs(self):
        return dict(cu_seqlens_q=self.cu_q, cu_seqlens_k=self.cu_k,
                    max_seqlen_q=max(self.lengths_q, default=0), max_seqlen_k=max(self.lengths_k, default=0))

    def sequences(self):
        for s in range(len(self.lengths_q)):
            yield (slice(int(self.cu_q[s]), int(self.cu_q[s + 1])), slice(int(self.cu_k[s]), int(self.cu_k[s + 1])))


# -- varlen = one dense call per sequence ----------------------------------------------------
def check_varlen_matches_dense(attention, packed, *, with_backward=True, **band_kwargs):
    """``attention`` on the packed batch equals the project kernel's dense call on each
    sequence, bitwise: out, lse and (with_backward) dq, dk, dv."""
    p = packed
    if with_backward:
        out, lse, (dq, dk, dv) = gradients(attention, p.q, p.k, p.v, p.grad_out, p.grad_lse,
                                           **band_kwargs, **p.kwargs())
    else:
        out, lse = attention(p.q, p.k, p.v, **band_kwargs, **p.kwargs())
    for s, (rows, keys) in enumerate(p.sequences()):
        q, k, v = p.q[rows][None], p.k[keys][None], p.v[keys][None]
        if with_backward:
            grad_out, grad_lse = p.grad_out[rows][None], p.grad_lse[:, rows][None]
            d_out, d_lse, (d_dq, d_dk, d_dv) = gradients(flash_attention, q, k, v, grad_out, grad_lse, **band_kwargs)
            pairs = [("dq", dq[rows], d_dq[0]), ("dk", dk[keys], d_dk[0]), ("dv", dv[keys], d_dv[0])]
        else:
            d_out, d_lse = flash_attention(q, k, v, **band_kwargs)
            pairs = []
        pairs = [("out", out[rows], d_out[0]), ("lse", lse[:, rows], d_lse[0])] + pairs
        for name, got, expected in pairs:
            assert torch.equal(got, expected), (
                f"sequence {s} (nq={rows.stop - rows.start}, nk={keys.stop - keys.start}): {name} differs from "
                f"the dense call, greatest difference {(got.double() - expected.double()).abs().nan_to_num(math.inf).max()}"
            )


VARLEN_CASES = {
    # empty on either side, length 1, one long among short, Nq != Nk per sequence, GQA
    "fp16-causal-gqa": (torch.float16, [0, 1, 37, 5, 0, 3], [3, 0, 29, 5, 1, 40], dict(causal=True), 4, 2),
    "bf16-window-mqa": (torch.bfloat16, [20, 1, 0, 33], [45, 2, 6, 17], dict(window=(5, 3)), 2, 1),
    "fp32-full-mha": (torch.float32, [17, 2, 0], [1, 35, 0], dict(), 2, 2),
    "fp16-causal-window": (torch.float16, [31, 4], [18, 4], dict(causal=True, window=(7, -1)), 2, 2),
}


@pytest.mark.parametrize("dtype, lengths_q, lengths_k, band_kwargs, heads, kv_heads",
                         VARLEN_CASES.values(), ids=VARLEN_CASES.keys())
def test_varlen_equals_one_dense_call_per_sequence(dtype, lengths_q, lengths_k, band_kwargs, heads, kv_heads):
    packed = Packed(lengths_q, lengths_k, heads=heads, kv_heads=kv_heads, dtype=dtype, pad=2)
    check_varlen_matches_dense(flash_attention, packed, **band_kwargs)


def test_varlen_never_reads_across_a_sequence_boundary():
    """NaN in every other sequence's queries, keys and values changes nothing, bitwise, in
    the results of the remaining sequences (a masked-out read of a neighbour's NaN value
    would still leak through 0 * NaN)."""
    lengths_q, lengths_k = [9, 17, 1, 20, 6], [14, 3, 22, 1, 30]
    clean = Packed(lengths_q, lengths_k, heads=2, kv_heads=1, dtype=torch.float16, seed=3)
    dirty = Packed(lengths_q, lengths_k, heads=2, kv_heads=1, dtype=torch.float16, seed=3)
    kept = []
    for s, (rows, keys) in enumerate(dirty.sequences()):
        if s % 2:
            dirty.q[rows], dirty.k[keys], dirty.v[keys] = math.nan, math.nan, math.nan
        else:
            kept.append((rows, keys))
    a_out, a_lse, a_grads = gradients(flash_attention, clean.q, clean.k, clean.v, clean.grad_out, clean.grad_lse,
                                      causal=True, **clean.kwargs())
    b_out, b_lse, b_grads = gradients(flash_attention, dirty.q, dirty.k, dirty.v, dirty.grad_out, dirty.grad_lse,
                                      causal=True, **dirty.kwargs())
    for rows, keys in kept:
        assert torch.equal(a_out[rows], b_out[rows]) and torch.equal(a_lse[:, rows], b_lse[:, rows])
        assert torch.equal(a_grads[0][rows], b_grads[0][rows])
        assert torch.equal(a_grads[1][keys], b_grads[1][keys]) and torch.equal(a_grads[2][keys], b_grads[2][keys])


def test_varlen_sequence_without_keys_gives_zero_and_minus_infinity():
    packed = Packed([5, 3], [0, 4], heads=2, kv_heads=1, dtype=torch.float32)
    out, lse, (dq, dk, dv) = gradients(flash_attention, packed.q, packed.k, packed.v, packed.grad_out,
                                       packed.grad_lse, **packed.kwargs())
    assert (out[:5] == 0).all() and (lse[:, :5] == -math.inf).all() and (dq[:5] == 0).all()
    assert torch.isfinite(lse[:, 5:]).all()


def test_varlen_with_no_sequences_and_no_tokens():
    q, k = torch.zeros(0, 2, 8), torch.zeros(0, 1, 8)
    empty = torch.zeros(1, dtype=torch.int32)
    out, lse = flash_attention(q, k, k, cu_seqlens_q=empty, cu_seqlens_k=empty, max_seqlen_q=0, max_seqlen_k=0)
    assert out.shape == (0, 2, 8) and lse.shape == (2, 0)


def test_varlen_writes_given_buffers_in_place():
    packed = Packed([7, 12], [9, 3], heads=2, kv_heads=2, dtype=torch.float32)
    expected_out, expected_lse = flash_attention(packed.q, packed.k, packed.v, **packed.kwargs())
    out = torch.full((2, 8 + 19, 24), 7.0).transpose(0, 1)[4:23]  # (Tq, H, D), not contiguous
    lse = torch.full((19, 2), 7.0).t()
    got_out, got_lse = flash_attention(packed.q, packed.k, packed.v, out=out, lse_out=lse, **packed.kwargs())
    assert got_out is out and got_lse is lse
    assert torch.equal(out, expected_out) and torch.equal(lse, expected_lse)


# -- boolean masks against float64 ------------------------------------------------------------
def out_tolerance(v, nk):
    """Allowed |out - exact| for a row of ``nk`` keys, as a multiple of max|v|. P is rounded
    to the input dtype before P·V (relative error eps/2 per term, so at most
    eps/2 · Σ_j P_ij |v_j| <= eps/2 · max|v|) and the output is rounded once more (eps/2):
    eps of the input dtype. The float32 sums over ``nk`` keys (the row sum and P·V, with
    GPU exp2 approximations of a couple of ulps) add at most about ``nk`` float32 ulps.
    Twice the first term plus the second."""
    eps = torch.finfo(v.dtype).eps
    return (2 * eps + nk * torch.finfo(torch.float32).eps) * max(v.abs().max().item(), 1e-30)


#: lse is float32 from logits of the rounded inputs, accumulated in float32: a few dozen
#: float32 ulps of the largest |lse| at most.
LSE_RTOL = 1e-5
#: float32 gradients: each is a float32 sum over at most a few dozen keys or queries (worst
#: case about N ulps of the sum of the terms' magnitudes, which may exceed the largest
#: gradient a few times); 1e-4 of the largest gradient leaves a margin of about 20.
GRAD_RTOL = 1e-4


def check_masked_forward(attention, q, k, v, **kwargs):
    out, lse = attention(q, k, v, **kwargs)
    ref_out, ref_lse = reference(q, k, v, **kwargs)
    atol = out_tolerance(v, k.shape[1])
    empty = ref_lse == -math.inf
    assert torch.equal(lse == -math.inf, empty), "rows without an allowed key differ from the reference"
    assert (out.permute(0, 2, 1, 3)[empty] == 0).all(), "an empty row's output is not exactly 0"
    out_error = (out.double() - ref_out).abs().max().item()
    assert out_error <= atol, f"out: error {out_error:.3g} above {atol:.3g}"
    if (~empty).any():
        lse_error = (lse[~empty].double() - ref_lse[~empty]).abs().max().item()
        lse_atol = LSE_RTOL * max(ref_lse[~empty].abs().max().item(), 1.0)
        assert lse_error <= lse_atol, f"lse: error {lse_error:.3g} above {lse_atol:.3g}"
    return out, lse


def check_masked_gradients(attention, q, k, v, *, seed=0, **kwargs):
    """Gradients (float32 inputs) against float64 autograd of the reference, within
    GRAD_RTOL of each gradient's largest magnitude."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    grad_out = randn(*q.shape, dtype=q.dtype, generator=generator)
    grad_lse = randn(q.shape[0], q.shape[2], q.shape[1], dtype=torch.float32, generator=generator)
    _, _, grads = gradients(attention, q, k, v, grad_out, grad_lse, **kwargs)
    _, _, ref_grads = gradients(reference, q.double(), k.double(), v.double(), grad_out.double(),
                                grad_lse.double(), **kwargs)
    for name, got, expected in zip(("dq", "dk", "dv"), grads, ref_grads):
        error = (got.double() - expected).abs().max().item()
        allowed = GRAD_RTOL * max(expected.abs().max().item(), 1e-6)
        assert error <= allowed, f"{name}: error {error:.3g} above {allowed:.3g}"
    return grads


def random_mask(shape, *, seed, p=0.6):
    return (torch.rand(shape, generator=torch.Generator(device="cpu").manual_seed(seed), device="cpu") < p).to(DEVICE)


def dense(b=2, nq=21, nk=37, h=4, hkv=2, d=16, dtype=torch.float32, seed=0):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(randn(b, n, heads, d, dtype=dtype, generator=generator)
                 for n, heads in ((nq, h), (nk, hkv), (nk, hkv)))


MASK_SHAPES = {
    "full": (2, 4, 21, 37),
    "2d": (21, 37),
    "per-batch": (2, 1, 21, 37),
    "per-head-key-padding": (4, 1, 37),
    "key-padding": (2, 1, 1, 37),
}


@pytest.mark.parametrize("shape", MASK_SHAPES.values(), ids=MASK_SHAPES.keys())
@pytest.mark.parametrize("band_kwargs", [dict(), dict(causal=True), dict(window=(9, 4))], ids=["full", "causal", "window"])
def test_masked_forward_matches_float64(shape, band_kwargs):
    q, k, v = dense(seed=len(shape))
    mask = random_mask(shape, seed=1)
    check_masked_forward(flash_attention, q, k, v, attn_mask=mask, **band_kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_forward_in_each_dtype(dtype):
    q, k, v = dense(dtype=dtype, seed=3)
    mask = random_mask((2, 1, 21, 37), seed=4)
    mask[:, :, 5] = False  # a fully masked row
    mask[:, :, :, 30:34] = False  # keys hidden from every query
    check_masked_forward(flash_attention, q, k, v, attn_mask=mask, window=(-1, 20))


@pytest.mark.parametrize("band_kwargs", [dict(), dict(causal=True)], ids=["full", "causal"])
def test_masked_gradients_match_float64(band_kwargs):
    q, k, v = dense(seed=5)
    mask = random_mask((2, 4, 21, 37), seed=6)
    mask[0, :, 3] = False  # rows the mask empties
    mask[:, 1, :, 17:21] = False  # keys hidden from every query of a head
    dq, dk, dv = check_masked_gradients(flash_attention, q, k, v, attn_mask=mask, **band_kwargs)
    assert (dq[0, 3] == 0).all()


def test_fully_masked_rows_and_hidden_keys_are_exact_zeros():
    q, k, v = dense(h=2, hkv=2, seed=7)
    mask = random_mask((2, 2, 21, 37), seed=8)
    mask[:, :, 4:7] = False
    mask[:, :, :, 16:20] = False
    generator = torch.Generator(device="cpu").manual_seed(9)
    out, lse, (dq, dk, dv) = gradients(flash_attention, q, k, v, randn(*q.shape, dtype=q.dtype, generator=generator),
                                       randn(2, 2, 21, dtype=torch.float32, generator=generator), attn_mask=mask)
    assert (out[:, 4:7] == 0).all() and (lse[:, :, 4:7] == -math.inf).all() and (dq[:, 4:7] == 0).all()
    assert (dk[:, 16:20] == 0).all() and (dv[:, 16:20] == 0).all()
    assert torch.isfinite(out).all() and torch.isfinite(dq).all() and torch.isfinite(dk).all()


@pytest.mark.parametrize("dtype, nq, nk, window", [
    (torch.float16, 21, 37, (-1, 0)), (torch.bfloat16, 37, 21, (6, 0)), (torch.float32, 37, 21, (6, 0)),
], ids=["float16-nq<nk", "bfloat16-nq>nk-sliding", "float32-nq>nk-sliding"])
def test_mask_of_the_causal_band_equals_causal_bitwise(dtype, nq, nk, window):
    q, k, v = dense(nq=nq, nk=nk, dtype=dtype, seed=10)
    generator = torch.Generator(device="cpu").manual_seed(11)
    grad_out, grad_lse = randn(*q.shape, dtype=dtype, generator=generator), randn(2, 4, nq, dtype=torch.float32,
                                                                                  generator=generator)
    causal = gradients(flash_attention, q, k, v, grad_out, grad_lse, causal=True, window=window)
    masked = gradients(flash_attention, q, k, v, grad_out, grad_lse, attn_mask=band(nq, nk, True, window))
    for name, a, b in zip(("out", "lse", "dq", "dk", "dv"), (*causal[:2], *causal[2]), (*masked[:2], *masked[2])):
        assert torch.equal(a, b), f"{name} differs between causal=True and the equivalent mask"


def test_hidden_keys_holding_huge_values_change_nothing():
    """Keys the mask hides from every query may hold any finite values, however large: out,
    lse and all gradients equal those with ordinary values there, and the hidden keys get
    exactly zero dK, dV. (Not NaN: hidden keys enter the products with probability 0, and
    0 * NaN is NaN in standard attention too; the protocol's inputs are finite.)"""
    q, k, v = dense(dtype=torch.float16, seed=12)
    mask = torch.ones(2, 1, 1, 37, dtype=torch.bool)
    mask[0, ..., 3:9] = False
    mask[1, ..., 30:] = False
    generator = torch.Generator(device="cpu").manual_seed(13)
    grad_out, grad_lse = randn(*q.shape, dtype=q.dtype, generator=generator), randn(2, 4, 21, dtype=torch.float32,
                                                                                    generator=generator)
    hidden = ~mask[:, 0, 0]  # (B, Nk)
    k_bad, v_bad = k.clone(), v.clone()
    largest = torch.finfo(k.dtype).max
    huge = torch.tensor([largest / 8, -largest / 8, largest], dtype=k.dtype).repeat(5)[:int(hidden.sum())]
    k_bad[hidden] = huge[:, None, None]
    v_bad[hidden] = huge.flip(0)[:, None, None]
    clean = gradients(flash_attention, q, k, v, grad_out, grad_lse, attn_mask=mask, causal=True)
    dirty = gradients(flash_attention, q, k_bad, v_bad, grad_out, grad_lse, attn_mask=mask, causal=True)
    for name, a, b in zip(("out", "lse", "dq"), (*clean[:2], clean[2][0]), (*dirty[:2], dirty[2][0])):
        assert torch.equal(a, b), f"{name} changed with huge values in hidden keys"
    for name, a, b in zip(("dk", "dv"), clean[2][1:], dirty[2][1:]):
        assert (b[hidden] == 0).all(), f"hidden keys got a nonzero {name}"
        assert torch.equal(a[~hidden], b[~hidden]), f"{name} of visible keys changed"


def test_huge_masked_logits_do_not_leak():
    q, k, v, mask = huge_logit_case()
    check_masked_forward(flash_attention, q, k, v, attn_mask=mask)


def huge_logit_case():
    """Key 3 has logits of about 1e4 for every query and is hidden from the even queries:
    their softmax must be over their other keys alone."""
    q, k, v = dense(b=1, nq=20, nk=24, dtype=torch.float32, seed=14)
    q = q.abs() + 0.5  # positive queries, so that k_3 · q is large for each of them
    k[:, 3] = 2000.0
    mask = torch.ones(1, 1, 20, 24, dtype=torch.bool)
    mask[..., ::2, 3] = False
    return q, k, v, mask


# -- memory safety through the raw launchers --------------------------------------------------
GUARD_BITS = {torch.float16: 0x7E5A, torch.bfloat16: 0x7FA5, torch.float32: 0x7FC0BEEF}


class Guarded:
    """A view of ``shape`` inside a buffer padded by ``pad`` on every side of every dim,
    all of it filled with a NaN of a distinctive bit pattern (a written NaN would differ)."""

    def __init__(self, shape, dtype, pad=3, contiguous=False):
        integer = {2: torch.int16, 4: torch.int32}[dtype.itemsize]
        if contiguous:  # a flat buffer padded before and after (delta must be contiguous)
            numel = math.prod(shape)
            self.bits = torch.full((numel + 2 * pad,), GUARD_BITS[dtype], dtype=integer)
            self.view = self.bits.view(dtype)[pad:pad + numel].view(shape)
            self.inside = torch.zeros(self.bits.shape, dtype=torch.bool)
            self.inside[pad:pad + numel] = True
        else:
            self.bits = torch.full([s + 2 * pad for s in shape], GUARD_BITS[dtype], dtype=integer)
            index = tuple(slice(pad, pad + s) for s in shape)
            self.view = self.bits.view(dtype)[index]
            self.inside = torch.zeros(self.bits.shape, dtype=torch.bool)
            self.inside[index] = True
        self.guard = GUARD_BITS[dtype]

    def check_guard(self, name):
        assert (self.bits[~self.inside] == self.guard).all(), f"{name}: an element outside the view was written"

    def check_written(self, name):
        inside = self.bits[self.inside]
        assert (inside != self.guard).all(), f"{name}: {int((inside == self.guard).sum())} elements never written"
        assert not torch.isnan(self.view).any(), f"{name}: NaN written (finite inputs)"


def launch_guarded(launches, q, k, v, *, lse_shape, softmax_scale=0.25, left=-1, right=-1, grad_seed=0, pad=3,
                   **structure):
    """Run forward then backward launchers on guarded outputs; check every output is fully
    written and no guard element is touched. ``pad`` (per side, every dim) must cover the
    farthest stray write a planted bug can make: the interpreter checks no bounds, and a
    store past the guard lands in memory the test does not own."""
    forward_launch, backward_launch = launches
    dtype = q.dtype
    settings = dict(softmax_scale=softmax_scale, left=left, right=right,
                    emulate_bf16=config.INTERPRETER and dtype == torch.bfloat16, **structure)
    out, lse = Guarded(q.shape, dtype, pad), Guarded(lse_shape, torch.float32, pad)
    forward_launch(q, k, v, out.view, lse.view, config=config.forward_config(dtype, q.shape[-1]), **settings)
    for name, guarded in (("out", out), ("lse", lse)):
        guarded.check_guard(name)
        guarded.check_written(name)
    generator = torch.Generator(device="cpu").manual_seed(grad_seed)
    grad_out = randn(*q.shape, dtype=dtype, generator=generator)
    grad_lse = randn(*lse_shape, dtype=torch.float32, generator=generator)
    dq, dk, dv = (Guarded(t.shape, dtype, pad) for t in (q, k, v))
    delta = Guarded(lse_shape, torch.float32, pad, contiguous=True)
    backward_launch(q, k, v, out.view, lse.view.contiguous(), grad_out, grad_lse, dq.view, dk.view, dv.view,
                    delta.view, config=config.backward_config(dtype, q.shape[-1]), **settings)
    outputs = (("dq", dq), ("dk", dk), ("dv", dv), ("delta", delta))
    for name, guarded in outputs:  # stray writes first: they may also leave NaN inside
        guarded.check_guard(name)
    for name, guarded in outputs:
        guarded.check_written(name)
    return out.view, lse.view, dq.view, dk.view, dv.view


LAUNCHERS = (forward.launch, backward.launch)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_dense_masked_launchers_write_exactly_their_outputs(dtype):
    q, k, v = dense(b=2, nq=19, nk=35, h=2, hkv=1, d=20, dtype=dtype, seed=15)
    mask = random_mask((2, 1, 19, 35), seed=16)
    mask[1, :, 2] = False
    launch_guarded(LAUNCHERS, q, k, v, lse_shape=(2, 2, 19), mask=mask, right=0)


def check_varlen_launchers(launches, packed, pad=3, **band):
    """Guarded outputs of the packed launchers, and the poisoned padding around the packed
    inputs (``Packed(pad=...)``) never reaching them (the guard check rejects NaN)."""
    p = packed
    tq, heads = p.q.shape[:2]
    return launch_guarded(launches, p.q, p.k, p.v, lse_shape=(heads, tq), cu_seqlens_q=p.cu_q,
                          cu_seqlens_k=p.cu_k, max_seqlen_q=max(p.lengths_q), max_seqlen_k=max(p.lengths_k), pad=pad,
                          **band)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_varlen_launchers_write_exactly_their_outputs(dtype):
    packed = Packed([3, 0, 29, 1], [17, 5, 0, 21], heads=4, kv_heads=2, dim=20, dtype=dtype, pad=40)
    check_varlen_launchers(LAUNCHERS, packed, right=0)


# -- planted bugs: each caught by a check above, which the correct kernel passes --------------
def last_sequence_short_packed(**kwargs):
    """The last sequence shorter than the longest on both sides; inputs inside NaN padding
    wide enough for any read up to max_seqlen past a sequence's start."""
    return Packed([19, 33, 4], [40, 21, 6], heads=2, kv_heads=1, dim=16, pad=40, **kwargs)


def test_caught_varlen_query_offset_off_by_one():
    check = lambda impl: check_varlen_matches_dense(impl, last_sequence_short_packed(), with_backward=False)
    check(flash_attention)
    with pytest.raises(AssertionError, match="out differs"):
        check(mutants.mutant("varlen_query_offset_off_by_one"))


def test_caught_varlen_keys_read_to_max_seqlen():
    check = lambda impl: check_varlen_matches_dense(impl, last_sequence_short_packed(), with_backward=False)
    check(flash_attention)
    with pytest.raises(AssertionError, match="differs"):
        check(mutants.mutant("varlen_keys_read_to_max_seqlen"))


def test_caught_varlen_band_from_total_lengths():
    check = lambda impl: check_varlen_matches_dense(impl, last_sequence_short_packed(), with_backward=False,
                                                    causal=True)
    check(flash_attention)
    with pytest.raises(AssertionError, match="differs"):
        check(mutants.mutant("varlen_band_from_total_lengths"))


def test_caught_backward_varlen_writes_past_sequence_end():
    packed = Packed([6, 3], [30, 18], heads=2, kv_heads=1, dim=16, dtype=torch.float32, pad=40)
    check_varlen_launchers(LAUNCHERS, packed)
    mutated = (forward.launch, mutants.mutated_launch("backward_varlen_writes_past_sequence_end"))
    # The mutant writes up to max_seqlen_k - 18 = 12 tokens past the last sequence's keys:
    # guards of 32 tokens keep every stray store inside memory the test owns.
    with pytest.raises(AssertionError, match="outside the view was written"):
        check_varlen_launchers(mutated, packed, pad=32)


def test_caught_mask_multiplied_after_exp():
    q, k, v, mask = huge_logit_case()
    check_masked_forward(flash_attention, q, k, v, attn_mask=mask)
    with pytest.raises(AssertionError):
        check_masked_forward(mutants.mutant("mask_multiplied_after_exp"), q, k, v, attn_mask=mask)


def test_caught_mask_broadcast_strides_ignored():
    """The mask is a (1, 1, Nq, Nk) view of a larger (B, H, Nq, Nk) buffer: reading it with
    the view's own strides instead of 0 for the broadcast dims reads other slices."""
    q, k, v = dense(b=2, nq=18, nk=20, h=2, hkv=2, seed=17)
    storage = random_mask((2, 2, 18, 20), seed=18)
    mask = storage[:1, :1]
    check_masked_forward(flash_attention, q, k, v, attn_mask=mask)
    with pytest.raises(AssertionError):
        check_masked_forward(mutants.mutant("mask_broadcast_strides_ignored"), q, k, v, attn_mask=mask)


def test_caught_backward_ignores_mask():
    q, k, v = dense(b=1, nq=18, nk=20, h=2, hkv=1, seed=19)
    mask = random_mask((1, 2, 18, 20), seed=20)
    check_masked_gradients(flash_attention, q, k, v, attn_mask=mask)
    with pytest.raises(AssertionError, match="^d[qkv]"):
        check_masked_gradients(mutants.mutant("backward_ignores_mask"), q, k, v, attn_mask=mask)
