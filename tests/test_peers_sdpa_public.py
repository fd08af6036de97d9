"""The sdpa-public-* adapters: torch's public ``F.scaled_dot_product_attention`` with one
backend forced.

sdpa-public-math runs here for real: flashcheck's properties hold for it on the CPU on cases
with a mask, a window, causal with Nq != Nk, GQA, rows without keys and every layout, with
the interpreter-size tolerances unchanged. The fused CUDA backends cannot run on the CPU:
their translation is checked by spying on the public function, and their declines by torch's
own ``torch.backends.cuda.can_use_*`` checks, which refuse everything on a CPU.
"""
from __future__ import annotations

import pytest
import torch

from flashcheck import protocol
from flashcheck.cases.case import Case
from flashcheck.oracle.case_predicates import float16_backward_overflows
from flashcheck.peers import sdpa, sdpa_public
from flashcheck.properties import PROPERTIES
from flashcheck.protocol import features_of
from tests.support import peer_fakes

#: Small cases, interpreter-size: a mask, windows, causal with Nq != Nk, GQA, empty rows, layouts.
SPECS = [
    "batch=2 seqlen_q=5 seqlen_k=9 heads=4 kv_heads=2 head_dim=16 dtype=float32 causal=True window=3,-1 "
    "mask=random:0.3 seed=5",
    "batch=1 seqlen_q=9 seqlen_k=5 heads=2 kv_heads=1 head_dim=8 dtype=float32 causal=True seed=6",
    "batch=2 seqlen_q=7 seqlen_k=11 heads=3 kv_heads=3 head_dim=24 dtype=bfloat16 window=2,1 layout=heads-first seed=7",
    "batch=1 seqlen_q=6 seqlen_k=6 heads=4 kv_heads=1 head_dim=16 dtype=float16 mask=random:0.5,shape:B1QK "
    "layout=padded seed=8",
    "batch=2 seqlen_q=4 seqlen_k=12 heads=2 kv_heads=2 head_dim=32 dtype=float32 window=0,0 softmax_scale=-0.5 "
    "layout=mixed seed=9",
]
PROPERTY_NAMES = ["out_matches_reference", "outputs_finite", "empty_rows_exact", "grads_match_reference",
                  "unseen_keys_get_zero_gradient", "mask_equal_to_band_matches_flag", "gqa_matches_repeated_kv",
                  "future_keys_cannot_change_output", "masked_keys_with_huge_logits_change_nothing"]
RUNS = [(name, spec) for name in PROPERTY_NAMES for spec in SPECS
        if PROPERTIES[name].runnable(features_of(sdpa_public.math(), "cpu"), Case.from_spec(spec))]


@pytest.mark.parametrize("name, spec", RUNS, ids=[f"{n}-{Case.from_spec(s).seed}" for n, s in RUNS])
def test_sdpa_public_math_holds_flashcheck_s_properties_on_the_cpu(name, spec):
    PROPERTIES[name].check(sdpa_public.math(), Case.from_spec(spec), device="cpu")


def test_every_listed_property_ran_on_some_case():
    assert {name for name, _ in RUNS} == set(PROPERTY_NAMES)


@pytest.fixture
def spy(monkeypatch):
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention

    def recording(q, k, v, **kwargs):
        calls.append(dict(q=q, k=k, v=v, **kwargs))
        return real(q, k, v, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording)
    return calls


def test_plain_causal_with_nq_equal_nk_uses_torch_s_is_causal(spy):
    q, k, v = peer_fakes.inputs(2, 6, 6, 4, 2, 16, dtype=torch.float32)
    out, lse = sdpa_public.math()(q, k, v, causal=True)
    call = spy[-1]
    assert call["is_causal"] is True and call["attn_mask"] is None and call["enable_gqa"] is True
    assert call["q"].shape == (2, 4, 6, 16) and call["q"].data_ptr() == q.data_ptr(), "a transposed view"
    assert call["scale"] == pytest.approx(0.25) and call["dropout_p"] == 0.0
    assert lse is None and out.shape == q.shape


@pytest.mark.parametrize("nq, nk, causal, window", [(5, 9, True, (-1, -1)), (9, 5, True, (-1, -1)),
                                                     (6, 6, True, (2, -1)), (7, 7, False, (1, 1))])
def test_any_other_band_is_one_bottom_right_boolean_mask_never_the_top_left_is_causal(spy, nq, nk, causal, window):
    q, k, v = peer_fakes.inputs(1, nq, nk, 2, 2, 8, dtype=torch.float32)
    out, _ = sdpa_public.math()(q, k, v, causal=causal, window=window)
    call = spy[-1]
    left, right = (None if side == -1 else side for side in window)
    assert call["is_causal"] is False
    assert torch.equal(call["attn_mask"].reshape(nq, nk), peer_fakes.band(nq, nk, left, 0 if causal else right))
    torch.testing.assert_close(out, peer_fakes.reference(q, k, v, causal=causal, window=window)[0])


