"""The float64 reference gradients (reference.gradients) and the plain backward (same_precision.gradients).

The oracles: torch.autograd through the float64 reference forward (plain torch ops, so
autograd differentiates it mechanically), gradcheck's finite differences through an
autograd Function made of reference.attention and reference.gradients, and dense einsum
formulas with the band written from the protocol text for the magnitudes. Also: chunking
invariance, exact zeros and ignored upstream gradients on rows without keys, the magnitudes
bounding what they describe, and same_precision.gradients within a stated dtype-based bound.
"""

from __future__ import annotations

import math

import pytest
import torch

from flashcheck.oracle import reference, same_precision

from tests.support.witness import allowed_matrix

U32 = 2.0**-24
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: U32}
PER_QUERY = ("dq", "abs_dq", "abs_dq_terms", "p_abs_k")
PER_KEY = ("dk", "dv", "abs_dk", "abs_dk_terms", "abs_dv", "pt_abs_q")
PER_ROW = ("abs_dp_max", "delta")


# -- inputs and oracles ------------------------------------------------------------------------
def make_inputs(batch, nq, nk, heads, kv_heads, dim, *, seed, dtype=torch.float64, std=1.0):
    """q, k, v, grad_out in ``dtype``; grad_lse float64 (as drawn; a kernel gets float32)."""
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape, scale=1.0):
        return (torch.randn(*shape, generator=generator, dtype=torch.float64) * scale).to(dtype)

    q = draw(batch, nq, heads, dim, scale=std)
    k = draw(batch, nk, kv_heads, dim, scale=std)
    v = draw(batch, nk, kv_heads, dim)
    grad_out = draw(batch, nq, heads, dim)
    grad_lse = torch.randn(batch, heads, nq, generator=generator, dtype=torch.float64)
    return q, k, v, grad_out, grad_lse


