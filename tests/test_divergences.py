"""The causes that known divergences of torch's SDPA backends are confined to: each
predicate holds on the case the divergence was found on (recorded on an H100, see
flashcheck.peers.sdpa), and not on the same case in bfloat16 or on ordinary cases."""

from __future__ import annotations

import pytest
import torch

from flashcheck import peers, protocol
from flashcheck.cases.case import Case
from flashcheck.divergences import KnownDivergence, combined
from flashcheck.oracle.case_predicates import (
    backward_extremes, case_hidden_logit_lead, float16_backward_overflows, float16_subnormal_probabilities,
    sdpa_no_keys_backward_overflows, sdpa_no_keys_forward_overflows, sdpa_no_keys_forward_overflows_in_either_call,
    under,
)

#: sdpa-cudnn's dQ was NaN where -9147.75 is exact: |dS| reaches 1.0e5.
CUDNN_DS = Case.from_spec("batch=1 seqlen_q=127 seqlen_k=127 heads=1 kv_heads=1 head_dim=160 dtype=float16 "
                          "softmax_scale=1.0 values=outliers seed=122876")
#: sdpa-flash's dK was NaN where -12235.5 is exact: |dS| stays below 2e3, but one query
#: head's own dK reaches 3.0e5 (two query heads share the KV head).
FLASH_GQA = Case.from_spec("batch=1 seqlen_q=31 seqlen_k=31 heads=2 kv_heads=1 head_dim=16 dtype=float16 "
                           "values=offset-logits seed=68")
#: sdpa-efficient's dK was off by 1.9x its allowance: 96% of the probabilities are below 2^-14.
EFFICIENT_P = Case.from_spec("batch=1 seqlen_q=31 seqlen_k=31 heads=1 kv_heads=1 head_dim=16 dtype=float16 "
                             "values=large-logits seed=230")
#: sdpa-flash's dK was -inf where -628.6 is exact, on the dS-range property's scaled inputs
#: (q, k by 1/8, v by 64, dO of scale 1e3): there the exact |dS| reaches 6.9e4.
FLASH_DS_RANGE = Case.from_spec("batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=16 dtype=float16 seed=0")
ORDINARY = Case(batch=1, seqlen_q=8, seqlen_k=8, heads=2, kv_heads=1, head_dim=16, dtype="float16", seed=1)


def test_the_overflow_cause_holds_on_the_cases_where_the_peers_returned_nan():
    assert backward_extremes(CUDNN_DS).ds > 65504
    assert backward_extremes(FLASH_GQA).ds < 65504 < backward_extremes(FLASH_GQA).per_head_dk
    assert float16_backward_overflows(CUDNN_DS) and float16_backward_overflows(FLASH_GQA)


def test_a_per_head_overflow_counts_only_where_kv_heads_are_shared():
    assert not float16_backward_overflows(FLASH_GQA.replace(heads=1))


@pytest.mark.parametrize("case", [CUDNN_DS, FLASH_GQA, EFFICIENT_P])
def test_the_float16_causes_do_not_cover_bfloat16(case):
    bf16 = case.replace(dtype="bfloat16")
    assert not float16_backward_overflows(bf16) and not float16_subnormal_probabilities(bf16)


def test_the_subnormal_cause_holds_where_probabilities_fall_below_float16s_normal_range():
    assert float16_subnormal_probabilities(EFFICIENT_P)
    assert backward_extremes(ORDINARY).smallest_probability > 2.0**-14
    assert not float16_subnormal_probabilities(ORDINARY) and not float16_backward_overflows(ORDINARY)


def test_declared_reasons_become_divergences_of_every_case():
    impl = lambda q, k, v, **kwargs: None  # noqa: E731
    scoped = KnownDivergence("scoped", lambda case: case.causal)
    impl.flashcheck_known_divergences = {"deterministic": "a race", "out_matches_reference": scoped}
    known = protocol.known_divergences(impl)
    assert str(known["deterministic"]) == "a race" and not known["deterministic"].scoped
    assert known["deterministic"].explains(ORDINARY)
    assert known["out_matches_reference"].explains(ORDINARY.replace(causal=True))
    assert not known["out_matches_reference"].explains(ORDINARY)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
def test_the_fused_backends_gradient_divergences_are_confined_to_float16(name):
    known = protocol.known_divergences(peers.resolve(name))["grads_match_reference"]
    assert known.scoped and not known.explains(CUDNN_DS.replace(dtype="bfloat16"))
    assert known.explains(CUDNN_DS)


