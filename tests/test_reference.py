"""The float64 reference (flashcheck.oracle.reference) against the protocol's definition.

The oracle here is deliberately naive and independent of flashcheck.oracle.reference and
flashcheck.cases.masks: explicit Python loops over (b, h, i) and j, the allowed set written from
the protocol text (query i attends key j iff ``i + Nk - Nq - left <= j <= i + Nk - Nq + right``,
-1 unbounded, causal = right bound 0), ``math.exp``/``math.log`` on Python floats, and GQA as
query head h reading KV head ``h // (H // Hkv)``. Sizes stay tiny (Nq, Nk <= 7, D <= 5).

Also covered: chunking invariance of the reference, the extra magnitudes of
``reference.evaluate``, ``masks.keys_per_row`` and ``masks.effective_window``, and the
same-precision attention ``flashcheck.oracle.same_precision``.
"""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from flashcheck.cases import masks
from flashcheck.oracle import reference, same_precision

INF = math.inf


# -- the naive oracle -----------------------------------------------------------------------
def allowed_keys(i, nq, nk, causal, window):
    """The keys query ``i`` may attend, straight from the protocol text."""
    left, right = window
    if causal:
        right = 0
    diagonal = i + nk - nq
    return [
        j for j in range(nk)
        if (left == -1 or diagonal - left <= j) and (right == -1 or j <= diagonal + right)
    ]


def naive_attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None):
    """Attention by loops over Python floats; returns a dict of float64 tensors shaped like
    the fields of ``reference.Reference``."""
    batch, nq, heads, dim = q.shape
    nk, kv_heads = k.shape[1], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    group = heads // kv_heads
    Q, K, V = (t.double().tolist() for t in (q, k, v))
    out = [[[[0.0] * dim for _ in range(heads)] for _ in range(nq)] for _ in range(batch)]
    abs_pv = [[[[0.0] * dim for _ in range(heads)] for _ in range(nq)] for _ in range(batch)]
    lse = [[[-INF] * nq for _ in range(heads)] for _ in range(batch)]
    max_abs_logit = [[[0.0] * nq for _ in range(heads)] for _ in range(batch)]
    max_abs_dot = [[[0.0] * nq for _ in range(heads)] for _ in range(batch)]
    keys = [len(allowed_keys(i, nq, nk, causal, window)) for i in range(nq)]
    for b in range(batch):
        for h in range(heads):
            kv = h // group
            for i in range(nq):
                js = allowed_keys(i, nq, nk, causal, window)
                if not js:
                    continue  # out 0, lse -inf, magnitudes 0
                logits = {}
                for j in js:
                    dot = 0.0
                    abs_dot = 0.0
                    for d in range(dim):
                        dot += Q[b][i][h][d] * K[b][j][kv][d]
                        abs_dot += abs(Q[b][i][h][d] * K[b][j][kv][d])
                    logits[j] = scale * dot
                    max_abs_logit[b][h][i] = max(max_abs_logit[b][h][i], abs(scale * dot))
                    max_abs_dot[b][h][i] = max(max_abs_dot[b][h][i], abs(scale) * abs_dot)
                m = max(logits.values())
                total = 0.0
                for j in js:
                    total += math.exp(logits[j] - m)
                lse[b][h][i] = m + math.log(total)
                for j in js:
                    p = math.exp(logits[j] - m) / total
                    for d in range(dim):
                        out[b][i][h][d] += p * V[b][j][kv][d]
                        abs_pv[b][i][h][d] += p * abs(V[b][j][kv][d])

    def tensor(x, shape):
        return torch.tensor(x, dtype=torch.float64).reshape(shape)

    return {
        "out": tensor(out, (batch, nq, heads, dim)),
        "lse": tensor(lse, (batch, heads, nq)),
        "abs_pv": tensor(abs_pv, (batch, nq, heads, dim)),
        "max_abs_logit": tensor(max_abs_logit, (batch, heads, nq)),
        "max_abs_dot": tensor(max_abs_dot, (batch, heads, nq)),
        "keys": torch.tensor(keys, dtype=torch.int64).reshape(1, 1, nq).expand(batch, heads, nq),
    }