@pytest.mark.parametrize("suffix", ["flash", "efficient", "cudnn"])
def test_a_fused_backend_that_torch_says_cannot_run_the_case_is_declined_before_the_call(spy, suffix):
    impl = peer_fakes.on_cpu(getattr(sdpa_public, suffix)())
    with pytest.raises(NotImplementedError, match=rf"sdpa-public-{suffix}: torch.backends.cuda.can_use_\w+ refuses"):
        impl(*peer_fakes.inputs(1, 4, 4, 2, 2, 16))
    assert not spy


def test_a_fused_backend_that_torch_says_can_run_the_case_runs_under_sdpa_kernel(spy, monkeypatch):
    asked = []
    monkeypatch.setattr(torch.backends.cuda, "can_use_flash_attention",
                        lambda params, debug: asked.append(params) or True)
    q, k, v = peer_fakes.inputs(2, 6, 6, 4, 2, 16)
    out, _ = peer_fakes.on_cpu(sdpa_public.flash())(q, k, v, causal=True)  # torch's CPU flash kernel
    assert asked and spy[-1]["is_causal"] is True
    torch.testing.assert_close(out, peer_fakes.reference(q, k, v, causal=True)[0], atol=2e-3, rtol=2e-3)


def test_the_fused_backends_carry_the_divergences_measured_on_their_kernels():
    assert "layout_invariance" in sdpa_public.math().flashcheck_known_divergences
    for suffix in ("flash", "efficient"):
        assert "backward_deterministic" in getattr(sdpa_public, suffix)().flashcheck_known_divergences
    for suffix in ("flash", "efficient", "cudnn"):
        assert "grads_match_reference" in getattr(sdpa_public, suffix)().flashcheck_known_divergences


@pytest.mark.parametrize("prop", ["out_matches_reference", "grads_match_reference", "backward_deterministic"])
def test_the_efficient_backend_s_launch_failure_on_unaligned_views_is_declared_on_those_views_alone(prop):
    # torch's bug (docs/repros/sdpa_efficient_unaligned_view.py): declared on every property, the
    # numerical divergences of the same property kept to their own cases.
    known = sdpa_public.efficient().flashcheck_known_divergences[prop]
    launch = "cutlassF: no kernel found to launch!"
    spec = "batch=1 seqlen_q=6 seqlen_k=17 heads=2 kv_heads=2 head_dim=64 dtype=bfloat16 seed=0"
    for layout in ("padded", "mixed"):
        assert known.explains(Case.from_spec(f"{spec} layout={layout}"), raised=True, message=launch)
    aligned = Case.from_spec(f"{spec} layout=heads-first")
    assert not known.explains(aligned, raised=True, message=launch), "an aligned view that fails to launch"
    assert not known.explains(Case.from_spec(f"{spec} layout=padded"), raised=True, message="CUDA out of memory")


@pytest.mark.parametrize("suffix", ["flash", "cudnn"])
def test_the_backends_that_fault_on_unaligned_views_decline_them_naming_torch_s_bug(spy, suffix, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda, f"can_use_{suffix}_attention", lambda params, debug: True)
    impl = peer_fakes.on_cpu(getattr(sdpa_public, suffix)())
    case = Case.from_spec("batch=1 seqlen_q=6 seqlen_k=6 heads=2 kv_heads=2 head_dim=16 dtype=float16 seed=0 "
                          "layout=padded")
    with pytest.raises(NotImplementedError, match="not 16-byte aligned.*torch bug"):
        impl(*case.materialize("cpu"))
    assert not spy, "declined before the call"


def test_unaligned_views_of_a_head_dim_torch_pads_are_not_declined(spy, monkeypatch):
    # torch pads a head dim off a multiple of 8 into a new, aligned tensor before the flash kernel.
    monkeypatch.setattr(torch.backends.cuda, "can_use_flash_attention", lambda params, debug: True)
    odd = Case.from_spec("batch=1 seqlen_q=6 seqlen_k=6 heads=2 kv_heads=2 head_dim=15 dtype=float16 seed=0 "
                         "layout=padded")
    peer_fakes.on_cpu(sdpa_public.flash())(*odd.materialize("cpu"))
    assert spy, "called"


