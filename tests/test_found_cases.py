"""Cases on which fuzzing flagged a correct implementation: flaws of the suite itself, fixed.
Each stays here, replayed on the implementations that showed it, so the flaw cannot return."""

from __future__ import annotations

import pytest

from flashcheck import peers
from flashcheck.cases.case import Case
from flashcheck.properties import PROPERTIES

#: Found on an H200 by `flashcheck fuzz --impl sdpa-math --workers 2` (and reproduced on the
#: CPU, for the project kernel too): float16 logits offset by thousands make some per-head
#: gradients of the repeated-K/V case overflow to +inf and -inf, whose group sum is NaN,
#: while the GQA gradient itself is a correct inf.
GQA_GROUP_SUM_OF_INFINITIES = Case.from_spec(
    "batch=1 seqlen_q=2 seqlen_k=2 heads=7 kv_heads=1 head_dim=16 dtype=float16 causal=False window=-1,-1 "
    "softmax_scale=None layout=contiguous values=offset-logits seed=7919"
)

#: Found by CPU CI's derandomized draws (flash and sdpa-math): per-head gradients finite, but
#: their group sum (69139, -80976) beyond float16's range, where the GQA gradient is a correct ±inf.
GQA_GROUP_SUMS_BEYOND_FLOAT16 = [Case.from_spec(spec) for spec in (
    "batch=1 seqlen_q=32 seqlen_k=10 heads=7 kv_heads=1 head_dim=30 dtype=float16 causal=False window=0,-1 "
    "softmax_scale=None layout=contiguous values=outliers seed=87332045",
    "batch=1 seqlen_q=15 seqlen_k=15 heads=2 kv_heads=1 head_dim=32 dtype=float16 causal=False window=-1,-1 "
    "softmax_scale=None layout=contiguous values=offset-logits seed=2834",
)]

FOUND = [("gqa_grads_match_repeated_kv", case, impl)
         for case in (GQA_GROUP_SUM_OF_INFINITIES, *GQA_GROUP_SUMS_BEYOND_FLOAT16) for impl in ("flash", "sdpa-math")]


@pytest.mark.parametrize("property_name, case, impl_name", FOUND, ids=[f"{p}-{i}-{c.seed}" for p, c, i in FOUND])
def test_a_correct_implementation_passes_a_case_that_once_flagged_it(property_name, case, impl_name, device):
    PROPERTIES[property_name].check(peers.resolve(impl_name), case, device=device)