def safe_attention(q, k, v, *, causal, window, softmax_scale):
    """Float64 attention that autograd differentiates cleanly even on rows without keys
    (their logits are replaced by zeros and their probabilities multiplied by 0), with its
    own band; returns ``(out, lse, has_keys)``, lse only meaningful where ``has_keys``."""
    heads, kv_heads, dim = q.shape[2], k.shape[2], q.shape[3]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    kx = k.repeat_interleave(heads // kv_heads, dim=2)
    vx = v.repeat_interleave(heads // kv_heads, dim=2)
    logits = scale * torch.einsum("bihd,bjhd->bhij", q, kx)
    allowed = allowed_matrix(q.shape[1], k.shape[1], causal, window)
    has_keys = allowed.any(dim=-1)  # (Nq,)
    logits = torch.where(allowed, logits, -math.inf)
    logits = torch.where(has_keys[:, None], logits, 0.0)
    probs = torch.softmax(logits, dim=-1) * has_keys[:, None]
    out = torch.einsum("bhij,bjhd->bihd", probs, vx)
    return out, torch.logsumexp(logits, dim=-1), has_keys


def loss_gradients(forward, q, k, v, grad_out, grad_lse, kwargs):
    """Autograd gradients of ``Σ out·grad_out + Σ lse·grad_lse`` (lse only where finite)."""
    leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out, lse = forward(*leaves, **kwargs)[:2]
    loss = (out * grad_out).sum()
    if grad_lse is not None:
        loss = loss + torch.where(torch.isfinite(lse), lse * grad_lse, 0.0).sum()
    return torch.autograd.grad(loss, leaves)


def assert_close_float64(got, want, name, rtol=1e-10):
    """Relative-ish: elementwise rtol plus rtol times the largest magnitude of ``want``."""
    assert got.dtype == torch.float64 and got.shape == want.shape, name
    atol = rtol * float(want.abs().max()) if want.numel() else 0.0
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol + 1e-300, msg=lambda m: f"{name}: {m}")


#: (batch, nq, nk, heads, kv_heads, dim, causal, window, softmax_scale); no row is empty.
FULL_ROW_CASES = {
    "GQA 2, fewer queries": (2, 7, 9, 4, 2, 5, False, (-1, -1), None),
    "GQA 3, more queries": (1, 9, 4, 3, 1, 4, False, (-1, -1), None),
    "GQA 3 over 2 KV heads, two-sided window": (1, 8, 10, 6, 2, 3, False, (2, 1), None),
    "causal square, negative scale": (1, 8, 8, 2, 2, 3, True, (-1, -1), -0.7),
    "causal fewer queries, left window, GQA 2": (1, 5, 11, 6, 3, 6, True, (3, -1), None),
    "more queries, left window, custom scale": (1, 9, 6, 2, 1, 4, False, (4, -1), 0.9),
    "diagonal only, large scale": (2, 6, 6, 2, 1, 3, False, (0, 0), 1.7),
    "head dim 1": (1, 4, 5, 2, 2, 1, True, (-1, -1), None),
}

#: Cases with rows that see no key at all.
EMPTY_ROW_CASES = {
    "causal more queries, GQA 2": (2, 7, 3, 4, 2, 4, True, (-1, -1), None),
    "window leaves rows empty, GQA 3": (1, 9, 6, 3, 1, 4, False, (2, 1), -0.6),
    "window past the end": (1, 7, 3, 2, 2, 3, False, (2, 1), None),
}


def _split(config):
    *shape, causal, window, scale = config
    return shape, dict(causal=causal, window=window, softmax_scale=scale)


# -- (a) equal to autograd ---------------------------------------------------------------------
@pytest.mark.parametrize("with_lse", [False, True], ids=["dout", "dout+dlse"])
@pytest.mark.parametrize("config", FULL_ROW_CASES.values(), ids=FULL_ROW_CASES.keys())
def test_gradients_equal_autograd_of_the_reference_forward(config, with_lse):
    shape, kwargs = _split(config)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=sum(shape))
    grad_lse = grad_lse if with_lse else None
    expected = loss_gradients(reference.attention, q, k, v, grad_out, grad_lse, kwargs)
    got = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name, want in zip(("dq", "dk", "dv"), expected):
        assert_close_float64(getattr(got, name), want, name)
    assert got.dq.shape == q.shape and got.dk.shape == k.shape and got.dv.shape == v.shape


@pytest.mark.parametrize("config", EMPTY_ROW_CASES.values(), ids=EMPTY_ROW_CASES.keys())
def test_gradients_with_empty_rows_equal_autograd_of_a_safe_forward(config):
    """Autograd through reference.attention gives NaN through -inf rows, so rows without
    keys are checked against a forward that replaces their logits by zeros."""
    shape, kwargs = _split(config)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=3 * sum(shape))
    expected = loss_gradients(safe_attention, q, k, v, grad_out, grad_lse, kwargs)
    got = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name, want in zip(("dq", "dk", "dv"), expected):
        assert_close_float64(getattr(got, name), want, name)


def test_no_grad_lse_is_a_zero_grad_lse():
    shape, kwargs = _split(FULL_ROW_CASES["GQA 2, fewer queries"])
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=1)
    without = reference.gradients(q, k, v, grad_out, **kwargs)
    zero = reference.gradients(q, k, v, grad_out, grad_lse=torch.zeros_like(grad_lse), **kwargs)
    for name in reference.Gradients._fields:
        assert torch.equal(getattr(without, name), getattr(zero, name)), name


def test_gradients_accept_low_precision_inputs_exactly():
    shape, kwargs = _split(FULL_ROW_CASES["causal fewer queries, left window, GQA 2"])
    inputs = make_inputs(*shape, seed=2, dtype=torch.float16)
    low = reference.gradients(*inputs[:4], grad_lse=inputs[4].float(), **kwargs)
    wide = reference.gradients(*(t.double() for t in inputs[:4]), grad_lse=inputs[4].float().double(), **kwargs)
    for name in reference.Gradients._fields:
        assert getattr(low, name).dtype == torch.float64, name
        assert torch.equal(getattr(low, name), getattr(wide, name)), name