def make_inputs(batch, nq, nk, heads, kv_heads, dim, *, seed=0, dtype=torch.float64, std=1.0):
    generator = torch.Generator().manual_seed(seed)
    q = (torch.randn(batch, nq, heads, dim, generator=generator, dtype=torch.float64) * std).to(dtype)
    k = (torch.randn(batch, nk, kv_heads, dim, generator=generator, dtype=torch.float64) * std).to(dtype)
    v = torch.randn(batch, nk, kv_heads, dim, generator=generator, dtype=torch.float64).to(dtype)
    return q, k, v


def assert_matches_naive(result: reference.Reference, expected: dict, context: str = ""):
    """Field by field, within float64 rounding (the orders of summation differ)."""
    for name in ("out", "lse", "abs_pv", "max_abs_logit", "max_abs_dot"):
        got = getattr(result, name)
        assert got.dtype == torch.float64, f"{name} must be float64 {context}"
        torch.testing.assert_close(got, expected[name], rtol=1e-12, atol=1e-12, msg=lambda m: f"{name} {context}: {m}")
    assert torch.equal(result.keys.cpu(), expected["keys"]), f"keys {context}"


# -- the reference against the oracle --------------------------------------------------------
#: (batch, nq, nk, heads, kv_heads, dim, causal, window, softmax_scale)
CASES = {
    "square": (1, 5, 5, 1, 1, 4, False, (-1, -1), None),
    "fewer queries than keys": (2, 3, 7, 2, 2, 3, False, (-1, -1), None),
    "more queries than keys": (1, 7, 3, 2, 2, 5, False, (-1, -1), None),
    "causal square": (1, 6, 6, 2, 1, 4, True, (-1, -1), None),
    "causal fewer queries (bottom-right)": (1, 3, 7, 1, 1, 4, True, (-1, -1), None),
    "causal more queries: empty leading rows": (2, 7, 3, 2, 1, 3, True, (-1, -1), None),
    "causal with left window": (1, 6, 7, 2, 2, 2, True, (2, -1), None),
    "causal with window (left, 0)": (1, 6, 7, 1, 1, 2, True, (1, 0), None),
    "two-sided window": (1, 6, 6, 1, 1, 4, False, (1, 2), None),
    "left-only window": (1, 4, 7, 1, 1, 3, False, (0, -1), None),
    "right-only window": (1, 7, 4, 1, 1, 3, False, (-1, 1), None),
    "diagonal only": (1, 5, 5, 1, 1, 3, False, (0, 0), None),
    "window leaving rows empty": (1, 7, 2, 2, 1, 3, False, (0, 0), None),
    "window past the end leaves rows empty": (1, 7, 3, 1, 1, 3, False, (2, 1), None),
    "GQA 4 heads over 2": (2, 4, 5, 4, 2, 3, False, (-1, -1), None),
    "MQA 3 heads over 1": (1, 4, 5, 3, 1, 3, True, (-1, -1), None),
    "GQA with window": (1, 5, 6, 6, 2, 2, False, (1, 1), None),
    "custom scale": (1, 4, 5, 2, 1, 4, False, (-1, -1), 0.7),
    "negative scale": (1, 4, 5, 2, 2, 4, False, (-1, -1), -0.45),
    "negative scale causal": (1, 5, 3, 1, 1, 4, True, (-1, -1), -1.3),
    "zero scale is uniform": (1, 3, 4, 1, 1, 2, False, (-1, -1), 0.0),
    "no keys": (2, 4, 0, 2, 1, 3, False, (-1, -1), None),
    "no keys causal": (1, 3, 0, 1, 1, 3, True, (1, -1), None),
    "no queries": (1, 0, 4, 1, 1, 3, False, (-1, -1), None),
    "single query single key": (1, 1, 1, 1, 1, 1, False, (-1, -1), None),
    "head dim 1": (1, 3, 4, 2, 1, 1, True, (-1, -1), None),
}


