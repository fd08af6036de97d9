"""Verdicts a user can trust under hostile input: a correct implementation on an unusual
path passes, and a faulty one is reported for its real cause."""

from __future__ import annotations

import pytest
import torch

from flashcheck.cases.case import Case
from flashcheck.engine import property_cases
from flashcheck.engine import verdict
from flashcheck.oracle import compare
from flashcheck.oracle.compare import Violation
from flashcheck.properties import PROPERTIES, memory
from flashcheck.properties.registry import NotRunnableHere

from tests.support import buggy, cli_process, unusual

#: Cases without a single key: dense (Nk = 0) and packed (one sequence, queries but no keys).
NO_KEYS = [
    Case(seqlen_q=3, seqlen_k=0, heads=2, kv_heads=1, dtype="float32"),
    Case.packed(((3, 0),), heads=2, kv_heads=1, dtype="float32"),
]


def _runnable(impl, case):
    return [p for p in PROPERTIES.values() if p.runnable(impl.flashcheck_features, case, device="cpu")]


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


#: Two packed sequences, the last one's keys ending at the end of the packed tokens.
PACKED = Case.packed(((3, 4), (2, 5)), heads=2, kv_heads=1, causal=True)


def test_rounding_that_depends_on_the_layout_is_not_a_leak():
    """A correct implementation whose results move by an ulp between strided views and
    contiguous copies reads nothing from the NaN padding: nan_padding_never_leaks holds.
    Bitwise layout invariance is layout_invariance's to demand, and it does."""
    impl = unusual.rounding_per_layout
    PROPERTIES["nan_padding_never_leaks"].check(impl, PACKED, device="cpu")
    with pytest.raises(Violation, match="not exactly equal"):
        PROPERTIES["layout_invariance"].check(impl, PACKED.replace(layout="padded"), device="cpu")


def _layouts_called(impl, calls):
    """``impl`` logging the layout of every call's q: "NaN-padded" (a view into NaN),
    "zero-padded" (a strided view into finite padding) or "contiguous"."""

    def logged(q, k, v, **kwargs):
        storage = torch.empty(0, dtype=q.dtype).set_(q.untyped_storage())
        calls.append("NaN-padded" if storage.isnan().any() else "contiguous" if q.is_contiguous() else "zero-padded")
        return impl(q, k, v, **kwargs)

    logged.flashcheck_features = impl.flashcheck_features
    return logged


def test_the_views_laid_out_otherwise_run_only_where_their_results_decide_something():
    """The zero-padded views and the contiguous copies tell a leak from other faults: where
    the NaN-padded results are finite and within the tolerance (a correct implementation)
    they decide nothing and are not run; where they are needed they are (the leaks below)."""
    calls = []
    PROPERTIES["nan_padding_never_leaks"].check(_layouts_called(unusual.rounding_per_layout, calls), PACKED,
                                                device="cpu")
    assert calls == ["NaN-padded", "NaN-padded"]  # the forward, then forward and backward
    calls.clear()
    with pytest.raises(Violation, match="NaN padding"):
        PROPERTIES["nan_padding_never_leaks"].check(_layouts_called(unusual.leaks_and_rounds_per_layout, calls),
                                                    PACKED, device="cpu")
    assert calls == ["NaN-padded", "zero-padded"]
    calls.clear()
    with pytest.raises(Violation, match="NaN-padded views"):
        PROPERTIES["nan_padding_never_leaks"].check(_layouts_called(unusual.sanitised_read_past_the_end, calls),
                                                    PACKED, device="cpu")
    assert calls == ["NaN-padded", "contiguous"]


def test_a_leak_behind_layout_dependent_rounding_is_still_caught():
    """Rounding per layout does not hide a read past the end of the packed keys: the NaN it
    brings in where the contiguous copies give finite values is reported as a leak."""
    with pytest.raises(Violation, match="NaN padding") as info:
        PROPERTIES["nan_padding_never_leaks"].check(unusual.leaks_and_rounds_per_layout, PACKED, device="cpu")
    assert "nan" in str(info.value)


def test_a_leak_that_brings_in_finite_garbage_is_caught_by_its_distance_from_the_reference():
    """A leak need not produce NaN: padding read and sanitised to finite values gives results
    beyond the derived tolerance where the contiguous copies are within it."""
    with pytest.raises(Violation, match="NaN-padded views") as info:
        PROPERTIES["nan_padding_never_leaks"].check(unusual.sanitised_read_past_the_end, PACKED, device="cpu")
    assert "differs from the float64 reference" in str(info.value)


def test_a_bitwise_failure_shows_the_bit_patterns_and_the_ulp_distance():
    """Values that print alike ("got 0.190576, expected 0.190576") are told apart by their
    bits: the report gives both bit patterns in hex and their distance in ulps."""
    expected = torch.tensor([[0.5, 0.190576]], dtype=torch.float32)
    got = expected.clone()
    got.view(torch.int32)[0, 1] += 3  # three ulps up
    with pytest.raises(Violation) as info:
        compare.check_equal("lse", got, expected, what="the lse of an identical first call")
    text = str(info.value)
    assert f"0x{int(expected.view(torch.int32)[0, 1]):08x}" in text
    assert f"0x{int(got.view(torch.int32)[0, 1]):08x}" in text
    assert "3 ulp" in text


def test_a_layout_invariance_failure_reports_the_ulp_distance():
    """The report of a bitwise property names the distance that made it fail: one ulp."""
    with pytest.raises(Violation, match=r"\b1 ulp"):
        PROPERTIES["layout_invariance"].check(unusual.rounding_per_layout, Case(seqlen_q=3, seqlen_k=5,
                                                                                layout="padded"), device="cpu")


