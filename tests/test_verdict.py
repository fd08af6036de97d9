"""``flashcheck.engine.verdict.decide``: the one place where a property run on a case becomes a
verdict (passed, declined, a known divergence, failed, fatal, or flashcheck's own error),
for ``flashcheck fuzz``, ``flashcheck check`` and the pytest suite alike.

The implementations are small pure-torch ones, float32, on the CPU.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from pathlib import Path

import pytest
import torch

from flashcheck import autotune_pin, peers
from flashcheck.cases.case import Case
from flashcheck.engine import attribution, verdict
from flashcheck.engine.verdict import FlashcheckError, Outcome, decide
from flashcheck.oracle.compare import PropertyFailure
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property
from tests.support import buggy, declared, misbehaving, stubs, unusual

#: Three queries: the planted misbehaviours of tests.support.misbehaving act on more than one.
CASE = Case(seqlen_q=3, seqlen_k=5, heads=2, kv_heads=1, head_dim=8, dtype="float32")
OUT = PROPERTIES["out_matches_reference"]
GRADS = PROPERTIES["grads_match_reference"]


def declaring(features):
    """Decorate an implementation with ``flashcheck_features``."""
    def decorate(impl):
        impl.flashcheck_features = frozenset(features)
        return impl
    return decorate


@declaring({"float32", "lse"})
def declines(q, k, v, **kwargs):
    raise NotImplementedError("no kernel for this shape yet")


@declaring({"float32", "lse"})
def calls_an_operator_missing_on_the_cpu(q, k, v, **kwargs):
    # torch raises NotImplementedError ("Could not run 'aten::...' with arguments from the
    # 'CPU' backend"): the implementation did not decline, it broke.
    return torch.ops.aten._scaled_dot_product_flash_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                              v.transpose(1, 2))


def _with_backward(act):
    """:data:`tests.support.buggy.correct` whose output goes through a custom autograd function whose
    backward runs ``act()`` before it passes the gradient on."""
    class Acting(torch.autograd.Function):
        @staticmethod
        def forward(ctx, out):
            return out.clone()

        @staticmethod
        def backward(ctx, grad):
            act()
            return grad

    @declaring({"float32", "lse", "backward"})
    def attention(q, k, v, **kwargs):
        out, lse = buggy.correct(q, k, v, **kwargs)
        return Acting.apply(out), lse

    return attention


def _backward_raising(error):
    def act():
        raise error
    return _with_backward(act)


def flashcheck_property(error):
    """A property whose check itself raises ``error``: flashcheck's own bug."""
    def check(impl, case, *, device=None):
        impl(*case.materialize(device)[:3], **case.attention_kwargs(device))
        raise error
    return Property("raises_by_itself", check, "a property with a bug of its own")


def test_a_property_that_holds_passes():
    verdict = decide(OUT, buggy.correct, CASE, device="cpu", impl_name="tests.support.buggy:correct")
    assert verdict.outcome is Outcome.PASSED and verdict.checked


def test_a_failure_is_complete_where_it_is_built_naming_the_implementation_it_was_given():
    verdict = decide(OUT, declared.too_large_everywhere, CASE, device="cpu", impl_name="my.kernels:attention")
    assert verdict.outcome is Outcome.FAILED and verdict.checked
    failure = verdict.failure
    assert (failure.impl_name, failure.property_name, failure.case) == ("my.kernels:attention", OUT.name, CASE)
    assert failure.replay == verdict.replay == (
        f"flashcheck check --impl my.kernels:attention --property {OUT.name} --case '{CASE.spec()}'")
    assert str(failure).splitlines()[0] == f"property {OUT.name} failed for my.kernels:attention"
    assert "out differs from the float64 reference" in failure.evidence


def test_a_property_failure_cannot_be_built_without_its_implementation_property_and_case():
    with pytest.raises(TypeError):
        PropertyFailure("evidence")
    with pytest.raises(TypeError):
        PropertyFailure("evidence", property_name=OUT.name, case=CASE)  # no implementation: no "flash" default
    with pytest.raises(ValueError):
        PropertyFailure("evidence", property_name=OUT.name, case=CASE, impl_name="")