def test_gradients_run_on_the_inputs_device(device):
    shape, kwargs = _split(EMPTY_ROW_CASES["causal more queries, GQA 2"])
    q, k, v, grad_out, grad_lse = (t.to(device) for t in make_inputs(*shape, seed=4))
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name in reference.Gradients._fields:
        assert getattr(grads, name).device.type == device, name


# -- (b) gradcheck through out and lse ---------------------------------------------------------
class ReferenceAttention(torch.autograd.Function):
    """Forward reference.attention, backward reference.gradients: both upstream gradients."""

    @staticmethod
    def forward(ctx, q, k, v, kwargs):
        ctx.save_for_backward(q, k, v)
        ctx.kwargs = kwargs
        return reference.attention(q, k, v, **kwargs)

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        q, k, v = ctx.saved_tensors
        grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **ctx.kwargs)
        return grads.dq, grads.dk, grads.dv, None


GRADCHECK_CASES = {
    "square GQA 2": (1, 4, 4, 2, 1, 3, False, (-1, -1), None),
    "causal fewer queries": (1, 3, 5, 2, 1, 3, True, (-1, -1), None),
    "two-sided window": (1, 5, 5, 1, 1, 2, False, (1, 1), None),
    "more queries GQA 3 negative scale": (2, 5, 3, 3, 1, 2, False, (-1, -1), -0.8),
}


@pytest.mark.parametrize("config", GRADCHECK_CASES.values(), ids=GRADCHECK_CASES.keys())
def test_gradcheck_through_out_and_lse(config):
    shape, kwargs = _split(config)
    q, k, v, _, _ = make_inputs(*shape, seed=5)
    leaves = tuple(t.requires_grad_() for t in (q, k, v))
    assert torch.autograd.gradcheck(lambda *x: ReferenceAttention.apply(*x, kwargs), leaves)


# -- (c) chunking --------------------------------------------------------------------------------
@pytest.mark.parametrize("rows_per_chunk", [1, 2, 3])
@pytest.mark.parametrize(
    "config",
    [FULL_ROW_CASES["GQA 3 over 2 KV heads, two-sided window"], EMPTY_ROW_CASES["causal more queries, GQA 2"]],
    ids=["window", "empty rows"],
)
def test_chunking_does_not_change_the_gradients(monkeypatch, config, rows_per_chunk):
    """Per-row fields are bitwise equal; dK, dV and their magnitudes are sums over the
    chunks, so a different chunking adds in a different order: equal to float64 rounding."""
    shape, kwargs = _split(config)
    batch, nq, nk, heads = shape[:4]
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=6)
    whole = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", rows_per_chunk * batch * heads * nk)
    chunked = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name in PER_QUERY + PER_ROW:
        assert torch.equal(getattr(whole, name), getattr(chunked, name)), name
    for name in PER_KEY:
        torch.testing.assert_close(getattr(chunked, name), getattr(whole, name), rtol=1e-13, atol=1e-300, msg=name)


# -- rows without keys -------------------------------------------------------------------------
@pytest.mark.parametrize("config", EMPTY_ROW_CASES.values(), ids=EMPTY_ROW_CASES.keys())
def test_rows_without_keys_are_zero_and_ignore_their_upstream_gradients(config):
    shape, kwargs = _split(config)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=7)
    nq, nk = shape[1], shape[2]
    empty = ~allowed_matrix(nq, nk, kwargs["causal"], kwargs["window"]).any(dim=-1)
    assert empty.any() and not empty.all()
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name in PER_QUERY:
        assert (getattr(grads, name)[:, empty] == 0).all(), name
    for name in PER_ROW:
        assert (getattr(grads, name)[:, :, empty] == 0).all(), name
    assert (grads.dq[:, ~empty] != 0).any()
    for poison in (1e6, math.inf, math.nan):
        changed_lse, changed_out = grad_lse.clone(), grad_out.clone()
        changed_lse[:, :, empty] = poison
        changed_out[:, empty] = poison
        again = reference.gradients(q, k, v, changed_out, grad_lse=changed_lse, **kwargs)
        for name in reference.Gradients._fields:
            assert torch.equal(getattr(grads, name), getattr(again, name)), (name, poison)


