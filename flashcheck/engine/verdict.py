"""The verdict of one property on one case: the single place where what happened is decided.

:func:`decide` runs a property's check on one case and says which of these it was:

``PASSED``
    the property held.
``DECLINED``
    the implementation declined the case on purpose: a ``NotImplementedError`` raised by a
    ``raise`` statement of the implementation's own code (see :func:`deliberate_decline`).
    Nothing was checked. Any other ``NotImplementedError`` (one raised by flashcheck's
    code, by torch, or by a call the implementation made) is not a decline.
``KNOWN``
    the property failed on a case that a known divergence the implementation declares
    (``flashcheck_known_divergences``, :mod:`flashcheck.divergences`) explains: reported,
    with the evidence, and not a finding.
``FAILED``
    the property failed, or the implementation raised: a finding, with the evidence.
``FATAL``
    an error after which this process can run no further case (:func:`is_fatal`: a CUDA
    error poisons the context for good). A finding, unless a known divergence declared to
    raise that error explains it (the verdict's ``reason``: a declared fault, expected);
    either way whoever runs cases must stop running them in this process, and must not
    shrink (that would run more cases on a dead context).
``FLASHCHECK_ERROR``
    flashcheck's own code raised: a bug in flashcheck, never a finding about the
    implementation. The error (:class:`FlashcheckError`) carries the traceback.

Who raised an exception (the implementation, declining or not, or flashcheck) is
:mod:`flashcheck.engine.attribution`'s to say.

Every report is complete where it is built: a :class:`~flashcheck.oracle.compare.PropertyFailure`
or :class:`FlashcheckError` names the implementation, the property, the case and the
command line that replays it, and is never filled in afterwards.

The callers are ``flashcheck fuzz`` (:mod:`flashcheck.engine.fuzz`), ``flashcheck check``
(:mod:`flashcheck.cli.commands.check`), the pytest suite (:mod:`flashcheck.property_suite`) and the GPU
determinism test; each maps the verdict onto its own way of reporting, none decides anew.
"""

from __future__ import annotations

import enum
import functools
import traceback
from dataclasses import dataclass

import torch

from flashcheck import autotune_pin, protocol
from flashcheck.cases.case import Case
from flashcheck.engine import attribution
from flashcheck.engine.fuzz_result import RAISED
from flashcheck.oracle import unchecked
from flashcheck.oracle.compare import PropertyFailure, Violation, replay_command


class Outcome(enum.Enum):
    """What one property did on one case (see the module's docstring)."""

    PASSED = "passed"
    DECLINED = "declined"
    KNOWN = "known"
    FAILED = "failed"
    FATAL = "fatal"
    FLASHCHECK_ERROR = "flashcheck error"


class FlashcheckError(Exception):
    """flashcheck's own code failed while it checked ``property_name`` on ``case`` for
    ``impl_name``: a bug in flashcheck (or the device running out of memory in its own
    computation), not a finding about the implementation. Built
    complete: ``str()`` names all three, gives the replay line and the traceback of the
    original error (kept as ``original``)."""

    def __init__(self, error: BaseException, *, property_name: str, case: Case, impl_name: str):
        self.property_name, self.case, self.impl_name, self.original = property_name, case, impl_name, error
        self.replay = replay_command(impl_name, property_name, case.spec())
        self.traceback = "".join(traceback.format_exception(error)).rstrip()
        #: The device ran short in flashcheck's own computation: not a bug either, and a run of
        #: cases (``flashcheck fuzz``) leaves the case unfinished and goes on, where workers sharing
        #: the device hold the memory it lacked.
        self.out_of_memory = is_out_of_memory(error)
        if self.out_of_memory:
            what = f"the device ran out of memory in flashcheck's own computation, not a finding about {impl_name}"
        else:
            what = f"a bug in flashcheck, not a finding about {impl_name}"
        super().__init__(
            f"flashcheck's own code raised {type(error).__name__} while checking property {property_name} "
            f"for {impl_name}: {what}\ncase: {case.spec()}\nreproduce: {self.replay}\n{self.traceback}"
        )


