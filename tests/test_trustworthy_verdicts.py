"""Verdicts a user can trust under hostile input: a correct implementation on an unusual
path passes, and a faulty one is reported for its real cause."""

from __future__ import annotations

import pytest

from flashcheck.case import Case
from flashcheck.properties import PROPERTIES

from tests import unusual

#: Cases without a single key: dense (Nk = 0) and packed (one sequence, queries but no keys).
NO_KEYS = [
    Case(seqlen_q=3, seqlen_k=0, heads=2, kv_heads=1, dtype="float32"),
    Case.packed(((3, 0),), heads=2, kv_heads=1, dtype="float32"),
]


def _runnable(impl, case):
    return [p for p in PROPERTIES.values() if p.runnable(impl.flashcheck_features, case)]


@pytest.mark.parametrize("impl", [unusual.constant_zeros_without_keys, unusual.zeros_from_q_only_without_keys],
                         ids=lambda impl: impl.__name__)
@pytest.mark.parametrize("case", NO_KEYS, ids=["dense", "packed"])
def test_an_input_the_outputs_do_not_depend_on_has_a_zero_gradient(impl, case):
    """Without keys the outputs are constants; an implementation may build them without
    touching k and v (or any input): autograd then has no path to those inputs, whose
    gradient is exactly zero, and every property that takes gradients holds."""
    taking_gradients = {"grads_match_reference", "empty_rows_get_zero_dq", "backward_deterministic",
                        "backward_leaves_inputs_unchanged", "gqa_grads_match_repeated_kv"}
    runnable = _runnable(impl, case)
    assert taking_gradients <= {p.name for p in runnable}
    for prop in runnable:
        prop.check(impl, case, device="cpu")
