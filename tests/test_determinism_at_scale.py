"""Bitwise determinism of the backward pass where races would show: on a GPU, with a batch
× heads large enough to fill every multiprocessor and sequences spanning many blocks, so
that any accumulation whose order depends on scheduling (atomics, split reductions) gets
the chance to reorder.

The project kernel must be bitwise deterministic. A peer that declares the property a
known divergence (``flashcheck_known_divergences``) is reported as an expected failure
carrying the evidence (how many elements differed), not as a failure of the suite. Each
check's verdict comes from :func:`flashcheck.engine.verdict.decide`, as in the suite and fuzzing.
"""

from __future__ import annotations

import pytest
import torch

from flashcheck import peers
from flashcheck.cases.case import Case
from flashcheck.engine.verdict import Outcome, decide
from flashcheck.properties import PROPERTIES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: races show only on a GPU"),
]

#: 4 x 32 query heads (8 KV heads) of 2048 queries and keys: 4096 query blocks of 64 rows.
WIDE = Case(batch=4, seqlen_q=2048, seqlen_k=2048, heads=32, kv_heads=8, head_dim=128, dtype="bfloat16", seed=3)
REPEATS = 3  # each check compares two backward passes


@pytest.mark.parametrize("impl_name", ["flash", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_backward_bitwise_deterministic_at_scale(impl_name, causal):
    impl = peers.resolve(impl_name)
    case = WIDE.replace(causal=causal)
    for repeat in range(REPEATS):
        checked = case.replace(seed=case.seed + repeat)
        verdict = decide(PROPERTIES["backward_deterministic"], impl, checked, device="cuda", impl_name=impl_name)
        if verdict.outcome is Outcome.DECLINED:
            pytest.skip(f"{impl_name} declines {checked.spec()}: {verdict.reason}")
        if verdict.outcome is Outcome.KNOWN:
            pytest.xfail(f"known divergence of {impl_name} ({verdict.reason}), observed: {verdict.failure}")
        if verdict.outcome is Outcome.FLASHCHECK_ERROR:
            raise verdict.error
        if verdict.outcome is not Outcome.PASSED:
            pytest.fail(str(verdict), pytrace=False)
