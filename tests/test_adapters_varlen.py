"""Adapters with boolean masks and packed sequences: sdpa-math and flex run packed input as
a batch of one under the document mask; fully masked rows follow the protocol (out 0, lse
-inf, zero gradients) as the peers return them; undeclared packing is refused."""
from __future__ import annotations

import pytest
import torch

from flashcheck import peers, protocol
from flashcheck.cases.case import Case
from flashcheck.oracle import expectation
from flashcheck.oracle.backward_pass import gradients
from flashcheck.peers.common import TORCH, Peer
from flashcheck.peers.sdpa import _run_sdpa_math

PACKED = Case.packed(((3, 5), (0, 2), (2, 0), (4, 4), (1, 1)), heads=2, kv_heads=1, causal=True, dtype="float32",
                     layout="padded", seed=3)
MASKED = Case(batch=2, seqlen_q=6, seqlen_k=5, heads=2, mask="random:0.6,rows:1,cols:1,shape:B1QK", dtype="float32",
              seed=4)


@pytest.mark.parametrize("name", ["sdpa-math", "flex"])
@pytest.mark.parametrize("case", [PACKED, MASKED], ids=["packed", "masked"])
def test_adapter_matches_the_reference(name, case):
    impl = peers.resolve(name)
    assert {"varlen", "mask"} <= protocol.features_of(impl, "cpu")
    q, k, v = inputs = case.materialize()
    out, lse = protocol.call(impl, inputs, case)
    exp = expectation.expect(q, k, v, **case.attention_kwargs())
    exp.check_out(out)
    if lse is not None:
        exp.check_lse(lse)
    empty = (case.keys_per_row() == 0).expand(case.batch, case.heads, case.seqlen_q)
    rows_out = out.unsqueeze(0) if case.varlen else out
    assert (rows_out.transpose(1, 2)[empty] == 0).all()


@pytest.mark.parametrize("case", [PACKED, MASKED], ids=["packed", "masked"])
def test_sdpa_math_gradients_match_and_vanish_on_rows_without_keys(case):
    impl = peers.resolve("sdpa-math")
    inputs = case.materialize()
    (dq, dk, dv), grad_out, grad_lse = gradients(impl, case, inputs)
    expected = expectation.expect_gradients(*inputs, grad_out, grad_lse, **case.attention_kwargs())
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        expected.check(name, got)
    empty = (case.keys_per_row() == 0).expand(case.batch, case.heads, case.seqlen_q)
    dq4 = dq.unsqueeze(0) if case.varlen else dq
    assert empty.any() and (dq4.transpose(1, 2)[empty] == 0).all()


def test_packed_input_is_refused_without_the_feature():
    dense_only = Peer("dense-only", TORCH, {"cpu": frozenset({"causal", "mask"}) | protocol.DTYPE_NAMES}, _run_sdpa_math)
    with pytest.raises(NotImplementedError, match="varlen"):
        protocol.call(dense_only, PACKED.materialize(), PACKED)


def test_packed_arguments_are_validated_naming_the_argument():
    impl = peers.resolve("sdpa-math")
    q, k, v = PACKED.materialize()
    kwargs = PACKED.attention_kwargs()
    for name, bad in [("cu_seqlens_q", kwargs["cu_seqlens_q"].long()), ("max_seqlen_k", 1),
                      ("cu_seqlens_k", torch.tensor([0, 12], dtype=torch.int32))]:
        with pytest.raises((TypeError, ValueError), match=name):
            impl(q, k, v, **{**kwargs, name: bad})
    with pytest.raises(ValueError, match="attn_mask"):
        impl(q, k, v, **kwargs, attn_mask=torch.ones(PACKED.seqlen_q, PACKED.seqlen_k, dtype=torch.bool))