def test_cudnn_s_domain_leaves_out_the_layouts_it_cannot_take_and_layout_invariance_stays_inside():
    domain = sdpa_public.cudnn().flashcheck_case_domain_by_device["cuda"]
    assert set(domain["layouts"]) == {"contiguous", "heads-first"}


def test_layout_invariance_compares_within_the_layouts_an_implementation_declares():
    from flashcheck.cases.case import other_layout

    contiguous = Case.from_spec("batch=1 seqlen_q=6 seqlen_k=6 heads=2 kv_heads=2 head_dim=16 dtype=float16 seed=0")
    assert other_layout(contiguous) == "padded"
    assert other_layout(contiguous, frozenset({"contiguous", "heads-first"})) == "heads-first"
    assert other_layout(contiguous.replace(layout="heads-first"), frozenset({"contiguous", "heads-first"})) == "contiguous"


def test_cudnn_s_nonzero_rows_without_keys_are_declared_on_those_cases_alone():
    known = sdpa_public.cudnn().flashcheck_known_divergences["out_matches_reference"]
    base = "batch=1 heads=2 kv_heads=2 head_dim=16 dtype=float16 causal=True seed=0"
    assert known.explains(Case.from_spec(f"seqlen_q=3 seqlen_k=2 {base}")), "bottom-right causal, Nq > Nk"
    assert not known.explains(Case.from_spec(f"seqlen_q=2 seqlen_k=3 {base}"))


def test_torch_s_refusal_reasons_are_read_from_its_cpp_warnings_too():
    lines = ["[W1128 20:37:28.544362405 sdp_utils_cpp.h:418] Warning: For dense input, both fused kernels require "
             "query, key and value to have the same num_heads. (function check_batch_size_and_num_heads_dense)",
             "unrelated line"]
    assert sdpa_public._cpp_warnings(lines) == [
        "For dense input, both fused kernels require query, key and value to have the same num_heads."]


def test_what_torch_writes_to_stderr_during_its_check_is_read_and_the_rest_passes_through(capfd):
    import os

    with sdpa_public._stderr_lines() as lines:
        os.write(2, b"[W1 x.h:1] Warning: a reason (function f)\nsomething else\n")
    assert lines == ["[W1 x.h:1] Warning: a reason (function f)", "something else"]
    assert "something else" in capfd.readouterr().err


def test_layout_invariance_on_the_efficient_backend_declares_the_launch_failure_where_it_compares_unaligned_views():
    known = sdpa_public.efficient().flashcheck_known_divergences["layout_invariance"]
    launch = "cutlassF: no kernel found to launch!"
    spec = "batch=1 seqlen_q=6 seqlen_k=17 heads=2 kv_heads=2 head_dim=64 dtype=bfloat16 seed=0"
    assert known.explains(Case.from_spec(f"{spec} layout=contiguous"), raised=True, message=launch), "relaid: padded"
    assert not known.explains(Case.from_spec(f"{spec} layout=heads-first"), raised=True, message=launch)


def test_cudnn_s_leak_through_outlier_values_is_declared_where_a_mask_hides_them():
    known = sdpa_public.cudnn().flashcheck_known_divergences["out_matches_reference"]
    spec = "batch=1 seqlen_q=64 seqlen_k=64 heads=1 kv_heads=1 head_dim=64 dtype=float16 seed=0 softmax_scale=2.0"
    assert known.explains(Case.from_spec(f"{spec} values=outliers window=-1,0"))  # a campaign's case: a mask
    assert not known.explains(Case.from_spec(f"{spec} values=outliers causal=True")), "is_causal: no mask"
    assert not known.explains(Case.from_spec(f"{spec} values=normal window=-1,0"))



@pytest.mark.parametrize("adapter", [sdpa_public.flash, sdpa.sdpa_flash], ids=["sdpa-public-flash", "sdpa-flash"])
def test_flash_s_float16_offset_values_divergence_covers_the_gradients_of_float16_offset_cases_alone(adapter):
    from flashcheck.peers.common import gradient_properties

    known = adapter().flashcheck_known_divergences
    # A campaign's case on the H200: dQ inf where float64 gives -3347.0, as a plain float16 backward.
    offset = Case.from_spec("batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=16 dtype=float16 "
                            "causal=False window=-1,-1 softmax_scale=None layout=contiguous values=offset-values seed=197")
    assert all(known[name].explains(offset) for name in gradient_properties() if name != "backward_deterministic")
    for other in (offset.replace(dtype="bfloat16"), offset.replace(values="normal")):
        assert not known["grads_match_reference"].explains(other), other.spec()
    assert "out_matches_reference" not in known or not known["out_matches_reference"].explains(offset)