def test_an_exception_the_implementation_raises_fails_the_property_with_the_error_as_evidence():
    verdict = decide(OUT, misbehaving.raising, CASE, device="cpu", impl_name="tests.support.misbehaving:raising")
    assert verdict.outcome is Outcome.FAILED
    assert "the implementation raised RuntimeError: planted" in verdict.failure.evidence
    assert "misbehaving.py" in verdict.failure.evidence, "where in the implementation it was raised"


def test_a_not_implemented_error_raised_by_the_implementation_declines_the_case_with_its_message():
    verdict = decide(OUT, declines, CASE, device="cpu", impl_name="tests.test_verdict:declines")
    assert verdict.outcome is Outcome.DECLINED and not verdict.checked
    assert verdict.reason == "no kernel for this shape yet"


def test_a_not_implemented_error_from_an_operator_the_implementation_calls_is_not_a_decline():
    verdict = decide(OUT, calls_an_operator_missing_on_the_cpu, CASE, device="cpu", impl_name="t:missing")
    assert verdict.outcome is Outcome.FAILED
    assert "the implementation raised NotImplementedError: Could not run" in verdict.failure.evidence


def test_an_output_on_another_device_fails_the_protocol_and_is_not_a_decline():
    verdict = decide(OUT, stubs.out_on_meta, CASE, device="cpu", impl_name="tests.support.stubs:out_on_meta")
    assert verdict.outcome is Outcome.FAILED
    assert "out must be on q's device cpu, got a tensor on meta" in verdict.failure.evidence


@pytest.mark.parametrize("error", [NotImplementedError("flashcheck's own"), ValueError("flashcheck's own")],
                         ids=["NotImplementedError", "ValueError"])
def test_an_error_of_flashchecks_own_code_is_flashchecks_never_a_decline_or_a_finding(error):
    verdict = decide(flashcheck_property(error), buggy.correct, CASE, device="cpu", impl_name="tests.support.buggy:correct")
    assert verdict.outcome is Outcome.FLASHCHECK_ERROR and not verdict.checked and verdict.failure is None
    assert isinstance(verdict.error, FlashcheckError) and verdict.error.original is error
    report = str(verdict.error)
    assert "a bug in flashcheck, not a finding about tests.support.buggy:correct" in report
    assert "Traceback (most recent call last)" in report and "flashcheck's own" in report
    assert verdict.replay in report


@pytest.mark.parametrize("kind", misbehaving.OUT_OF_MEMORY_KINDS)
def test_running_out_of_memory_in_flashchecks_own_computation_is_not_called_a_finding_nor_a_bug(kind):
    verdict = decide(flashcheck_property(misbehaving.out_of_memory_error(kind)), buggy.correct, CASE,
                     device="cpu", impl_name="tests.support.buggy:correct")
    assert verdict.outcome is Outcome.FLASHCHECK_ERROR and verdict.error.out_of_memory
    assert "the device ran out of memory in flashcheck's own computation, not a finding about tests.support.buggy:correct" \
        in str(verdict.error)


def test_an_error_in_the_backward_pass_of_what_the_implementation_returned_is_the_implementations():
    failing = decide(GRADS, _backward_raising(RuntimeError("no backward kernel")), CASE, device="cpu",
                     impl_name="t:broken_backward")
    assert failing.outcome is Outcome.FAILED
    assert "the implementation raised RuntimeError: no backward kernel" in failing.failure.evidence
    declining = decide(GRADS, _backward_raising(NotImplementedError("backward: not yet")), CASE, device="cpu",
                       impl_name="t:declining_backward")
    assert declining.outcome is Outcome.DECLINED and declining.reason == "backward: not yet"


#: Without keys :data:`tests.support.unusual.zeros_from_q_only_without_keys` builds its output from q
#: alone: autograd has no path to k and v.
NO_KEYS = Case(seqlen_q=3, seqlen_k=0, heads=2, kv_heads=1, head_dim=8, dtype="float32")


def _differentiable_inputs(case):
    return [t.requires_grad_() for t in case.materialize("cpu")[:3]]


def _unused_inputs(impl, case):
    q, k, v = _differentiable_inputs(case)
    out, _ = impl(q, k, v, **case.attention_kwargs("cpu"))
    torch.autograd.grad(out.sum(), [q, k, v])  # no allow_unused: k and v are not in the graph