def _extremes_by_autograd(case: Case) -> tuple:
    """The extremes through autograd on all heads at once, KV heads repeated: dS is the
    gradient of the (scaled) scores, a query head's own dK and dV the gradients of its repeated copy."""
    from flashcheck.oracle.backward_inputs import upstream

    q, k, v = (t.to(torch.float64).transpose(1, 2) for t in case.materialize("cpu")[:3])
    group = case.heads // case.kv_heads
    k, v = (t.repeat_interleave(group, dim=1).detach().requires_grad_() for t in (k, v))
    q = q.detach().requires_grad_()
    allowed = case.allowed("cpu")
    has_keys = allowed.any(-1, keepdim=True)  # rows without keys get probability 0, gradient 0
    scores = (case.scale * q @ k.transpose(-1, -2)).masked_fill(~allowed, float("-inf")).masked_fill(~has_keys, 0.0)
    scores.retain_grad()
    probs = torch.softmax(scores, dim=-1) * has_keys
    grad_out = upstream(case, torch.empty(case.out_shape, dtype=case.torch_dtype), None)[0]
    grad_out = grad_out.to(torch.float64).transpose(1, 2)
    out = probs @ v
    out.backward(grad_out)
    probs = probs.detach()
    # ln(|scale·delta| / e^lse) on the rows with keys, delta = dO·O.
    quotient = (torch.log((case.scale * (grad_out * out.detach()).sum(-1)).abs())
                - torch.logsumexp(scores.detach(), dim=-1))[has_keys.expand_as(scores)[..., 0]]
    return (float(scores.grad.abs().max()), float(k.grad.abs().max()), float(v.grad.abs().max()),
            float(probs[probs > 0].min()), float(quotient.max()))


@pytest.mark.parametrize("case", [
    FLASH_GQA,
    Case(batch=2, seqlen_q=20, seqlen_k=24, heads=4, kv_heads=2, mask="random:0.5,shape:BHQK", dtype="float16"),
    Case(seqlen_q=20, seqlen_k=24, heads=4, kv_heads=1, mask="random:0.3,shape:1HQK", window=(3, 2)),
], ids=["gqa", "per-head-mask", "window-and-mask"])
def test_the_extremes_computed_head_by_head_match_autograd_on_all_heads(case):
    extremes = backward_extremes(case)
    ds, dk, dv, smallest, delta_quotient = _extremes_by_autograd(case)
    assert extremes.ds == pytest.approx(ds, rel=1e-9) and extremes.scaled_ds == pytest.approx(case.scale * ds, rel=1e-9)
    assert extremes.per_head_dk == pytest.approx(dk, rel=1e-9)
    assert extremes.per_head_dv == pytest.approx(dv, rel=1e-9)
    assert extremes.smallest_probability == pytest.approx(smallest, rel=1e-9)
    assert extremes.log_scaled_delta_over_row_sum == pytest.approx(delta_quotient, rel=1e-9)