@pytest.mark.parametrize("config", CASES.values(), ids=CASES.keys())
def test_reference_matches_the_naive_loop(config):
    batch, nq, nk, heads, kv_heads, dim, causal, window, scale = config
    q, k, v = make_inputs(batch, nq, nk, heads, kv_heads, dim, seed=nq * 31 + nk)
    kwargs = dict(causal=causal, window=window, softmax_scale=scale)
    result = reference.evaluate(q, k, v, **kwargs)
    assert_matches_naive(result, naive_attention(q, k, v, **kwargs))
    out, lse = reference.attention(q, k, v, **kwargs)
    assert torch.equal(out, result.out) and torch.equal(lse, result.lse)
    assert out.shape == (batch, nq, heads, dim) and lse.shape == (batch, heads, nq)


def test_reference_matches_the_naive_loop_over_every_small_band():
    """Every window (left, right) in {-1..3}^2, with and without causal, over Nq, Nk <= 4."""
    checked = 0
    for nq, nk in itertools.product(range(0, 5), range(0, 5)):
        q, k, v = make_inputs(1, nq, nk, 2, 1, 2, seed=7 * nq + nk)
        for left, right, causal in itertools.product(range(-1, 4), range(-1, 4), (False, True)):
            if causal and right not in (-1, 0):
                continue
            kwargs = dict(causal=causal, window=(left, right))
            assert_matches_naive(
                reference.evaluate(q, k, v, **kwargs), naive_attention(q, k, v, **kwargs),
                context=f"nq={nq} nk={nk} {kwargs}",
            )
            checked += 1
    assert checked > 500


def test_empty_rows_are_exactly_zero_with_lse_minus_infinity():
    # Nq=7, Nk=3 causal: offset -4, so queries 0..3 have no allowed key.
    q, k, v = make_inputs(2, 7, 3, 2, 1, 4, seed=3)
    result = reference.evaluate(q, k, v, causal=True)
    empty = torch.tensor([True] * 4 + [False] * 3)
    assert torch.equal(result.keys, torch.tensor([0, 0, 0, 0, 1, 2, 3]).expand(2, 2, 7))
    assert (result.out[:, empty] == 0).all()
    assert (result.abs_pv[:, empty] == 0).all()
    assert (result.lse[:, :, empty] == -INF).all()
    assert (result.max_abs_logit[:, :, empty] == 0).all() and (result.max_abs_dot[:, :, empty] == 0).all()
    assert torch.isfinite(result.lse[:, :, ~empty]).all()
    assert not result.out.isnan().any()


def test_no_keys_gives_zero_output_and_minus_infinity_lse():
    q, k, v = make_inputs(2, 3, 0, 2, 2, 4)
    out, lse = reference.attention(q, k, v)
    assert out.shape == (2, 3, 2, 4) and torch.equal(out, torch.zeros_like(out))
    assert lse.shape == (2, 2, 3) and (lse == -INF).all()


def test_reference_accepts_low_precision_inputs_exactly():
    """Inputs of any dtype are widened exactly: the result equals that on the float64 copy."""
    q, k, v = make_inputs(1, 4, 5, 2, 1, 3, dtype=torch.float16)
    low = reference.evaluate(q, k, v, causal=True)
    wide = reference.evaluate(q.double(), k.double(), v.double(), causal=True)
    for a, b in zip(low, wide):
        assert torch.equal(a, b)
    assert low.out.dtype == torch.float64 and low.lse.dtype == torch.float64


def test_reference_is_stable_for_large_logits():
    """Logits of several hundred must not overflow: the max is subtracted."""
    q, k, v = make_inputs(1, 4, 5, 1, 1, 4, std=40.0, seed=5)
    result = reference.evaluate(q, k, v)
    assert result.max_abs_logit.max() > 710  # exp would overflow even in float64
    assert torch.isfinite(result.out).all() and torch.isfinite(result.lse).all()
    assert_matches_naive(result, naive_attention(q, k, v))