@dataclass(frozen=True)
class Verdict:
    """The verdict of property ``property`` on ``case`` for the implementation ``impl_name``.

    ``failure``: the complete :class:`~flashcheck.oracle.compare.PropertyFailure` for ``FAILED``,
    ``KNOWN`` and ``FATAL`` (None otherwise). ``reason``: for ``DECLINED``, the message the
    implementation declined with; for ``KNOWN``, the declared divergence; for ``FATAL``, the
    declared divergence that explains the fault (None: a finding). ``error``: the
    exception as raised, for ``FATAL`` (the implementation's or a library's),
    ``FLASHCHECK_ERROR`` (a :class:`FlashcheckError`), and ``FAILED`` and ``KNOWN`` where the
    implementation raised it.
    """

    outcome: Outcome
    property: str
    case: Case
    impl_name: str
    failure: PropertyFailure | None = None
    reason: str | None = None
    error: BaseException | None = None
    #: What the property could not check on this case (:mod:`flashcheck.oracle.unchecked`).
    unchecked: tuple[str, ...] = ()
    #: For ``DECLINED``, the case of the call the implementation declined: ``case``, or one a
    #: property made from it (:data:`flashcheck.protocol.DECLINED_CASE`).
    declined_case: Case | None = None

    @property
    def replay(self) -> str:
        """The command line that replays exactly this property on this case."""
        return replay_command(self.impl_name, self.property, self.case.spec())

    @property
    def checked(self) -> bool:
        """Whether the case said something about the property: it passed, failed (as a
        known divergence too) or was fatal; a declined case and flashcheck's own error
        checked nothing."""
        return self.outcome not in (Outcome.DECLINED, Outcome.FLASHCHECK_ERROR)

    def __str__(self) -> str:
        if self.outcome is Outcome.PASSED:
            return f"property {self.property} holds for {self.impl_name}\ncase: {self.case.spec()}"
        if self.outcome is Outcome.DECLINED:
            return (f"{self.impl_name} declined property {self.property} on this case: {self.reason}\n"
                    f"case: {self.case.spec()}\nreproduce: {self.replay}")
        if self.outcome is Outcome.FLASHCHECK_ERROR:
            return str(self.error)
        text = str(self.failure)
        if self.reason is not None:
            text += f"\n(a known divergence of {self.impl_name}: {self.reason})"
        return text

    @property
    def out_of_memory_in_the_call(self) -> bool:
        """Whether this is a failure for the implementation's own call running out of the
        device's memory (:func:`is_out_of_memory`): where other processes share the device, the
        memory may be theirs (a run's fuzz workers)."""
        return self.outcome is Outcome.FAILED and self.error is not None and is_out_of_memory(self.error)

    @property
    def declared_fault(self) -> bool:
        """Whether this is a fatal error a known divergence explains: expected, not a finding,
        and still the end of the process's cases."""
        return self.outcome is Outcome.FATAL and self.reason is not None


class StopRunning(BaseException):
    """Raised inside a hypothesis test to end its run at once with a ``FATAL`` or
    ``FLASHCHECK_ERROR`` verdict (``verdict``): not an ``Exception``, so that hypothesis
    passes it on instead of shrinking, which would run more cases on a dead CUDA context,
    or run flashcheck's own bug again and again."""

    def __init__(self, verdict: Verdict):
        super().__init__(verdict.outcome.value)
        self.verdict = verdict


def decide(prop, impl, case: Case, *, device, impl_name: str) -> Verdict:
    """Run property ``prop`` (a :class:`~flashcheck.properties.registry.Property`) on
    ``case`` for ``impl`` on ``device`` and return its :class:`Verdict`.

    ``impl_name`` is how the replay line names the implementation (a built-in name or
    ``module:attr``), required. The case's cached GPU memory is given back to the driver
    afterwards (:func:`flashcheck.protocol.release_cached_memory`), except after a fatal
    error, when the dead context can release nothing. Only ``KeyboardInterrupt`` and
    other ``BaseException`` that are not ``Exception`` propagate.

    A failure during which a pinned autotuner moved to another configuration
    (:func:`flashcheck.autotune_pin.moves`) is decided once more: the check's calls may have
    run two configurations of one kernel, which flashcheck's pin chose, not the library, and a
    comparison of their results bit for bit would be about that choice. The second decision,
    its calls on the configuration the variant moved to, is the verdict.
    """
    if not impl_name:
        raise ValueError("impl_name: expected the implementation's name, as its replay line gives it")
    moves = autotune_pin.moves()
    verdict = _decided_once(prop, impl, case, device=device, impl_name=impl_name)
    if verdict.outcome is Outcome.FAILED and autotune_pin.moves() != moves:
        verdict = _decided_once(prop, impl, case, device=device, impl_name=impl_name)
    return verdict