def test_an_error_raised_by_the_implementation_s_code_outside_a_call_into_it_is_the_implementation_s():
    """The implementation returned an object whose own methods raise when flashcheck's code
    uses it: a finding about the implementation, where it raised, never "a bug in flashcheck"."""
    case = Case(seqlen_q=3, seqlen_k=4, heads=2, kv_heads=1, dtype="float32")
    found = verdict.decide(PROPERTIES["out_matches_reference"], unusual.returns_a_refusing_tensor, case, device="cpu",
                           impl_name="tests.support.unusual:returns_a_refusing_tensor")
    assert found.outcome is verdict.Outcome.FAILED, found
    assert "the implementation raised RuntimeError: Refusing does not do" in found.failure.evidence
    assert "unusual.py" in found.failure.evidence and "__torch_function__" in found.failure.evidence


def test_an_implementation_that_writes_into_q_is_reported_for_the_mutation():
    """Every property that compares values checks first that the call left q, k and v as
    they were: an implementation doubling q in place is reported as modifying q, not as an
    output that differs from the reference (the symptom) or as a nondeterministic one."""
    case = Case(seqlen_q=5, seqlen_k=4, heads=2, kv_heads=1, causal=True, dtype="float32")
    impl = unusual.doubles_q_in_place
    with pytest.raises(Violation, match="^q was modified") as info:
        PROPERTIES["out_matches_reference"].check(impl, case, device="cpu")
    assert "differs" not in str(info.value)
    runnable = _runnable(impl, case)
    assert {"grads_match_reference", "deterministic", "layout_invariance"} <= {p.name for p in runnable}
    for prop in runnable:
        with pytest.raises(Violation, match="^q was modified"):
            prop.check(impl, case, device="cpu")


class _FakeDevice:
    """A memory counter over tensors an implementation keeps: what torch.cuda.memory_allocated
    reports on a GPU, for the decision logic on the CPU."""

    def __init__(self):
        self.held = []

    def allocated(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.held)


def test_memory_growing_by_8_mb_per_call_is_a_leak():
    device = _FakeDevice()
    with pytest.raises(Violation, match=r"grew by 33554432 bytes .* over 4 identical calls") as info:
        memory.check_memory_flat(lambda: device.held.append(torch.empty(8 << 20, dtype=torch.uint8)),
                                 device.allocated)
    assert "+8388608, +8388608, +8388608, +8388608 bytes call by call" in str(info.value)


def test_memory_growing_a_little_at_every_call_is_a_leak():
    """However small: keeping each call's 512-byte output alive grows at every call."""
    device = _FakeDevice()
    with pytest.raises(Violation, match="grew by 2048 bytes"):
        memory.check_memory_flat(lambda: device.held.append(torch.empty(512, dtype=torch.uint8)), device.allocated)


def test_memory_allocated_once_and_kept_is_not_a_leak():
    """A workspace a library allocates once, at the warm-up or on a later call, and then
    reuses: growth within the slack, not at every call."""
    device = _FakeDevice()
    calls = []

    def call():
        calls.append(None)
        if len(calls) in (1, 3):  # the warm-up's workspace, and a second one on the third call
            device.held.append(torch.empty(256 << 10, dtype=torch.uint8))

    readings = memory.check_memory_flat(call, device.allocated)
    assert readings == [256 << 10, 256 << 10, 512 << 10, 512 << 10, 512 << 10]


def test_memory_that_grows_beyond_the_slack_on_one_call_is_a_leak():
    device = _FakeDevice()
    calls = []

    def call():
        calls.append(None)
        if len(calls) == 2:
            device.held.append(torch.empty(memory.GROWTH_SLACK_BYTES + 1, dtype=torch.uint8))

    with pytest.raises(Violation, match=f"grew by {memory.GROWTH_SLACK_BYTES + 1} bytes"):
        memory.check_memory_flat(call, device.allocated)


def test_memory_growth_is_not_applicable_on_the_cpu_and_never_passes_there():
    """torch counts no allocated memory on the CPU: every runner leaves the property out
    there as not applicable, for a leaking implementation as for a correct one; run anyway,
    the check refuses before any call, and the verdict is flashcheck's error, not a pass."""
    prop = PROPERTIES["repeated_calls_do_not_grow_memory"]
    case = Case(seqlen_q=4, seqlen_k=4, dtype="float32")
    assert not prop.runnable(buggy.FEATURES, case, device="cpu") and prop.runnable(buggy.FEATURES, case, device="cuda")
    assert "cuda only" in property_cases.not_drawable_because(prop, buggy.FEATURES, "cpu")
    for impl in (buggy.correct, buggy.leaks_memory):
        with pytest.raises(NotRunnableHere, match="cuda only"):
            prop.check(impl, case, device="cpu")
        outcome = verdict.decide(prop, impl, case, device="cpu", impl_name="buggy").outcome
        assert outcome is verdict.Outcome.FLASHCHECK_ERROR
    assert not buggy.leaks_memory.held  # refused before any call


def test_the_commands_say_the_memory_property_runs_on_cuda_only(capsys):
    from flashcheck import cli
    from flashcheck.cli.commands import EXIT_OK, EXIT_USAGE

    assert cli.main(["list"]) == EXIT_OK
    assert "repeated_calls_do_not_grow_memory: Repeated identical calls" in capsys.readouterr().out
    # In a fresh process where this one runs GPU kernels: --device cpu needs the interpreter.
    status = cli_process.flashcheck(["check", "--impl", "tests.support.buggy:leaks_memory", "--property",
                                     "repeated_calls_do_not_grow_memory", "--case", "seqlen_q=2 seqlen_k=2 dtype=float32",
                                     "--device", "cpu"])
    assert status == EXIT_USAGE and "not run" in capsys.readouterr().err