def test_reference_runs_on_the_inputs_device(device):
    q, k, v = (t.to(device) for t in make_inputs(1, 3, 4, 2, 1, 3))
    result = reference.evaluate(q, k, v, causal=True)
    for field in result:
        assert field.device.type == device


# -- chunking invariance -------------------------------------------------------------------
@pytest.mark.parametrize("budget", [1, 2 * 2 * 7, 3 * 2 * 2 * 7 + 5], ids=["one row", "two rows", "three rows"])
@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(causal=True), dict(window=(2, 1)), dict(causal=True, window=(1, -1), softmax_scale=-0.6)],
    ids=["full", "causal", "window", "causal-window-negative-scale"],
)
def test_chunking_does_not_change_a_single_bit(monkeypatch, budget, kwargs):
    """Chunks of 1, 2 or 3 query rows (7 rows, so the last chunk is partial) give bitwise
    the same result as one chunk. elements_per_row = B * H * Nk = 2 * 2 * 7."""
    q, k, v = make_inputs(2, 7, 7, 2, 1, 5, seed=11)
    whole = reference.evaluate(q, k, v, **kwargs)
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", budget)
    chunked = reference.evaluate(q, k, v, **kwargs)
    for name, a, b in zip(reference.Reference._fields, whole, chunked):
        assert torch.equal(a, b), name


def test_chunking_does_not_change_empty_rows(monkeypatch):
    q, k, v = make_inputs(1, 7, 3, 2, 2, 3, seed=2)
    whole = reference.evaluate(q, k, v, causal=True)
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", 1)
    chunked = reference.evaluate(q, k, v, causal=True)
    for name, a, b in zip(reference.Reference._fields, whole, chunked):
        assert torch.equal(a, b), name


# -- masks ---------------------------------------------------------------------------------
def test_keys_per_row_counts_the_band():
    for nq, nk in itertools.product(range(0, 9), range(0, 9)):
        for left, right in itertools.product(range(-1, 10), range(-1, 10)):
            counts = masks.keys_per_row(nq, nk, left, right)
            band = masks.band(torch.arange(nq), nq, nk, left, right)
            assert counts.dtype == torch.int64 and counts.shape == (nq,)
            assert torch.equal(counts, band.sum(1)), (nq, nk, left, right)
            naive = [len(allowed_keys(i, nq, nk, False, (left, right))) for i in range(nq)]
            assert counts.tolist() == naive, (nq, nk, left, right)


def test_band_follows_the_docstring_example():
    """Nq=3, Nk=5 causal: query 0 sees keys 0..2, query 1 keys 0..3, query 2 all."""
    allowed = masks.band(torch.arange(3), 3, 5, *masks.effective_window(True, (-1, -1)))
    assert allowed.int().tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    # Nq=5, Nk=3: queries 0 and 1 see nothing.
    assert masks.keys_per_row(5, 3, -1, 0).tolist() == [0, 0, 1, 2, 3]


@pytest.mark.parametrize(
    "causal, window, expected",
    [
        (False, (-1, -1), (-1, -1)),
        (False, (3, 2), (3, 2)),
        (False, [0, 0], (0, 0)),
        (True, (-1, -1), (-1, 0)),
        (True, (4, -1), (4, 0)),
        (True, (4, 0), (4, 0)),
    ],
)
def test_effective_window_folds_causal_into_the_right_bound(causal, window, expected):
    assert masks.effective_window(causal, window) == expected


@pytest.mark.parametrize(
    "causal, window, error",
    [
        (True, (-1, 3), ValueError),  # causal fixes the right bound to 0
        (True, (2, 1), ValueError),
        (False, (-2, 0), ValueError),
        (False, (0, -5), ValueError),
        (False, (3,), TypeError),
        (False, (1, 2, 3), TypeError),
        (False, 4, TypeError),
        (False, None, TypeError),
        (False, (True, 0), TypeError),
        (False, (0, False), TypeError),
        (False, (1.0, 2), TypeError),
        (False, "12", TypeError),
    ],
)
def test_effective_window_rejects_bad_windows_naming_window(causal, window, error):
    with pytest.raises(error, match="window"):
        masks.effective_window(causal, window)