def _implicit_gradient_of_a_tensor(impl, case):
    q, k, v = _differentiable_inputs(case)
    out, _ = impl(q, k, v, **case.attention_kwargs("cpu"))
    out.backward()  # not a scalar, and no gradient given


def _input_that_does_not_require_grad(impl, case):
    q, k, v = _differentiable_inputs(case)
    out, _ = impl(q, k, v, **case.attention_kwargs("cpu"))
    torch.autograd.grad(out.sum(), [q.detach()])


def _upstream_gradient_of_another_shape(impl, case):
    q, k, v = _differentiable_inputs(case)
    out, _ = impl(q, k, v, **case.attention_kwargs("cpu"))
    torch.autograd.grad(out, [q], torch.ones(out.shape[:-1]))


@pytest.mark.parametrize("misuse, message", [
    (_unused_inputs, "appears to not have been used in the graph"),
    (_implicit_gradient_of_a_tensor, "grad can be implicitly created only for scalar outputs"),
    (_input_that_does_not_require_grad, "One of the differentiated Tensors does not require grad"),
    (_upstream_gradient_of_another_shape, "Mismatch in shape"),
], ids=["unused-inputs", "implicit-gradient-of-a-tensor", "input-not-requiring-grad", "upstream-of-another-shape"])
def test_autograd_refusing_the_arguments_of_flashchecks_own_call_is_flashchecks_error_not_a_finding(misuse, message):
    """flashcheck's code asks autograd for something it cannot give, on a correct
    implementation: autograd's check of the arguments raises in flashcheck's own call,
    whatever the backward functions the implementation recorded did (they may have run:
    the unused inputs are found after the backward pass)."""
    def check(impl, case, *, device=None):
        misuse(impl, case)

    prop = Property("misuses_autograd", check, "a property asking autograd for what it cannot give")
    impl_name = "tests.support.unusual:zeros_from_q_only_without_keys"
    verdict = decide(prop, unusual.zeros_from_q_only_without_keys, NO_KEYS, device="cpu", impl_name=impl_name)
    assert verdict.outcome is Outcome.FLASHCHECK_ERROR, verdict
    assert isinstance(verdict.error, FlashcheckError) and message in str(verdict.error.original)
    report = str(verdict.error)
    assert f"a bug in flashcheck, not a finding about {impl_name}" in report
    assert "Traceback (most recent call last)" in report and verdict.replay in report


@declaring({"float32", "lse", "backward"})
def backward_of_an_operator_without_a_derivative(q, k, v, **kwargs):
    # igamma's derivative in its first argument is not implemented: the node autograd recorded
    # for it raises once the backward pass reaches it, in torch's C++ engine, with no Python
    # frame of its own.
    out, lse = buggy.correct(q, k, v, **kwargs)
    return out + 0 * torch.igamma(q.abs() + 1, torch.ones_like(q)), lse


def _misuse_autograd():
    """The implementation's own call of autograd, without ``allow_unused`` for an unused input."""
    with torch.enable_grad():
        x, unused = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
        torch.autograd.grad((2 * x).sum(), [x, unused])


backward_misusing_autograd = _with_backward(_misuse_autograd)


@declaring({"float32", "lse", "backward"})
def forward_misusing_autograd(q, k, v, **kwargs):
    _misuse_autograd()
    return buggy.correct(q, k, v, **kwargs)


@pytest.mark.parametrize("impl, message, error", [
    (backward_of_an_operator_without_a_derivative, "the derivative for 'igamma: input' is not implemented",
     "NotImplementedError"),
    (backward_misusing_autograd, "appears to not have been used in the graph", "RuntimeError"),
    (forward_misusing_autograd, "appears to not have been used in the graph", "RuntimeError"),
], ids=["native-node-raising", "backward-function-misusing-autograd", "forward-misusing-autograd"])
def test_an_error_raised_by_what_the_implementation_recorded_for_the_backward_pass_stays_the_implementations(
        impl, message, error):
    """The implementation's side of the boundary: a node of its graph raising in torch's
    engine (not a decline either: torch raised it, not the implementation), and its own calls
    of autograd, in its backward or its forward, refused as flashcheck's would be."""
    verdict = decide(GRADS, impl, CASE, device="cpu", impl_name="t:backward")
    assert verdict.outcome is Outcome.FAILED, verdict
    assert f"the implementation raised {error}: " in verdict.failure.evidence and message in verdict.failure.evidence