@pytest.mark.parametrize("adapter", [sdpa_public.flash, sdpa.sdpa_flash, sdpa.sdpa_cudnn],
                         ids=["sdpa-public-flash", "sdpa-flash", "sdpa-cudnn"])
def test_flash_s_domain_keeps_causal_lengths_equal_as_is_causal_is_aligned_at_the_top_left(adapter):
    domain = protocol.case_domain_of(adapter(), "cuda")
    spec = "batch=1 heads=1 kv_heads=1 head_dim=64 dtype=float16 seed=0"
    assert domain.outside_because(Case.from_spec(f"{spec} seqlen_q=8 seqlen_k=16 causal=True"))
    assert domain.outside_because(Case.from_spec(f"{spec} seqlen_q=8 seqlen_k=16")) is None
    assert domain.outside_because(Case.from_spec(f"{spec} seqlen_q=8 seqlen_k=8 causal=True")) is None


@pytest.mark.parametrize("adapter", [sdpa_public.cudnn, sdpa.sdpa_cudnn], ids=["sdpa-public-cudnn", "sdpa-cudnn"])
def test_cudnn_s_domain_starts_key_lengths_at_2(adapter):
    domain = protocol.case_domain_of(adapter(), "cuda")
    spec = "batch=1 heads=1 kv_heads=1 head_dim=64 dtype=float16 seed=0 seqlen_q=1"
    assert domain.outside_because(Case.from_spec(f"{spec} seqlen_k=1"))
    assert domain.outside_because(Case.from_spec(f"{spec} seqlen_k=2")) is None


def test_the_public_flash_backend_s_domain_keeps_views_aligned():
    domain = protocol.case_domain_of(sdpa_public.flash(), "cuda")
    spec = "batch=1 heads=1 kv_heads=1 head_dim=64 dtype=float16 seed=0 seqlen_q=8 seqlen_k=8"
    assert domain.outside_because(Case.from_spec(f"{spec} layout=padded"))
    assert domain.outside_because(Case.from_spec(f"{spec} layout=heads-first")) is None

#: Campaign cases whose dQ cuDNN gave NaN on the H200, each confirmed by its standalone script
#: (docs/measurements/campaign/h200-2026-11-29-declared/, cudnn-lead1, 3, 7 and 8, and the one-key
#: window of round 2, whose lowest row lse is -11.4).
CUDNN_NAN_DQ_CASES = (
    "batch=3 seqlen_q=1 seqlen_k=64 heads=7 kv_heads=1 head_dim=72 dtype=float16 causal=False window=3,2 "
    "softmax_scale=None layout=heads-first values=large-logits seed=54181",
    "batch=2 seqlen_q=1 seqlen_k=64 heads=1 kv_heads=1 head_dim=16 dtype=float16 causal=False window=-1,-1 "
    "softmax_scale=None layout=contiguous values=offset-values seed=0",
    "batch=1 seqlen_q=64 seqlen_k=64 heads=2 kv_heads=2 head_dim=16 dtype=float16 causal=False window=-1,-1 "
    "softmax_scale=None layout=contiguous values=large-logits seed=2 mask=blocks:1:0.05111705722755257,shape:BH1K",
    "batch=1 seqlen_q=1 seqlen_k=64 heads=3 kv_heads=1 head_dim=128 dtype=float16 causal=True window=2,-1 "
    "softmax_scale=None layout=heads-first values=large-logits seed=297 "
    "mask=random:0.6363216618342665,cols:25,shape:BH1K",
    "batch=1 seqlen_q=64 seqlen_k=64 heads=1 kv_heads=1 head_dim=16 dtype=float16 causal=False window=0,0 "
    "softmax_scale=1.0 layout=contiguous values=normal seed=0",
)


@pytest.mark.parametrize("adapter", [sdpa_public.cudnn, sdpa.sdpa_cudnn], ids=["sdpa-public-cudnn", "sdpa-cudnn"])
def test_cudnn_s_nan_dq_is_declared_on_the_gradients_of_cases_with_a_row_sum_below_the_smallest_normal(adapter):
    from flashcheck.peers.common import gradient_properties

    known = adapter().flashcheck_known_divergences
    spec = "batch=1 seqlen_q=32 seqlen_k=64 heads=4 kv_heads=4 head_dim=64 dtype=float16 seed=0"
    offset, normal = Case.from_spec(f"{spec} values=offset-logits"), Case.from_spec(f"{spec} values=normal")
    assert all(known[name].explains(offset) for name in gradient_properties())
    for case in CUDNN_NAN_DQ_CASES:
        assert known["grads_match_reference"].explains(Case.from_spec(case)), case
    # The one-key window's case in bfloat16: the same scores, far above bfloat16's smallest normal.
    one_key = Case.from_spec(CUDNN_NAN_DQ_CASES[-1]).replace(dtype="bfloat16")
    assert not known["grads_match_reference"].explains(one_key)
    # backward_deterministic: its last-bit nondeterminism is declared on every case (below).
    assert not any(known[name].explains(normal) for name in gradient_properties() if name != "backward_deterministic")
    assert "out_matches_reference" not in known or not known["out_matches_reference"].explains(offset)
    # The private op's campaign case: dQ -inf where float64 gives 313.8, its lowest row lse -1627.
    assert known["grads_match_reference"].explains(Case.from_spec(
        "batch=1 seqlen_q=2 seqlen_k=2 heads=1 kv_heads=1 head_dim=16 dtype=float16 causal=False window=-1,-1 "
        "softmax_scale=None layout=contiguous values=offset-values seed=67884968"))


