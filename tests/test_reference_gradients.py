"""The float64 reference gradients: equal to autograd through the float64 reference
forward, pass gradcheck, are chunking-invariant, give exact zeros where nothing flows, and
their magnitudes bound what they describe."""

from __future__ import annotations

import pytest
import torch

from flashcheck import reference
from flashcheck.case import Case

CASES = [
    Case(seqlen_q=7, seqlen_k=9, heads=4, kv_heads=2, head_dim=5),
    Case(seqlen_q=9, seqlen_k=6, heads=3, kv_heads=1, head_dim=4, window=(2, 1)),
    Case(seqlen_q=8, seqlen_k=8, heads=2, kv_heads=2, head_dim=3, causal=True, softmax_scale=-0.7),
    Case(seqlen_q=5, seqlen_k=11, heads=6, kv_heads=3, head_dim=6, causal=True, window=(3, -1)),
]


def _inputs(case):
    q, k, v = (t.double() for t in case.materialize())
    generator = torch.Generator().manual_seed(case.seed + 1)
    grad_out = torch.randn(q.shape, generator=generator, dtype=torch.float64)
    grad_lse = torch.randn(case.batch, case.heads, case.seqlen_q, generator=generator, dtype=torch.float64)
    return q, k, v, grad_out, grad_lse


def _autograd(case, q, k, v, grad_out, grad_lse):
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse = reference.attention(*leaves, **case.attention_kwargs())
    loss = (out * grad_out).sum() + torch.where(torch.isfinite(lse), lse * grad_lse, 0.0).sum()
    return torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("case", [c for c in CASES if not c.has_empty_rows], ids=lambda c: c.spec()[:60])
@pytest.mark.parametrize("with_lse", [False, True])
def test_gradients_equal_autograd_of_the_reference_forward(case, with_lse):
    q, k, v, grad_out, grad_lse = _inputs(case)
    grad_lse = grad_lse if with_lse else torch.zeros_like(grad_lse)
    expected = _autograd(case, q, k, v, grad_out, grad_lse)
    got = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse if with_lse else None, **case.attention_kwargs())
    for name, want in zip(("dq", "dk", "dv"), expected):
        torch.testing.assert_close(getattr(got, name), want, rtol=1e-10, atol=1e-12, msg=name)


class _ReferenceAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, window):
        ctx.save_for_backward(q, k, v)
        ctx.mask = (causal, window)
        return reference.attention(q, k, v, causal=causal, window=window)

    @staticmethod
    def backward(ctx, grad_out, grad_lse):
        q, k, v = ctx.saved_tensors
        causal, window = ctx.mask
        grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, causal=causal, window=window)
        return grads.dq, grads.dk, grads.dv, None, None


@pytest.mark.parametrize("causal, window", [(False, (-1, -1)), (True, (-1, -1)), (False, (1, 1))])
def test_gradcheck_through_out_and_lse(causal, window):
    q, k, v = (t.double().requires_grad_() for t in Case(seqlen_q=4, seqlen_k=4, heads=2, kv_heads=1,
                                                          head_dim=3).materialize())
    assert torch.autograd.gradcheck(lambda *x: _ReferenceAttention.apply(*x, causal, window), (q, k, v))


def test_chunking_does_not_change_the_gradients(monkeypatch):
    case = CASES[3]
    q, k, v, grad_out, grad_lse = _inputs(case)
    whole = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **case.attention_kwargs())
    monkeypatch.setattr(reference, "CHUNK_ELEMENTS", case.batch * case.heads * case.seqlen_k * 2)
    chunked = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **case.attention_kwargs())
    for name in ("dq", "abs_dq", "p_abs_k", "abs_dp_max"):  # computed row by row: bitwise
        assert torch.equal(getattr(whole, name), getattr(chunked, name)), name
    for name in ("dk", "dv", "abs_dk", "abs_dv", "pt_abs_q"):  # summed over chunks: float64 order
        torch.testing.assert_close(getattr(chunked, name), getattr(whole, name), rtol=1e-12, atol=1e-15, msg=name)


def test_rows_without_keys_get_exactly_zero_dq_and_ignore_grad_lse():
    case = Case(seqlen_q=6, seqlen_k=3, heads=2, head_dim=4, causal=True)
    q, k, v, grad_out, grad_lse = _inputs(case)
    grads = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **case.attention_kwargs())
    assert (grads.dq[:, :3] == 0).all() and (grads.dq[:, 3:] != 0).any()
    changed = grad_lse.clone()
    changed[..., :3] = 1e6  # empty rows: lse is the constant -inf, its gradient goes nowhere
    again = reference.gradients(q, k, v, grad_out, grad_lse=changed, **case.attention_kwargs())
    assert all(torch.equal(getattr(grads, n), getattr(again, n)) for n in ("dq", "dk", "dv"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.spec()[:60])
def test_magnitudes_bound_the_gradients(case):
    q, k, v, grad_out, grad_lse = _inputs(case)
    g = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **case.attention_kwargs())
    slack = 1 + 1e-12
    assert (g.dq.abs() <= g.abs_dq * slack + 1e-300).all()
    assert (g.dk.abs() <= g.abs_dk * slack + 1e-300).all()
    assert (g.dv.abs() <= g.abs_dv * slack + 1e-300).all()
    assert (g.p_abs_k <= k.abs().amax() * slack).all() and (g.abs_dp_max >= 0).all()
