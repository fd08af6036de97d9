"""Every property has teeth: a kernel with one planted bug that the property catches,
on a case chosen to expose that bug, while the correct kernel passes the same case.

Cases span several key blocks at the GPU's block sizes too (a bug in the rescale between
blocks cannot show in a single block). Other properties may catch the same mutant too; what matters here is that each property
is shown to fail for a real bug and not only for the correct kernel never.
"""

from __future__ import annotations

import pytest

from flashcheck.cases.case import Case
from flashcheck.kernels import flash_attention
from flashcheck.oracle.compare import Violation
from flashcheck.properties import PROPERTIES

from tests.support import buggy, mutants

GQA = dict(heads=4, kv_heads=2)

#: Found by flashcheck in the project kernel (fixed): float16 outliers with upstream gradients
#: of scale 1e3 give |dS| above 65504 while the exact dQ and dK are about 3e3.
FLOAT16_DS_OVERFLOW = (
    "batch=1 seqlen_q=16 seqlen_k=16 heads=7 kv_heads=1 head_dim=32 dtype=float16 causal=False "
    "window=-1,-1 softmax_scale=None layout=contiguous values=outliers seed=315278"
)

#: An ordinary float16 case: the dS-range property scales it into the overflow regime itself.
FLOAT16_DS_RANGE = Case(seqlen_q=16, seqlen_k=16, heads=2, head_dim=32, dtype="float16")

#: Packed sequences with Nq != Nk, one without queries and a length-1 one, several blocks long.
PACKED = Case.packed(((5, 19), (0, 3), (21, 7), (1, 1), (17, 24)), heads=2, kv_heads=1, causal=True)

# (property, mutant, case that exposes it). Mutants that write out of bounds into memory the
# test does not own (backward_varlen_writes_past_sequence_end) are caught by the guarded
# launcher tests of tests/test_kernel_varlen_mask.py instead: the interpreter checks no
# bounds, and a stray store into the heap can take the test process down.
CAUGHT = [
    ("out_matches_reference", "mask_right_off_by_one", Case(seqlen_q=20, seqlen_k=20, causal=True)),
    ("out_matches_reference", "mask_left_off_by_one", Case(seqlen_q=20, seqlen_k=24, window=(2, 1))),
    ("out_matches_reference", "drop_rescale", Case(seqlen_q=8, seqlen_k=200, values="large-logits")),
    ("out_matches_reference", "drop_normalisation", Case(seqlen_q=5, seqlen_k=7)),
    ("out_matches_reference", "finite_sentinel", Case(seqlen_q=5, seqlen_k=19, values="offset-logits")),
    ("out_matches_reference", "gqa_modulo_mapping", Case(seqlen_q=3, seqlen_k=5, heads=4, kv_heads=2)),
    ("lse_matches_reference", "lse_in_log2", Case(seqlen_q=3, seqlen_k=9)),
    ("lse_matches_reference", "drop_last_key", Case(seqlen_q=3, seqlen_k=9)),
    ("outputs_finite", "no_max_subtraction", Case(seqlen_q=4, seqlen_k=18, values="large-logits")),
    ("outputs_finite", "unguarded_empty_rows", Case(seqlen_q=6, seqlen_k=3, causal=True)),
    ("empty_rows_exact", "unguarded_empty_rows", Case(seqlen_q=6, seqlen_k=3, causal=True)),
    ("key_permutation_invariance", "drop_last_key", Case(seqlen_q=4, seqlen_k=21)),
    ("key_shift_invariance", "finite_sentinel", Case(seqlen_q=4, seqlen_k=21, seed=2)),
    ("key_shift_invariance", "no_max_subtraction", Case(seqlen_q=4, seqlen_k=21, seed=1)),
    ("value_linearity", "accumulator_bias", Case(seqlen_q=4, seqlen_k=21)),
    ("gqa_matches_repeated_kv", "gqa_modulo_mapping", Case(seqlen_q=3, seqlen_k=5, heads=4, kv_heads=2)),
    ("batch_head_independence", "kv_batch_halved", Case(batch=2, seqlen_q=3, seqlen_k=5, seed=1)),
    ("layout_invariance", "contiguous_query_assumed", Case(seqlen_q=5, seqlen_k=5, layout="heads-first", **GQA)),
    # Only the mixed layout gives k and v different strides.
    ("out_matches_reference", "v_read_with_k_strides", Case(seqlen_q=5, seqlen_k=7, layout="mixed")),
    ("layout_invariance", "v_read_with_k_strides", Case(seqlen_q=5, seqlen_k=7, layout="mixed", **GQA)),
    ("inputs_unchanged", "output_into_q", Case(seqlen_q=5, seqlen_k=5)),
    ("outputs_written_in_bounds", "store_past_last_row", Case(seqlen_q=5, seqlen_k=5)),
    ("outputs_written_in_bounds", "last_column_unwritten", Case(seqlen_q=5, seqlen_k=5, head_dim=24)),
    # backward
    ("grads_match_reference", "drop_delta", Case(seqlen_q=20, seqlen_k=20, dtype="float32")),
    ("grads_match_reference", "float16_ds_overflows", Case.from_spec(FLOAT16_DS_OVERFLOW)),
    ("grads_match_reference", "float16_ds_bound_inverted", Case.from_spec(FLOAT16_DS_OVERFLOW)),
    ("grads_match_reference_where_ds_exceeds_float16", "float16_ds_overflows", FLOAT16_DS_RANGE),
    ("grads_match_reference_where_ds_exceeds_float16", "float16_ds_bound_inverted", FLOAT16_DS_RANGE),
    ("unseen_keys_get_zero_gradient", "backward_ignores_band", Case(seqlen_q=8, seqlen_k=20, window=(2, 1))),
    ("empty_rows_get_zero_dq", "unguarded_empty_rows_backward", Case(seqlen_q=6, seqlen_k=3, causal=True)),
    ("gqa_grads_match_repeated_kv", "first_head_of_group_only", Case(seqlen_q=5, seqlen_k=7, heads=4, kv_heads=2)),
    ("backward_leaves_inputs_unchanged", "dq_stored_into_q", Case(seqlen_q=5, seqlen_k=5)),
    # packed variable-length sequences
    ("varlen_matches_separate_calls", "varlen_query_offset_off_by_one", PACKED),
    ("nan_padding_never_leaks", "varlen_keys_read_to_max_seqlen", Case.packed(((21, 24), (3, 7)), heads=2, kv_heads=1)),
    ("future_keys_cannot_change_output", "varlen_band_from_total_lengths", PACKED),
    # boolean masks
    ("out_matches_reference", "mask_broadcast_strides_ignored", Case(batch=2, seqlen_q=20, seqlen_k=24, heads=2,
                                                                     mask="random:0.5,shape:B1QK")),
    ("grads_match_reference", "backward_ignores_mask", Case(seqlen_q=20, seqlen_k=24, mask="random:0.5",
                                                            dtype="float32")),
    ("masked_keys_with_huge_logits_change_nothing", "mask_multiplied_after_exp",
     Case(seqlen_q=20, seqlen_k=24, mask="random:0.5")),
    ("future_keys_cannot_change_output", "mask_multiplied_after_exp", Case(seqlen_q=20, seqlen_k=24, mask="random:0.5")),
    ("mask_equal_to_band_matches_flag", "mask_right_off_by_one", Case(seqlen_q=20, seqlen_k=20, causal=True)),
    ("padded_batch_matches_unpadded", "mask_broadcast_strides_ignored",
     Case(batch=3, seqlen_q=9, seqlen_k=24, mask="key-padding:5/0/17")),
]