# -- plain (same-precision standard attention) -------------------------------------------
#: Unit roundoff of each dtype.
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24}
FP32 = 2.0**-24


def plain_error_bound(ref: reference.Reference, dtype, head_dim, seqlen_k):
    """A loose (factor 4) first-order bound on plain's error, stated per output.

    out: rounding the probabilities and the output to ``dtype`` costs ``u (Σp|v| + |out|)``;
    float32 logits are off by at most ``(D + 2) u32 max|scale q·k|``-ish, which moves the
    output by up to twice that times ``Σp|v|``.
    lse: the logit error, plus the float32 sum over Nk keys, plus rounding ``|lse|``.
    """
    u = UNIT_ROUNDOFF[dtype]
    logit_error = (head_dim + 2) * FP32 * ref.max_abs_dot
    out_bound = 4 * (
        u * (ref.abs_pv + ref.out.abs()) + 2 * logit_error.transpose(1, 2)[..., None] * ref.abs_pv
    )
    lse_bound = 4 * (logit_error + (seqlen_k + 2) * FP32 + FP32 * ref.lse.abs().nan_to_num(posinf=0, neginf=0))
    return out_bound + 1e-30, lse_bound + 1e-30


PLAIN_CASES = {
    "square": (2, 33, 33, 2, 2, 16, False, (-1, -1), None),
    "causal more queries": (1, 40, 17, 4, 2, 8, True, (-1, -1), None),
    "causal fewer queries": (1, 9, 40, 2, 1, 32, True, (-1, -1), None),
    "window with empty rows": (1, 30, 12, 3, 1, 8, False, (2, 0), None),
    "negative scale": (1, 20, 25, 2, 2, 16, False, (-1, -1), -0.3),
    "no keys": (1, 5, 0, 2, 1, 8, False, (-1, -1), None),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("config", PLAIN_CASES.values(), ids=PLAIN_CASES.keys())
def test_plain_agrees_with_the_reference_within_its_precision(config, dtype):
    batch, nq, nk, heads, kv_heads, dim, causal, window, scale = config
    q, k, v = make_inputs(batch, nq, nk, heads, kv_heads, dim, seed=nq + nk, dtype=dtype)
    kwargs = dict(causal=causal, window=window, softmax_scale=scale)
    out, lse = same_precision.attention(q, k, v, **kwargs)
    assert out.dtype == dtype and out.shape == q.shape
    assert lse.dtype == torch.float32 and lse.shape == (batch, heads, nq)
    ref = reference.evaluate(q, k, v, **kwargs)
    out_bound, lse_bound = plain_error_bound(ref, dtype, dim, nk)
    out_error = (out.double() - ref.out).abs()
    assert (out_error <= out_bound).all(), f"out error {out_error.max():.3g}, worst excess {(out_error - out_bound).max():.3g}"
    finite = torch.isfinite(ref.lse)
    assert torch.equal(torch.isfinite(lse), finite)
    lse_error = (lse.double() - ref.lse)[finite].abs()
    assert (lse_error <= lse_bound[finite]).all(), f"lse error {lse_error.max():.3g}"

    empty = ref.keys[0, 0] == 0  # band only: the same for every batch entry and head
    assert (out[:, empty] == 0).all(), "plain: rows with no allowed key must be exactly 0"
    assert (lse[:, :, empty] == -INF).all(), "plain: rows with no allowed key must have lse -inf"


def test_plain_empty_rows_are_exactly_zero():
    q, k, v = make_inputs(1, 9, 3, 2, 1, 4, dtype=torch.float16)
    out, lse = same_precision.attention(q, k, v, causal=True)
    assert (out[:, :6] == 0).all() and not out.isnan().any()
    assert (lse[:, :, :6] == -INF).all() and torch.isfinite(lse[:, :, 6:]).all()
