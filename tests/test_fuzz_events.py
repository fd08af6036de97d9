"""What a fuzzing run reports as it goes (flashcheck.engine.fuzz_events): one event type per
thing reported, plain data that crosses from a worker process to its parent unchanged, and
the same events in process as from a worker."""
from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch

from flashcheck.cases import sizes as case_sizes
from flashcheck.engine import fuzz, fuzz_events
from flashcheck.engine.fuzz_result import OUT_OF_MEMORY_IN_THE_CALL, Failure
from tests.support import buggy, misbehaving, standalone_kernels

FAILURE = Failure("property", "out_matches_reference", "batch=1 seqlen_q=2", "out differs", "tests.support.buggy:correct")

EVERY_EVENT = [
    fuzz_events.Passed("out_matches_reference", "batch=1 seqlen_q=2", ("float32", "causal"), 1.5, 0.5, 2),
    fuzz_events.Declined("out_matches_reference", "batch=1 seqlen_q=2", "causal with Nq != Nk"),
    fuzz_events.NotApplicable("grads_match_reference", "needs the feature backward"),
    fuzz_events.KnownDivergenceSeen(dataclasses.replace(FAILURE, kind="known")),
    fuzz_events.KnownCase("out_matches_reference", "NaN for every negative softmax_scale"),
    fuzz_events.OutOfMemory("out_matches_reference", "batch=1 seqlen_q=2", "CUDA out of memory", in_the_call=True),
    fuzz_events.SteeredTurn("out_matches_reference", mostly_rare=True),
    fuzz_events.Found(FAILURE),
    fuzz_events.Counterexample(FAILURE),
    fuzz_events.Started("cpu, Triton interpreter"),
    fuzz_events.Replayed("out_matches_reference", "batch=1 seqlen_q=2", still_fails=False),
    fuzz_events.Stale("out_matches_reference", "batch=1 seqlen_q=2", "no longer runnable"),
    fuzz_events.Done(),
    fuzz_events.SetupFailed("worker 0 could not load 'nowhere:attention'"),
    fuzz_events.FlashcheckFailed("worker 0: flashcheck's own code raised ValueError"),
]


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda event: type(event).__name__)
def test_an_event_crosses_a_process_boundary_unchanged_and_cannot_be_changed(event):
    assert pickle.loads(pickle.dumps(event)) == event
    assert isinstance(event, fuzz_events.Event)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, "property", None)


def test_the_in_process_engine_reports_what_happens_as_events_in_order():
    events = []
    result = fuzz.fuzz_in_process(
        buggy.additive_mask, impl_name="tests.support.buggy:additive_mask", budget=120, device="cpu",
        sizes=case_sizes.choose("interpreter"), seed=1, properties=["grads_match_reference", "out_matches_reference"],
        on_event=events.append, shrink_time=0,
    )
    kinds = [type(event) for event in events]
    # What cannot run first, then cases, then the failure as found and as the run ends with it.
    assert events[0] == fuzz_events.NotApplicable("grads_match_reference", "needs the feature backward")
    assert kinds[-2:] == [fuzz_events.Found, fuzz_events.Counterexample]
    assert set(kinds[1:-2]) <= {fuzz_events.Passed, fuzz_events.Declined}
    [failure] = result.failures
    assert events[-1].failure == failure and events[-2].failure.case == failure.case  # not shrunk: as drawn
    passed = [event for event in events if isinstance(event, fuzz_events.Passed)]
    assert len(passed) == result.cases and all(event.property == "out_matches_reference" for event in passed)
    assert all(event.seconds is None for event in passed), "times are a worker's to add"


def _out_of_memory_in_its_call(calls_that_run_out, kind="allocator"):
    """A correct kernel whose first ``calls_that_run_out`` calls raise the device's out-of-memory
    error of ``kind`` (:data:`tests.support.misbehaving.OUT_OF_MEMORY_KINDS`), as a call does when
    other processes hold the device's memory."""
    calls = []

    def attention(q, k, v, **kwargs):
        calls.append(None)
        if len(calls) <= calls_that_run_out:
            raise misbehaving.out_of_memory_error(kind)
        return standalone_kernels.correct(q, k, v, **kwargs)

    attention.flashcheck_features = standalone_kernels.FEATURES
    return attention


def _fuzz_out_of_memory(kernel, *, device_shared):
    events = []
    result = fuzz.fuzz_in_process(
        kernel, impl_name="out_of_memory_in_its_call", budget=120, device="cpu",
        sizes=case_sizes.choose("interpreter"), seed=1, properties=["out_matches_reference"],
        on_event=events.append, shrink_time=0, keep_going=True, device_shared=device_shared,
        should_stop=lambda: sum(isinstance(event, fuzz_events.Passed) for event in events) >= 5)
    return result, events


def test_a_call_out_of_memory_on_a_shared_device_is_decided_again_and_then_is_no_finding():
    result, events = _fuzz_out_of_memory(_out_of_memory_in_its_call(1), device_shared=True)
    assert not result.failures and not result.unfinished
    assert sum(isinstance(event, fuzz_events.Passed) for event in events) >= 5


@pytest.mark.parametrize("kind", misbehaving.OUT_OF_MEMORY_KINDS)
def test_a_call_out_of_memory_twice_on_a_shared_device_leaves_the_case_unfinished(kind):
    result, events = _fuzz_out_of_memory(_out_of_memory_in_its_call(2, kind), device_shared=True)
    assert not result.failures
    [unfinished] = result.unfinished
    error = type(misbehaving.out_of_memory_error(kind)).__name__
    assert unfinished["reason"] == OUT_OF_MEMORY_IN_THE_CALL and error in unfinished["error"]
    assert any(isinstance(event, fuzz_events.OutOfMemory) and event.in_the_call for event in events)


def test_a_call_out_of_memory_on_a_device_of_its_own_is_a_finding():
    result, _ = _fuzz_out_of_memory(_out_of_memory_in_its_call(1), device_shared=False)
    [failure] = result.failures
    assert "OutOfMemoryError" in failure.evidence