def test_no_keys_gives_zero_gradients():
    q, k, v, grad_out, grad_lse = make_inputs(2, 3, 0, 2, 1, 4, seed=8)
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse)
    assert grads.dq.shape == q.shape and grads.dk.shape == k.shape
    for name in reference.Gradients._fields:
        assert (getattr(grads, name) == 0).all(), name


# -- (d) the magnitudes ------------------------------------------------------------------------
def dense_magnitudes(q, k, v, grad_out, grad_lse, *, causal, window, softmax_scale):
    """Every field of reference.Gradients from its definition, densely, by einsum."""
    batch, nq, heads, dim = q.shape
    kv_heads = k.shape[2]
    group = heads // kv_heads
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    kx, vx = (t.repeat_interleave(group, dim=2) for t in (k, v))
    allowed = allowed_matrix(nq, k.shape[1], causal, window)
    has_keys = allowed.any(dim=-1)
    logits = (scale * torch.einsum("bihd,bjhd->bhij", q, kx)).masked_fill(~allowed, -math.inf)
    logits = logits.masked_fill(~has_keys[:, None], 0.0)
    probs = torch.softmax(logits, dim=-1) * has_keys[:, None]
    do = grad_out * has_keys[None, :, None, None]
    g = (grad_lse if grad_lse is not None else torch.zeros(batch, heads, nq, dtype=torch.float64)) * has_keys
    out = torch.einsum("bhij,bjhd->bihd", probs, vx)
    dp = torch.einsum("bihd,bjhd->bhij", do, vx)
    delta = torch.einsum("bihd,bihd->bhi", do, out)
    ds = probs * (dp - delta[..., None] + g[..., None])
    terms = probs * (dp.abs() + delta.abs()[..., None] + g.abs()[..., None])

    def per_key(x):  # (B, Nk, H, D) -> summed over each group -> (B, Nk, Hkv, D)
        return x.unflatten(2, (kv_heads, group)).sum(dim=3)

    s = abs(scale)
    return {
        "dq": scale * torch.einsum("bhij,bjhd->bihd", ds, kx),
        "dk": per_key(scale * torch.einsum("bhij,bihd->bjhd", ds, q)),
        "dv": per_key(torch.einsum("bhij,bihd->bjhd", probs, do)),
        "abs_dq": s * torch.einsum("bhij,bjhd->bihd", ds.abs(), kx.abs()),
        "abs_dk": per_key(s * torch.einsum("bhij,bihd->bjhd", ds.abs(), q.abs())),
        "abs_dv": per_key(torch.einsum("bhij,bihd->bjhd", probs, do.abs())),
        "p_abs_k": torch.einsum("bhij,bjhd->bihd", probs, kx.abs()),
        "pt_abs_q": per_key(torch.einsum("bhij,bihd->bjhd", probs, q.abs())),
        "abs_dq_terms": s * torch.einsum("bhij,bjhd->bihd", terms, kx.abs()),
        "abs_dk_terms": per_key(s * torch.einsum("bhij,bihd->bjhd", terms, q.abs())),
        "abs_dp_max": torch.einsum("bihd,bjhd->bhij", do.abs(), vx.abs()).masked_fill(~allowed, 0.0).amax(-1),
        "delta": delta,
    }


ALL_CASES = {**FULL_ROW_CASES, **EMPTY_ROW_CASES}


@pytest.mark.parametrize("with_lse", [False, True], ids=["dout", "dout+dlse"])
@pytest.mark.parametrize("config", ALL_CASES.values(), ids=ALL_CASES.keys())
def test_every_field_follows_its_definition(config, with_lse):
    shape, kwargs = _split(config)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=9 + sum(shape))
    grad_lse = grad_lse if with_lse else None
    got = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    for name, want in dense_magnitudes(q, k, v, grad_out, grad_lse, **kwargs).items():
        assert_close_float64(getattr(got, name), want, name, rtol=1e-12)