def test_a_fatal_error_is_fatal_with_the_replay_line():
    verdict = decide(OUT, misbehaving.fatal_cuda_error, CASE, device="cpu",
                     impl_name="tests.support.misbehaving:fatal_cuda_error")
    assert verdict.outcome is Outcome.FATAL and verdict.checked
    assert "CUDA error: an illegal memory access" in str(verdict.error)
    assert "fatal: the implementation raised RuntimeError" in verdict.failure.evidence
    assert "reproduce: flashcheck check --impl tests.support.misbehaving:fatal_cuda_error" in str(verdict)


def test_a_failure_a_declared_divergence_explains_is_known_and_one_it_does_not_is_a_failure():
    causal = decide(OUT, declared.too_large_everywhere, CASE.replace(causal=True), device="cpu",
                    impl_name="tests.support.declared:too_large_everywhere")
    assert causal.outcome is Outcome.KNOWN and causal.checked
    assert causal.reason == str(declared.CAUSAL_ONLY) and "out differs" in causal.failure.evidence
    assert decide(OUT, declared.too_large_everywhere, CASE, device="cpu",
                  impl_name="tests.support.declared:too_large_everywhere").outcome is Outcome.FAILED


def test_an_error_raised_on_a_case_a_numerical_divergence_covers_is_still_a_failure():
    causal = CASE.replace(causal=True)
    raised = decide(OUT, declared.raises_when_causal, causal, device="cpu",
                    impl_name="tests.support.declared:raises_when_causal")
    assert raised.outcome is Outcome.FAILED, raised
    assert "the implementation raised RuntimeError: planted: no kernel found to launch" in raised.failure.evidence
    refused = decide(OUT, declared.refuses_when_causal, causal, device="cpu",
                     impl_name="tests.support.declared:refuses_when_causal")
    assert refused.outcome is Outcome.KNOWN and refused.reason == str(declared.CAUSAL_REFUSAL)


def test_a_declared_error_is_recognised_by_its_type_name_as_its_evidence_shows_it():
    raised = decide(OUT, declared.out_of_resources_when_causal, CASE.replace(causal=True), device="cpu",
                    impl_name="tests.support.declared:out_of_resources_when_causal")
    assert raised.outcome is Outcome.KNOWN and raised.reason == str(declared.BY_TYPE_NAME), raised
    assert "raised OutOfResources: out of resource" in raised.failure.evidence


def test_a_declared_error_outside_its_declared_cases_stays_a_failure_that_names_the_declaration():
    name = "tests.support.declared:out_of_resources_everywhere"
    inside = decide(OUT, declared.out_of_resources_everywhere, CASE.replace(causal=True), device="cpu", impl_name=name)
    assert inside.outcome is Outcome.KNOWN and "note:" not in inside.failure.evidence
    outside = decide(OUT, declared.out_of_resources_everywhere, CASE, device="cpu", impl_name=name)
    assert outside.outcome is Outcome.FAILED
    first, *rest = outside.failure.evidence.splitlines()
    assert "raised OutOfResources: out of resource" in first  # the signature's line is the error's own
    assert any("the error a known divergence declares, raised outside the cases it covers" in line
               and str(declared.BY_TYPE_NAME) in line for line in rest)
    other_error = decide(OUT, declared.raises_when_causal, CASE.replace(causal=True), device="cpu",
                         impl_name="tests.support.declared:raises_when_causal")
    assert other_error.outcome is Outcome.FAILED and "note:" not in other_error.failure.evidence


def test_a_fatal_error_a_divergence_declares_is_an_expected_fault_and_ends_the_process_all_the_same():
    causal = CASE.replace(causal=True)
    fault = decide(OUT, declared.faults_when_causal, causal, device="cpu",
                   impl_name="tests.support.declared:faults_when_causal")
    assert fault.outcome is Outcome.FATAL and fault.declared_fault and fault.reason == str(declared.CAUSAL_FAULT)
    assert "(a known divergence of tests.support.declared:faults_when_causal" in str(fault)
    assert decide(OUT, declared.faults_when_causal, CASE, device="cpu",
                  impl_name="tests.support.declared:faults_when_causal").outcome is Outcome.PASSED
    # A numerical divergence on the same cases does not explain the fault: still a finding.
    undeclared = decide(OUT, declared.faults_when_causal_undeclared, causal, device="cpu",
                        impl_name="tests.support.declared:faults_when_causal_undeclared")
    assert undeclared.outcome is Outcome.FATAL and not undeclared.declared_fault and undeclared.reason is None