@pytest.mark.parametrize(
    "property_name, mutation, case", CAUGHT, ids=[f"{p}-catches-{m}" for p, m, _ in CAUGHT]
)
def test_property_catches_planted_bug(property_name, mutation, case):
    prop = PROPERTIES[property_name]
    prop.check(flash_attention, case)  # the correct kernel passes this very case
    with pytest.raises(Violation):
        prop.check(mutants.mutant(mutation), case)


@pytest.mark.parametrize(
    "property_name, racy",
    [("deterministic", mutants.nondeterministic), ("backward_deterministic", mutants.nondeterministic_backward)],
)
def test_determinism_catches_a_race(property_name, racy):
    prop = PROPERTIES[property_name]
    case = Case(seqlen_q=16, seqlen_k=16, heads=2)
    prop.check(flash_attention, case)
    with pytest.raises(Violation, match="not exactly equal"):
        prop.check(racy(flash_attention), case)


#: Properties of masks and packed sequences shown to catch bugs independently of the project
#: kernel too: (property, pure-torch implementation with a planted bug, case that exposes
#: it). The correct pure-torch implementation (tests/support/buggy.py) passes each case.
SMALL_PACKED = dict(heads=2, kv_heads=1, causal=True)
CAUGHT_WITHOUT_KERNEL = [
    ("varlen_matches_separate_calls", "across_documents", Case.packed(((3, 4), (2, 5), (4, 2)), **SMALL_PACKED)),
    ("nan_padding_never_leaks", "reads_past_the_end", Case.packed(((3, 4), (2, 5)), **SMALL_PACKED)),
    ("future_keys_cannot_change_output", "leaky_mask",
     Case(seqlen_q=6, seqlen_k=9, mask="random:0.5", dtype="float32", seed=3)),
    ("masked_keys_with_huge_logits_change_nothing", "additive_mask",
     Case(seqlen_q=6, seqlen_k=9, mask="random:0.5", seed=3)),
    ("mask_equal_to_band_matches_flag", "ignores_mask", Case(seqlen_q=7, seqlen_k=7, causal=True)),
    ("padded_batch_matches_unpadded", "ignores_mask", Case(batch=2, seqlen_q=4, seqlen_k=6, mask="key-padding:3/6")),
    ("out_matches_reference", "ignores_mask", Case(seqlen_q=4, seqlen_k=6, mask="random:0.5")),
    ("empty_rows_exact", "additive_mask", Case(seqlen_q=4, seqlen_k=6, mask="random:1.0,rows:2")),
    ("layout_invariance", "stride_dependent_rounding", Case(seqlen_q=4, seqlen_k=6, layout="padded")),
]