#: sdpa-public-cudnn's campaign case: one query over 64 keys with window (0, 0), so one key a row and dS
#: exactly 0; dQ NaN in the 22 rows of 56 whose |scale·delta| / e^lse passes float16's range.
CUDNN_SCALED_DELTA_CASE = ("batch=4 seqlen_q=1 seqlen_k=64 heads=14 kv_heads=1 head_dim=64 dtype=float16 causal=False "
                           "window=0,0 softmax_scale=None layout=heads-first values=normal seed=2116")


def test_cudnn_s_nan_dq_is_declared_where_scale_times_delta_over_the_row_sum_passes_the_dtypes_range():
    known = sdpa_public.cudnn().flashcheck_known_divergences
    stressed = known["grads_match_reference_where_ds_exceeds_float16"]
    case = Case.from_spec(CUDNN_SCALED_DELTA_CASE)
    assert stressed.explains(case)
    assert not known["grads_match_reference"].explains(case), "the property's own inputs stay in range"
    # At scale 1/64 no row passes the range (the device: no NaN row); nor in bfloat16.
    assert not stressed.explains(case.replace(softmax_scale=1 / 64))
    assert not stressed.explains(case.replace(dtype="bfloat16"))
    # Not a float16 range divergence of the gradient's own: the case's exact |dS| is 0.
    assert not float16_backward_overflows(case, "ds_range")


def test_cudnn_s_leak_is_declared_where_a_hidden_key_outscores_the_row_by_about_float16s_largest():
    known = sdpa_public.cudnn().flashcheck_known_divergences
    # A campaign's case: its own hidden keys lead by 368 at most, the fresh keys
    # future_keys_cannot_change_output puts behind its window by 65604 on the row that changed.
    fresh = Case.from_spec("batch=1 seqlen_q=63 seqlen_k=63 heads=1 kv_heads=1 head_dim=64 dtype=float16 "
                           "causal=False window=0,-1 softmax_scale=4.0 layout=contiguous values=offset-values seed=0")
    assert known["future_keys_cannot_change_output"].explains(fresh)
    assert not known["out_matches_reference"].explains(fresh)
    assert not known["future_keys_cannot_change_output"].explains(fresh.replace(softmax_scale=1.0)), "leads / 4"


def test_cudnn_s_leak_is_declared_on_the_band_passed_as_a_mask_where_the_case_itself_is_plain_causal():
    known = sdpa_public.cudnn().flashcheck_known_divergences["mask_equal_to_band_matches_flag"]
    # A campaign's case on the H100: is_causal on the first call, the band as a mask on the second;
    # one hidden key leads row 31 of head 0 by 66320.
    case = Case.from_spec("batch=1 seqlen_q=576 seqlen_k=576 heads=2 kv_heads=1 head_dim=32 dtype=float16 "
                          "causal=True window=-1,-1 softmax_scale=1.0 layout=contiguous values=outliers seed=1")
    assert not sdpa_public.passes_attn_mask(case)
    assert known.explains(case)
    assert not known.explains(case.replace(softmax_scale=0.5)), "leads / 2"
    assert not known.explains(case.replace(values="normal"))


def test_cudnn_s_leak_of_huge_hidden_keys_and_its_last_bit_nondeterminism_are_declared_where_they_showed():
    known = sdpa_public.cudnn().flashcheck_known_divergences
    padded = Case.from_spec("batch=1 seqlen_q=1 seqlen_k=31 heads=1 kv_heads=1 head_dim=16 dtype=float16 seed=0 "
                            "mask=key-padding:30")
    assert known["padded_batch_matches_unpadded"].explains(padded)  # its padding keys are huge and hidden
    assert known["backward_deterministic"].explains(padded)
    assert not known["out_matches_reference"].explains(padded)