def test_the_implementation_is_named_as_its_replay_line_needs():
    with pytest.raises(ValueError, match="impl_name"):
        decide(OUT, buggy.correct, CASE, device="cpu", impl_name="")


# -- whose code raised, wherever it is installed -------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def installed_as(monkeypatch):
    """``installed_as(stdlib, platstdlib, site)``: the interpreter's paths as a virtualenv's
    (its ``platstdlib`` is ``<venv>/lib/python3.X``, which holds its ``site-packages``) or a
    system install's; every location flashcheck's attribution has cached forgotten, before and
    after."""
    def forget():
        for function in vars(attribution).values():
            if hasattr(function, "cache_clear"):
                function.cache_clear()

    def install(stdlib, platstdlib, site_packages):
        paths = {**sysconfig.get_paths(), "stdlib": str(stdlib), "platstdlib": str(platstdlib),
                 "purelib": str(site_packages), "platlib": str(site_packages)}
        monkeypatch.setattr(sysconfig, "get_paths", lambda *args, **kwargs: dict(paths))
        monkeypatch.setattr(site, "getsitepackages", lambda *args: [str(site_packages)])
        forget()

    yield install
    monkeypatch.undo()
    forget()


def test_in_a_virtualenv_only_the_standard_library_is_library_code_not_what_its_site_packages_hold(
        tmp_path, installed_as):
    base, venv = tmp_path / "python" / "lib" / "python3.11", tmp_path / "venv" / "lib" / "python3.11"
    installed_as(base, venv, venv / "site-packages")
    assert attribution._is_library(str(base / "json" / "decoder.py"))
    assert not attribution._is_library(str(venv / "site-packages" / "mykernel" / "attention.py"))
    assert not attribution._is_library(str(venv / "site-packages" / "flashcheck" / "peers" / "fa4.py"))
    # Installed into the interpreter itself, or by a distribution's own pip.
    assert not attribution._is_library(str(base / "site-packages" / "mykernel.py"))
    assert not attribution._is_library(str(base / "dist-packages" / "mykernel.py"))


def test_flashcheck_installed_as_a_package_tells_its_adapters_and_its_kernels_from_its_checking_code(monkeypatch):
    # A non-editable install puts flashcheck.properties and flashcheck.kernels inside the
    # flashcheck folder (a checkout keeps them beside it): each is known by where it really is.
    installed = Path("/venv/lib/python3.11/site-packages/flashcheck")
    where = {"flashcheck": installed, "flashcheck.properties": installed / "properties",
             "flashcheck.peers": installed / "peers", "flashcheck.kernels": installed / "kernels"}
    monkeypatch.setattr(attribution, "_package_folder", lambda name: str(where[name]) if name in where else None)
    for function in (attribution._checking_folders, attribution._is_checking_code):
        function.cache_clear()
    try:
        assert attribution._is_checking_code(str(installed / "engine" / "verdict.py"))
        assert attribution._is_checking_code(str(installed / "properties" / "forward.py"))
        assert not attribution._is_checking_code(str(installed / "peers" / "fa4.py"))
        assert not attribution._is_checking_code(str(installed / "kernels" / "interface.py"))
    finally:
        monkeypatch.undo()
        for function in vars(attribution).values():
            if hasattr(function, "cache_clear"):
                function.cache_clear()


def test_flashcheck_s_adapters_still_decline_once_flashcheck_lies_in_a_virtualenv_s_site_packages(installed_as):
    # As pip lays out a virtualenv, the checkout standing for its site-packages: flashcheck's
    # adapters and the implementations beside them lie under platstdlib.
    installed_as(Path(sysconfig.get_paths()["stdlib"]), REPO.parent, REPO)
    verdict_of_a_decline = decide(OUT, peers.describe("fa4"), CASE, device="cpu", impl_name="fa4")
    assert verdict_of_a_decline.outcome is Outcome.DECLINED, verdict_of_a_decline
    assert verdict_of_a_decline.reason == "fa4 runs on cuda only, got q on cpu"
    assert decide(OUT, declines, CASE, device="cpu", impl_name="t:declines").outcome is Outcome.DECLINED