@pytest.mark.parametrize("config", ALL_CASES.values(), ids=ALL_CASES.keys())
def test_magnitudes_bound_what_they_describe(config):
    shape, kwargs = _split(config)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=10 + sum(shape), std=2.0)
    g = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    slack = 1 + 1e-12  # the two sides are rounded separately
    assert (g.dv.abs() <= g.abs_dv * slack).all()
    assert (g.dq.abs() <= g.abs_dq * slack).all()
    assert (g.abs_dq <= g.abs_dq_terms * slack).all()
    assert (g.dk.abs() <= g.abs_dk * slack).all()
    assert (g.abs_dk <= g.abs_dk_terms * slack).all()
    # delta_i = Σ_j P_ij dP_ij is an average of dP over the row: |delta| <= max |dP|.
    assert (g.delta.abs() <= g.abs_dp_max * slack).all()
    assert (g.p_abs_k <= k.abs().amax() * slack).all() and (g.abs_dp_max >= 0).all()


# -- (e) the plain same-precision backward ---------------------------------------------------
def plain_gradient_bounds(q, k, v, grad_out, grad_lse, kwargs):
    """A first-order bound on same_precision.gradients' error, doubled for the second-order terms.

    With ``u`` the unit roundoff of the dtype, ``u32`` that of float32, ``η`` half the
    smallest subnormal of the dtype (the absolute error of rounding a tiny P or dS),
    ``n_i`` the keys of row i, ``M`` the rows times the group size that a key sums over:

    - ``ε_i = 4·(D + 2)·u32·max_j |scale| Σ_d |q_id k_jd| + (n_i + 8)·u32``: the relative
      error of the float32 probabilities (logit errors enter P_ij through s_ij, the row
      maximum and the sum);
    - out (used for delta): ``ΔO ≤ (u + ε + n·u32)·Σ_j P|V| + η·Σ_j|V| + u·|O|``;
    - ``e_i = (D + 2)·u32·abs_dp_max_i + Σ_d |dO_id|·ΔO_id + (D + 2)·u32·Σ_d |dO_id O_id|``:
      the error of dP and of delta;
    - ``|ΔdV| ≤ (u + max ε + M·u32)·abs_dv + η·Σ_i|dO_id| + u·|dV|``;
    - ``|ΔdQ| ≤ (ε_i + 3u32)·abs_dq_terms + |scale|·e_i·p_abs_k + (u + n·u32)·abs_dq
      + |scale|·η·Σ_j|K_jd| + (u + u32)·|dQ|``;
    - ``|ΔdK| ≤ (max ε + 3u32)·abs_dk_terms + |scale|·max e·pt_abs_q + (u + M·u32)·abs_dk
      + |scale|·η·Σ_i|Q_id| + (u + u32)·|dK|``.
    """
    dtype = q.dtype
    u, eta = UNIT_ROUNDOFF[dtype], torch.finfo(dtype).tiny * torch.finfo(dtype).eps / 2
    batch, nq, heads, dim = q.shape
    nk, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = kwargs["softmax_scale"] if kwargs["softmax_scale"] is not None else 1.0 / math.sqrt(dim)
    ref = reference.evaluate(q, k, v, **kwargs)
    g = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    keys = ref.keys[0, 0].to(torch.float64)  # (Nq,): band only, the same for every batch entry and head
    eps = 4 * (dim + 2) * U32 * ref.max_abs_dot + (keys + 8) * U32  # (B, H, Nq)
    eps_max, many = float(eps.max()), nq * group
    do = grad_out.double() * (keys > 0)[None, :, None, None]
    abs_v = v.double().abs().repeat_interleave(group, dim=2).sum(dim=1, keepdim=True)  # (B, 1, H, D)
    out_error = (u + eps.transpose(1, 2)[..., None] + keys[:, None, None] * U32) * ref.abs_pv
    out_error = out_error + eta * abs_v + u * ref.out.abs()
    row = ((dim + 2) * U32 * g.abs_dp_max).transpose(1, 2) + (do.abs() * out_error).sum(-1)
    row = (row + (dim + 2) * U32 * (do * ref.out).abs().sum(-1)).transpose(1, 2)  # (B, H, Nq)
    row_max = float(row.max()) if row.numel() else 0.0
    sum_do = do.abs().sum(dim=1, keepdim=True).unflatten(2, (kv_heads, group)).sum(dim=3)
    sum_k = k.double().abs().repeat_interleave(group, dim=2).sum(dim=1, keepdim=True)
    sum_q = q.double().abs().sum(dim=1, keepdim=True).unflatten(2, (kv_heads, group)).sum(dim=3)
    s = abs(scale)
    bounds = {
        "dv": (u + eps_max + many * U32) * g.abs_dv + eta * sum_do + u * g.dv.abs(),
        "dq": (eps.transpose(1, 2)[..., None] + 3 * U32) * g.abs_dq_terms
        + s * row.transpose(1, 2)[..., None] * g.p_abs_k + (u + keys[:, None, None] * U32) * g.abs_dq
        + s * eta * sum_k + (u + U32) * g.dq.abs(),
        "dk": (eps_max + 3 * U32) * g.abs_dk_terms + s * row_max * g.pt_abs_q + (u + many * U32) * g.abs_dk
        + s * eta * sum_q + (u + U32) * g.dk.abs(),
    }
    return g, {name: 2 * b for name, b in bounds.items()}


