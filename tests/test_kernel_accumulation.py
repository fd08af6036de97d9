"""float32 sums of ``P·V`` (and of the backward's block products) are formed block by block:
each block's dot is summed on its own and only then added to the running sum.

Found on four H200s by unseeded campaigns: on ``values=constant`` cases (every probability
of a row alike) the float32 output was 2.3 to 3.5 times over the aggregate rule's limit, the
more the longer the rows. Triton folds ``acc += tl.dot(p, v)`` into a dot that accumulates
into ``acc``; an FMA dot then runs the products of every key as one chain of multiply-adds,
and on like terms the chain's roundings do not average out: summing 5937 copies of 1.82 in
one float32 chain is off by 1.2e-4, in blocks of 64 by 6e-7. Triton's interpreter computes a
dot as one NumPy product, whose summation order is its own, so only a GPU shows the chain.
"""

from __future__ import annotations

import pytest

from flashcheck.cases.case import Case
from flashcheck.kernels import mutations
from flashcheck.oracle.compare import Violation
from flashcheck.properties import PROPERTIES

#: The campaigns' longest counterexample, 5937 keys per row; it and the shorter ones hold on the
#: kernel as kept in ``kernels/counterexamples.toml`` (``tests/test_kernel_counterexamples.py``).
LONGEST_ROW = Case.from_spec("batch=1 seqlen_q=5937 seqlen_k=5937 heads=1 kv_heads=1 head_dim=19 dtype=float32 "
                             "causal=False window=-1,-1 softmax_scale=None layout=padded values=constant seed=0")


@pytest.mark.gpu
def test_the_longest_row_catches_p_v_summed_in_one_chain(device):
    mutant = mutations.implementation(mutations.MUTATIONS["pv_summed_in_one_chain"])
    with pytest.raises(Violation):
        PROPERTIES["out_matches_reference"].check(mutant, LONGEST_ROW, device=device)