#: An implementation installed in site-packages, declining what it does not run, and calling a
#: library installed beside it, which raises NotImplementedError of its own.
INSTALLED_KERNEL = '''
import otherlib
from tests.support import buggy


def attention(q, k, v, **kwargs):
    if q.shape[-1] == 8:
        raise NotImplementedError("no kernel for head_dim 8")
    return buggy.correct(q, k, v, **kwargs)


def calls_the_library(q, k, v, **kwargs):
    otherlib.attention(q)
    return buggy.correct(q, k, v, **kwargs)


attention.flashcheck_features = calls_the_library.flashcheck_features = frozenset({"float32", "lse"})
'''
OTHER_LIBRARY = '''
def attention(q):
    raise NotImplementedError("otherlib has no CPU kernel")
'''


def test_an_implementation_installed_in_a_virtualenv_declines_and_a_library_it_calls_does_not(
        tmp_path, installed_as, monkeypatch):
    base, venv = tmp_path / "python" / "lib" / "python3.11", tmp_path / "venv" / "lib" / "python3.11"
    site_packages = venv / "site-packages"
    site_packages.mkdir(parents=True)
    (site_packages / "installed_kernel.py").write_text(INSTALLED_KERNEL)
    (site_packages / "otherlib.py").write_text(OTHER_LIBRARY)
    monkeypatch.syspath_prepend(str(site_packages))
    installed_as(base, venv, site_packages)
    import installed_kernel

    try:
        declined = decide(OUT, installed_kernel.attention, CASE, device="cpu", impl_name="installed_kernel:attention")
        assert declined.outcome is Outcome.DECLINED and declined.reason == "no kernel for head_dim 8"
        # A library's NotImplementedError is not the implementation's decline, wherever it lies.
        failed = decide(OUT, installed_kernel.calls_the_library, CASE, device="cpu",
                        impl_name="installed_kernel:calls_the_library")
        assert failed.outcome is Outcome.FAILED, failed
        assert "the implementation raised NotImplementedError: otherlib has no CPU kernel" in failed.failure.evidence
    finally:
        for name in ("installed_kernel", "otherlib"):
            sys.modules.pop(name, None)


def test_a_decline_that_names_the_cuda_error_it_avoids_is_a_decline_not_a_fatal_error():
    def declines_naming_a_fault(q, k, v, **kwargs):
        raise NotImplementedError("the backend faults (CUDA error: misaligned address) on these views: declined")

    declines_naming_a_fault.flashcheck_features = frozenset({"float32"})
    verdict = decide(OUT, declines_naming_a_fault, CASE, device="cpu", impl_name="t:declines")
    assert verdict.outcome is Outcome.DECLINED, verdict


def _wrong_once_while_a_pinned_autotuner_moves(moves: bool):
    """A correct kernel whose first call returns a wrong output, as a call that ran another
    configuration than the variant moved to (``moves``: the pin counts a move meanwhile)."""
    calls = []

    def attention(q, k, v, **kwargs):
        calls.append(None)
        out, lse = buggy.correct(q, k, v, **kwargs)
        if len(calls) == 1:
            if moves:
                autotune_pin._MOVES[0] += 1
            return out + 1, lse
        return out, lse

    attention.flashcheck_features = buggy.correct.flashcheck_features
    return attention


def test_a_failure_during_which_a_pinned_autotuner_moved_is_decided_again_on_the_configuration_it_moved_to():
    verdict = decide(OUT, _wrong_once_while_a_pinned_autotuner_moves(True), CASE, device="cpu", impl_name="t:moved")
    assert verdict.outcome is Outcome.PASSED, verdict
    verdict = decide(OUT, _wrong_once_while_a_pinned_autotuner_moves(False), CASE, device="cpu", impl_name="t:still")
    assert verdict.outcome is Outcome.FAILED, "no move: the failure stands"