def _scores_on_all_heads(case: Case):
    """Float64 scaled scores ``(B, H, Nq, Nk)`` on all heads at once, KV heads repeated, and the allowed keys."""
    q, k = (t.unsqueeze(0) if case.varlen else t for t in case.materialize("cpu")[:2])  # packed: a batch of one
    q, k = (t.to(torch.float64).transpose(1, 2) for t in (q, k))
    k = k.repeat_interleave(case.heads // case.kv_heads, dim=1)
    allowed = case.allowed("cpu").expand(case.batch, case.heads, case.seqlen_q, case.seqlen_k)
    return case.scale * q @ k.transpose(-1, -2), allowed


@pytest.mark.parametrize("case", [
    FLASH_GQA,
    Case(batch=2, seqlen_q=20, seqlen_k=24, heads=4, kv_heads=2, mask="random:0.5,shape:BHQK", dtype="float16"),
    Case(seqlen_q=20, seqlen_k=24, heads=4, kv_heads=1, mask="random:0.3,shape:1HQK", window=(3, 2)),
    Case.packed(((5, 7), (0, 3), (9, 4)), heads=2, kv_heads=1, causal=True, dtype="bfloat16"),
], ids=["gqa", "per-head-mask", "window-and-mask", "packed-causal"])
def test_the_lowest_row_lse_and_the_hidden_keys_lead_computed_head_by_head_match_all_heads_at_once(case):
    scores, allowed = _scores_on_all_heads(case)
    lse = torch.logsumexp(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    assert backward_extremes(case).lowest_lse == pytest.approx(float(lse[torch.isfinite(lse)].min()), rel=1e-12)
    best = scores.masked_fill(~allowed, float("-inf")).amax(dim=-1)
    hidden = scores.masked_fill(allowed, float("-inf")).amax(dim=-1)
    both = torch.isfinite(best) & torch.isfinite(hidden)
    lead = float((hidden - best)[both].max()) if both.any() else float("-inf")  # gqa: no key hidden
    assert case_hidden_logit_lead(case) == pytest.approx(lead, rel=1e-12)


def test_the_overflow_cause_is_computed_on_the_inputs_the_property_ran():
    assert backward_extremes(FLASH_DS_RANGE).ds < 65504 < backward_extremes(FLASH_DS_RANGE, "ds_range").ds
    assert not float16_backward_overflows(FLASH_DS_RANGE)
    assert under("ds_range", float16_backward_overflows)(FLASH_DS_RANGE)
    assert not under("ds_range", float16_backward_overflows)(FLASH_DS_RANGE.replace(dtype="bfloat16"))


def test_an_unknown_stress_is_refused():
    with pytest.raises(ValueError, match="stress"):
        backward_extremes(ORDINARY, "scaled")
    with pytest.raises(ValueError, match="stress"):
        under("scaled", float16_backward_overflows)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
def test_the_fused_backends_ds_range_divergences_are_confined_to_float16_overflow(name):
    known = protocol.known_divergences(peers.resolve(name))["grads_match_reference_where_ds_exceeds_float16"]
    assert known.scoped and known.explains(FLASH_DS_RANGE)
    assert not known.explains(FLASH_DS_RANGE.replace(dtype="bfloat16"))


#: Found by flashcheck: sdpa-math's out_matches_reference gave NaN in all 3712 elements.
SDPA_NO_KEYS = Case.from_spec("batch=1 seqlen_q=29 seqlen_k=0 heads=8 kv_heads=2 head_dim=16 dtype=float16 "
                              "values=offset-logits seed=0 seqlens=29:0")


def _frontend_takes_the_empty_key_shortcut() -> bool:
    """Whether this torch's SDPA returns NaN for an empty key axis and a q whose float16 sum
    overflows: torch 2.13 does (CI's pin); torch 2.11 returned 0 on the CPU and on an H100."""
    q = torch.full((1, 2, 8, 16), 300.0, dtype=torch.float16)
    empty = torch.zeros(1, 2, 0, 16, dtype=torch.float16)
    return bool(torch.nn.functional.scaled_dot_product_attention(q, empty, empty).isnan().any())


EMPTY_KEY_SHORTCUT = _frontend_takes_the_empty_key_shortcut()
needs_the_shortcut = pytest.mark.skipif(not EMPTY_KEY_SHORTCUT,
                                        reason="this torch's SDPA returns 0 without keys (torch 2.11 did)")


def test_a_sequence_with_queries_and_no_keys_has_output_zero_and_lse_minus_infinity():
    """The protocol's empty-row rule is what float64 arithmetic gives: softmax over no
    scores is empty, its product with no values is 0, the log-sum-exp of nothing is -inf;
    flashcheck's reference agrees."""
    from flashcheck.properties.common import expect

    q, k, v = (t.to(torch.float64) for t in SDPA_NO_KEYS.materialize("cpu"))
    group = SDPA_NO_KEYS.heads // SDPA_NO_KEYS.kv_heads
    scores = SDPA_NO_KEYS.scale * q.transpose(0, 1) @ k.transpose(0, 1).repeat_interleave(group, 0).transpose(-1, -2)
    assert scores.shape == (8, 29, 0)
    out = torch.softmax(scores, dim=-1) @ v.transpose(0, 1).repeat_interleave(group, 0)
    assert torch.equal(out, torch.zeros(8, 29, 16, dtype=torch.float64))
    assert torch.equal(torch.logsumexp(scores, dim=-1), torch.full((8, 29), float("-inf"), dtype=torch.float64))
    inputs = SDPA_NO_KEYS.materialize("cpu")
    exp = expect(peers.resolve("sdpa-math"), SDPA_NO_KEYS, inputs)
    assert not exp.expected_out.any() and bool((exp.expected_lse == float("-inf")).all())


@needs_the_shortcut
def test_sdpa_maths_nan_without_keys_comes_from_torchs_frontend_not_from_the_adapter():
    """The adapter hands torch the problem as it is (an empty key axis); torch's public
    SDPA returns NaN on it, the math backend's own operator 0: the shortcut the frontend
    takes for empty inputs, ``zeros + (q.sum() + k.sum() + v.sum())·0`` in float16, is at fault."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = SDPA_NO_KEYS.materialize("cpu")
    out, _ = peers.resolve("sdpa-math")(q, k, v, **SDPA_NO_KEYS.attention_kwargs())
    assert bool(out.isnan().all())
    qb, kb, vb = (t.unsqueeze(0).transpose(1, 2) for t in (q, k, v))  # (1, H, N, D), as the adapter passes them
    assert float(qb.sum()) == float("inf")  # Σq = 65593.5 rounds to inf in float16
    with sdpa_kernel(SDPBackend.MATH):
        public = torch.nn.functional.scaled_dot_product_attention(qb, kb, vb, scale=SDPA_NO_KEYS.scale, enable_gqa=True)
    assert bool(public.isnan().all())
    math_op = torch.ops.aten._scaled_dot_product_attention_math(qb, kb.repeat_interleave(4, 1),
                                                                vb.repeat_interleave(4, 1), scale=SDPA_NO_KEYS.scale)[0]
    assert not math_op.any() and not math_op.isnan().any()


@pytest.mark.parametrize("case, nan", [
    (SDPA_NO_KEYS, True),
    (SDPA_NO_KEYS.replace(values="normal"), False),  # Σq = -13.2
    (SDPA_NO_KEYS.replace(dtype="bfloat16"), False),
    (SDPA_NO_KEYS.replace(dtype="float32"), False),
    (Case(batch=2, seqlen_q=29, seqlen_k=0, heads=8, kv_heads=2, dtype="float16", values="offset-logits"), True),
    (Case(batch=1, seqlen_q=3, seqlen_k=0, heads=2, kv_heads=1, dtype="float16", values="offset-logits"), False),
], ids=["found", "normal-values", "bfloat16", "float32", "dense", "small-sum"])
def test_the_empty_key_cause_holds_exactly_where_sdpa_math_returns_nan(case, nan):
    q, k, v = case.materialize("cpu")
    out, _ = peers.resolve("sdpa-math")(q, k, v, **case.attention_kwargs())
    assert nan == sdpa_no_keys_forward_overflows(case)
    assert bool(out.isnan().any()) == (nan and EMPTY_KEY_SHORTCUT)


def test_the_empty_key_divergences_cover_no_case_with_keys():
    """Rows without keys in a call that has keys (a causal band, a packed sequence without
    keys beside one with keys) come out exactly right: not covered."""
    with_keys = [Case(seqlen_q=6, seqlen_k=3, causal=True, values="offset-logits"),
                 Case.packed(((29, 0), (2, 3)), heads=8, kv_heads=2, values="offset-logits")]
    known = protocol.known_divergences(peers.resolve("sdpa-math"))
    empty_key = {name: d for name, d in known.items() if name != "layout_invariance"}
    for name in ("out_matches_reference", "outputs_finite", "empty_rows_exact", "varlen_matches_separate_calls",
                 "grads_match_reference_where_ds_exceeds_float16"):  # Σq 6.6e4, or dO scaled by 1e3: -1.8e5
        assert empty_key[name].explains(SDPA_NO_KEYS), name
    assert not empty_key["grads_match_reference"].explains(SDPA_NO_KEYS)  # its dO, of scale 1, sums to 29.9
    for name, divergence in empty_key.items():
        assert divergence.scoped and not any(divergence.explains(case) for case in with_keys), name


#: A case without keys whose seeded upstream gradient (scale 1e3) sums to -9.3e4; q sums to -22.
NO_KEYS_LARGE_DO = Case(seqlen_q=29, seqlen_k=0, heads=8, kv_heads=2, dtype="float16", seed=14)


@pytest.mark.parametrize("case, nan", [(NO_KEYS_LARGE_DO, True), (NO_KEYS_LARGE_DO.replace(seed=2), False)],
                         ids=["sum-overflows", "sum-within-range"])
def test_the_backward_cause_holds_exactly_where_sdpa_maths_dq_is_nan(case, nan):
    """dQ = dO.sum()·0: NaN where the seeded dO sums beyond float16's range (seed 2's,
    also of scale 1e3, sums to -2.5e4)."""
    from flashcheck.oracle.backward_pass import gradients

    (dq, _, _), _, _ = gradients(peers.resolve("sdpa-math"), case, case.materialize("cpu"))
    assert nan == sdpa_no_keys_backward_overflows(case)
    assert bool(dq.isnan().any()) == (nan and EMPTY_KEY_SHORTCUT)
    assert not sdpa_no_keys_forward_overflows(case)


#: A case without keys whose own q sums within float16's range while the fresh q that
#: batch_head_independence's second call puts around its kept group sums beyond it.
NO_KEYS_OTHER_CALL_OVERFLOWS = SDPA_NO_KEYS.replace(seed=4)


def test_the_empty_key_cause_of_batch_head_independence_looks_at_both_calls():
    from flashcheck.cases.case import one_group_kept

    inputs, other, *_ = one_group_kept(NO_KEYS_OTHER_CALL_OVERFLOWS, "cpu")
    assert float(inputs.q.sum()) != float("inf") and float(other.q.sum()) == float("inf")  # as SDPA sums them
    assert not sdpa_no_keys_forward_overflows(NO_KEYS_OTHER_CALL_OVERFLOWS)
    assert sdpa_no_keys_forward_overflows_in_either_call(NO_KEYS_OTHER_CALL_OVERFLOWS)
    assert sdpa_no_keys_forward_overflows_in_either_call(SDPA_NO_KEYS)
    assert not sdpa_no_keys_forward_overflows_in_either_call(SDPA_NO_KEYS.replace(values="normal"))
    assert not sdpa_no_keys_forward_overflows_in_either_call(Case(seqlen_q=6, seqlen_k=3, values="offset-logits"))


@pytest.mark.parametrize("case", [SDPA_NO_KEYS, NO_KEYS_LARGE_DO, SDPA_NO_KEYS.replace(values="normal"),
                                  NO_KEYS_OTHER_CALL_OVERFLOWS],
                         ids=["found", "large-upstream-gradient", "normal-values", "other-call-overflows"])
def test_sdpa_math_without_keys_fails_only_as_declared(case):
    """Every property on a case without keys either holds for sdpa-math or fails as a
    declared divergence that covers the case."""
    from flashcheck.oracle.compare import Violation
    from flashcheck.properties import PROPERTIES

    impl = peers.resolve("sdpa-math")
    known = protocol.known_divergences(impl)
    failed = set()
    for prop in PROPERTIES.values():
        if not prop.runnable(protocol.features_of(impl, "cpu"), case, device="cpu"):
            continue
        try:
            prop.check(impl, case, device="cpu")
        except Violation:
            failed.add(prop.name)
            assert prop.name in known and known[prop.name].explains(case), prop.name
    assert ("out_matches_reference" in failed) == (sdpa_no_keys_forward_overflows(case) and EMPTY_KEY_SHORTCUT)
    assert ("grads_match_reference" in failed) == (sdpa_no_keys_backward_overflows(case) and EMPTY_KEY_SHORTCUT)


def test_the_negative_scale_divergence_covers_negative_scales_only():
    from flashcheck.divergences import NEGATIVE_SCALE

    spec = "batch=1 seqlen_q=4 seqlen_k=4 heads=2 kv_heads=1 head_dim=16 dtype=float16 seed=0"
    assert NEGATIVE_SCALE.explains(Case.from_spec(spec + " softmax_scale=-1.0"))
    assert not NEGATIVE_SCALE.explains(Case.from_spec(spec + " softmax_scale=1.0"))
    assert not NEGATIVE_SCALE.explains(Case.from_spec(spec))  # the default scale is positive


def test_a_divergence_declared_on_every_property_joins_each_propertys_own():
    from flashcheck.divergences import KnownDivergence, NEGATIVE_SCALE
    from flashcheck.peers.common import Library, Peer
    from flashcheck.properties import PROPERTIES

    own = KnownDivergence("dQ by atomics", lambda case: case.seqlen_q == 7)
    peer = Peer("p", Library("m", ("d",)), {"cpu": {"float32"}}, lambda *a: None,
                known_divergences={"backward_deterministic": own}, every_property=NEGATIVE_SCALE)
    known = peer.flashcheck_known_divergences
    assert set(known) == set(PROPERTIES)
    both = known["backward_deterministic"]
    spec = "batch=1 seqlen_k=4 heads=2 kv_heads=1 head_dim=16 dtype=float32 seed=0"
    assert both.explains(Case.from_spec(f"seqlen_q=7 {spec}"))
    assert both.explains(Case.from_spec(f"seqlen_q=4 {spec} softmax_scale=-2.0"))
    assert not both.explains(Case.from_spec(f"seqlen_q=4 {spec}"))
    assert str(own) in str(both) and str(NEGATIVE_SCALE) in str(both)


def test_the_scaled_ds_extreme_is_a_magnitude_under_a_negative_scale():
    # |scale·dS| is what a kernel storing the scaled dS in float16 must hold: a negative scale
    # must not turn it into a negative number that never reaches the overflow threshold.
    from flashcheck.oracle.case_predicates import backward_extremes

    spec = "batch=1 seqlen_q=1 seqlen_k=75 heads=9 kv_heads=9 head_dim=128 dtype=float16 layout=mixed values=normal seed=157"
    negative = backward_extremes(Case.from_spec(spec + " softmax_scale=-2.0"), "ds_range")
    positive = backward_extremes(Case.from_spec(spec + " softmax_scale=2.0"), "ds_range")
    assert negative.scaled_ds == pytest.approx(2.0 * negative.ds) and negative.scaled_ds > 0
    assert positive.scaled_ds == pytest.approx(2.0 * positive.ds)


def test_a_raise_is_explained_only_by_a_divergence_declared_to_raise():
    numerical = KnownDivergence("wrong on causal cases", lambda case: case.causal)
    refusal = KnownDivergence("refuses causal cases", lambda case: case.causal, raises=True)
    causal = Case(causal=True)
    assert numerical.explains(causal) and not numerical.explains(causal, raised=True)
    assert refusal.explains(causal, raised=True) and not refusal.explains(Case(), raised=True)
    assert combined(numerical, refusal).explains(causal, raised=True), "the refusal explains it"
    assert not combined(numerical, refusal).explains(Case(), raised=True), "neither covers a plain case"
    assert not combined(numerical, numerical).explains(causal, raised=True), "no part says it raises"


def test_a_raise_declared_with_its_message_explains_that_error_alone():
    refusal = KnownDivergence("refuses causal cases at launch", lambda case: case.causal, raises=True,
                              raising="no kernel found")
    causal = Case(causal=True)
    assert refusal.explains(causal, raised=True, message="cutlassF: no kernel found to launch!")
    assert not refusal.explains(causal, raised=True, message="CUDA out of memory"), "another error on its cases"
    assert refusal.explains(causal), "a check's rejection on its cases stays explained"


def test_an_error_declared_without_wrong_results_leaves_a_rejected_result_on_its_cases_unexplained():
    """A configuration reused where it does not fit raises; the same cases computed are expected right."""
    error_alone = KnownDivergence("raises OutOfResources at head dims above 128", lambda case: case.head_dim > 128,
                                  raises=True, raising="OutOfResources", wrong_results=False)
    wide = Case(head_dim=192)
    assert error_alone.explains(wide, raised=True, message="OutOfResources: out of resource: shared memory")
    assert not error_alone.explains(wide), "a wrong result there is another finding"
    assert not combined(error_alone).explains(wide)


def test_combined_divergences_keep_each_part_to_its_own_cases():
    wide_refusal = KnownDivergence("refuses causal cases", lambda case: case.causal, raises=True)
    narrow_numerical = KnownDivergence("wrong with GQA", lambda case: case.kv_heads < case.heads)
    both = combined(narrow_numerical, combined(wide_refusal, narrow_numerical))
    gqa = Case(heads=4, kv_heads=2)
    assert both.explains(gqa) and not both.explains(gqa, raised=True), "a raise on a case only the numerical covers"
    assert both.explains(Case(causal=True), raised=True)
    assert both.scoped and not both.explains(Case())


def test_of_divergences_declared_together_the_one_that_explains_a_failure_is_named():
    causal = KnownDivergence("causal cases", lambda case: case.causal)
    raising = KnownDivergence("refuses head dim 8", lambda case: case.head_dim == 8, raises=True, raising="refused")
    together = combined(causal, raising)
    spec = "batch=1 seqlen_q=4 seqlen_k=4 heads=1 kv_heads=1 dtype=float32 seed=0"
    assert together.explaining(Case.from_spec(f"{spec} head_dim=8 causal=True")) is causal
    assert together.explaining(Case.from_spec(f"{spec} head_dim=8"), raised=True, message="refused") is raising
    assert together.explaining(Case.from_spec(f"{spec} head_dim=8 causal=True"), raised=True,
                               message="out of memory") is None, "no part declares that error"
    assert together.explaining(Case.from_spec(f"{spec} head_dim=16")) is None
    assert causal.explaining(Case.from_spec(f"{spec} head_dim=16 causal=True")) is causal