#: (batch, nq, nk, heads, kv_heads, dim, causal, window, softmax_scale, std of q and k)
PLAIN_CASES = {
    "square": (2, 33, 33, 2, 2, 16, False, (-1, -1), None, 1.0),
    "causal more queries, GQA 2": (1, 40, 17, 4, 2, 8, True, (-1, -1), None, 1.0),
    "causal fewer queries, MQA": (1, 9, 40, 2, 1, 32, True, (-1, -1), None, 1.0),
    "window with empty rows, GQA 3": (1, 30, 12, 3, 1, 8, False, (2, 0), None, 1.0),
    "negative scale, large logits": (1, 20, 25, 2, 2, 16, False, (-1, -1), -0.3, 3.0),
    "no keys": (1, 5, 0, 2, 1, 8, False, (-1, -1), None, 1.0),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("config", PLAIN_CASES.values(), ids=PLAIN_CASES.keys())
def test_plain_gradients_agree_with_the_reference_within_their_precision(config, dtype):
    *shape, causal, window, scale, std = config
    kwargs = dict(causal=causal, window=window, softmax_scale=scale)
    q, k, v, grad_out, grad_lse = make_inputs(*shape, seed=sum(shape), dtype=dtype, std=std)
    grad_lse = grad_lse.float()  # what a kernel's lse gradient is
    got = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
    expected, bounds = plain_gradient_bounds(q, k, v, grad_out, grad_lse, kwargs)
    for name, value in zip(("dq", "dk", "dv"), got):
        want = getattr(expected, name)
        assert value.dtype == dtype and value.shape == want.shape, name
        error = (value.double() - want).abs()
        excess = error - bounds[name]
        assert (excess <= 0).all(), (
            f"{name}: plain error {float(error.max()):.3e} exceeds its bound by {float(excess.max()):.3e}"
        )


def test_plain_rows_without_keys_get_exactly_zero_and_ignore_their_upstream_gradients():
    q, k, v, grad_out, grad_lse = make_inputs(1, 9, 3, 4, 2, 8, seed=11, dtype=torch.float16)
    grad_lse = grad_lse.float()
    dq, dk, dv = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, causal=True)
    assert (dq[:, :6] == 0).all() and (dq[:, 6:] != 0).any()
    grad_out[:, :6] = math.nan
    grad_lse[:, :, :6] = math.inf
    again = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, causal=True)
    for name, a, b in zip(("dq", "dk", "dv"), (dq, dk, dv), again):
        assert torch.equal(a, b), name