def _decided_once(prop, impl, case: Case, *, device, impl_name: str) -> Verdict:
    """:func:`decide`'s verdict from one run of the check."""
    unchecked.take()  # notes of an earlier case that ended before its verdict
    made = functools.partial(Verdict, property=prop.name, case=case, impl_name=impl_name)
    failure = functools.partial(PropertyFailure, property_name=prop.name, case=case, impl_name=impl_name)
    try:
        prop.check(attribution.calling(impl), case, device=device)
        error = None
    except Exception as raised:  # noqa: BLE001 - every exception is classified below
        error = raised
    if error is None or not is_fatal(error):
        try:
            protocol.release_cached_memory(device)
        except Exception as raised:  # noqa: BLE001
            error = error or raised  # a CUDA error reported late, at the release
    try:
        if error is None:
            return made(Outcome.PASSED, unchecked=unchecked.take())
        if is_fatal(error):
            whose = (RAISED if attribution.raised_by_implementation(error) else
                     "raised after the implementation's kernels ran (CUDA reports errors late)")
            evidence = (f"fatal: {whose} {type(error).__name__}: {first_line(error)}\n"
                        f"the process can run no further case (its CUDA context is lost)")
            declared = declared_divergence(impl, prop.name, case, raised=True, message=raised_text(error))
            return made(Outcome.FATAL, failure=failure(evidence), error=error,
                        reason=str(declared) if declared is not None else None)
        raiser = None if isinstance(error, (Violation, PropertyFailure)) else attribution.raised_by(error, impl)
        if raiser is None:
            found = failure(error.evidence)
        elif raiser is attribution.Raiser.DECLINE:
            return made(Outcome.DECLINED, reason=first_line(error) or "NotImplementedError",
                        declined_case=getattr(error, protocol.DECLINED_CASE, case))
        elif raiser is attribution.Raiser.IMPLEMENTATION:
            found = failure(f"{RAISED} {type(error).__name__}: {error}{attribution.where_raised(error, impl)}")
        else:
            return made(Outcome.FLASHCHECK_ERROR, error=FlashcheckError(
                error, property_name=prop.name, case=case, impl_name=impl_name))
        by_implementation = raiser is attribution.Raiser.IMPLEMENTATION
        message = raised_text(error)
        declared = declared_divergence(impl, prop.name, case, raised=by_implementation, message=message)
        raised_error = error if by_implementation else None
        if declared is not None:
            return made(Outcome.KNOWN, failure=found, reason=str(declared), error=raised_error)
        resembled = resembled_declaration(impl, prop.name, case, message=message) if by_implementation else None
        if resembled is not None:
            found = failure(f"{found.evidence}\n{outside_its_cases(resembled)}")
        return made(Outcome.FAILED, failure=found, error=raised_error)
    except Exception as raised:  # noqa: BLE001 - deciding failed: flashcheck's own bug
        return made(Outcome.FLASHCHECK_ERROR, error=FlashcheckError(
            raised, property_name=prop.name, case=case, impl_name=impl_name))


def declared_divergence(impl, property_name: str, case: Case, *, raised: bool, message: str):
    """The known divergence ``impl`` declares on ``property_name`` that explains its failure on
    ``case`` (``raised``: an error the implementation raised, with ``message``), the one of
    several declared together that does; None where none does. The one reading of a declaration,
    for a verdict as it is decided and for a failure recorded earlier (:mod:`flashcheck.engine.triage`)."""
    known = protocol.known_divergences(impl).get(property_name)
    return None if known is None else known.explaining(case, raised=raised, message=message)


def resembled_declaration(impl, property_name: str, case: Case, *, message: str):
    """A divergence ``impl`` declares on ``property_name`` that names the error ``message`` reads
    as (declared to raise, its ``raising`` text in the message) and does not cover ``case``; None
    where none does. Such a failure is the declared error outside the declared cases: either the
    declaration is narrower than its bug, or the error has another cause there. Which, a person
    decides (:func:`outside_its_cases` says so beside the failure); the verdict stays a failure."""
    known = protocol.known_divergences(impl).get(property_name)
    if known is None:
        return None
    return next((part for part in known.components()
                 if part.raises and part.raising and part.raising in message
                 and not part.explains(case, raised=True, message=message)), None)


def outside_its_cases(divergence) -> str:
    """The note a failure carries where it raised the error ``divergence`` declares, outside the
    cases it covers (:func:`resembled_declaration`)."""
    return (f"note: this is the error a known divergence declares, raised outside the cases it covers: "
            f"{divergence}. Either that declaration is narrower than its bug, or the error has another cause here")


def raised_text(error: BaseException) -> str:
    """What a declaration's ``raising`` is looked for in: the error's type and message, ``Type:
    message``, as a failure's evidence names them (which a result read later is matched against:
    :mod:`flashcheck.engine.triage`), so that a declaration may name the error by either."""
    return f"{type(error).__name__}: {error}"


#: How CUDA's own out-of-memory error (``cudaErrorMemoryAllocation``) reads, as torch raises it
#: and as Triton's launcher does.
_CUDA_OUT_OF_MEMORY = ("CUDA error: out of memory", "Triton Error [CUDA]: out of memory")


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is the device running out of memory: torch's ``OutOfMemoryError``
    from its allocator, or CUDA's own out-of-memory error (:data:`_CUDA_OUT_OF_MEMORY`), which a
    call outside the allocator returns, a kernel launch that cannot get its local memory among
    them."""
    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and any(text in str(error) for text in _CUDA_OUT_OF_MEMORY)


def is_fatal(error: BaseException) -> bool:
    """Whether ``error`` leaves the process unable to run further cases: a CUDA error
    (an illegal address, a launch failure, a device-side assert) poisons the CUDA context
    for good. The device running out of memory does not (:func:`is_out_of_memory`): CUDA
    keeps the context, and the next case may fit."""
    if is_out_of_memory(error):
        return False
    fatal_type = getattr(torch, "AcceleratorError", None)
    if fatal_type is not None and isinstance(error, fatal_type):
        return True
    # A decline (NotImplementedError, a RuntimeError) may name a CUDA error it avoids.
    return isinstance(error, RuntimeError) and not isinstance(error, NotImplementedError) and "CUDA error" in str(error)


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message, stripped ("" for an empty message)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""