@pytest.mark.parametrize(
    "property_name, bug, case", CAUGHT_WITHOUT_KERNEL, ids=[f"{p}-catches-{b}" for p, b, _ in CAUGHT_WITHOUT_KERNEL]
)
def test_mask_and_packing_properties_catch_planted_bugs(property_name, bug, case):
    prop = PROPERTIES[property_name]
    assert prop.applies(case)
    prop.check(buggy.correct, case, device="cpu")
    with pytest.raises(Violation):
        prop.check(getattr(buggy, bug), case, device="cpu")


#: Properties measurable on CUDA only (``Property.devices``): (property, pure-torch
#: implementation with a planted bug, case). The correct pure-torch implementation and the
#: project kernel pass each case.
CAUGHT_ON_CUDA = [
    ("repeated_calls_do_not_grow_memory", "leaks_memory", Case(seqlen_q=20, seqlen_k=24, heads=2, kv_heads=1)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("property_name, bug, case", CAUGHT_ON_CUDA,
                         ids=[f"{p}-catches-{b}" for p, b, _ in CAUGHT_ON_CUDA])
def test_cuda_only_properties_catch_planted_bugs(property_name, bug, case):
    prop = PROPERTIES[property_name]
    prop.check(buggy.correct, case, device="cuda")
    prop.check(flash_attention, case, device="cuda")
    planted = getattr(buggy, bug)
    try:
        with pytest.raises(Violation):
            prop.check(planted, case, device="cuda")
    finally:
        getattr(planted, "held", []).clear()


def test_every_property_has_a_catching_mutant():
    covered = {name for name, _, _ in CAUGHT + CAUGHT_WITHOUT_KERNEL + CAUGHT_ON_CUDA}
    covered |= {"deterministic", "backward_deterministic"}
    assert covered == set(PROPERTIES), f"properties without a planted bug: {set(PROPERTIES) - covered}"


def test_every_mutation_applies_to_the_kernel_source():
    for name, (fragment, _, _) in mutants.MUTATIONS.items():
        assert mutants.SOURCES["forward"].count(fragment) == 1, name
    for name, (fragment, _, _) in mutants.BACKWARD_MUTATIONS.items():
        assert mutants.SOURCES["backward"].count(fragment) >= 1, name


@pytest.mark.parametrize("layout", ["contiguous", "heads-first", "padded"])
def test_value_linearity_gives_every_v_the_cases_layout(layout):
    """V2 and V1 + V2 are laid out as V is, so that each call runs the layout the case names: a
    kernel that reads V with K's strides holds wherever K and V share strides ..."""
    case = Case(seqlen_q=4, seqlen_k=6, heads=2, kv_heads=2, layout=layout)
    PROPERTIES["value_linearity"].check(buggy.values_strided_like_keys, case, device="cpu")


@pytest.mark.parametrize("layout", ["heads-first", "padded"])
@pytest.mark.parametrize("name", ["key_shift_invariance", "key_permutation_invariance"])
def test_keys_made_anew_keep_the_cases_layout(name, layout):
    """Shifted or permuted keys (and values) are laid out as the case's, so that K and V still
    share their strides where the case says they do: a kernel reading V with K's strides holds."""
    case = Case(seqlen_q=4, seqlen_k=6, heads=2, kv_heads=2, layout=layout)
    PROPERTIES[name].check(buggy.values_strided_like_keys, case, device="cpu")


def test_a_kernel_reading_v_with_k_strides_fails_the_mixed_layout():
    """... and fails where they do not, under the case that says so."""
    case = Case(seqlen_q=4, seqlen_k=6, heads=2, kv_heads=2, layout="mixed")
    with pytest.raises(Violation):
        PROPERTIES["out_matches_reference"].check(buggy.values_strided_like_keys, case, device="cpu")


def test_value_linearity_keeps_the_layout_so_a_layout_dependence_is_layout_invariances_to_report():
    """Negating or doubling a padded V keeps it padded: rounding that depends on the layout
    fails layout_invariance (above), not value_linearity."""
    case = Case(seqlen_q=4, seqlen_k=6, layout="padded")
    PROPERTIES["value_linearity"].check(buggy.stride_dependent_rounding, case, device="cpu")
