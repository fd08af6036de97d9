"""What a fuzzing run reports as it goes: one small frozen dataclass per event, plain data.

The in-process engine (:func:`flashcheck.engine.fuzz.fuzz_in_process`) reports what happens
through one callable, ``on_event(event)``: :class:`Passed`, :class:`Declined`,
:class:`NotApplicable`, :class:`KnownDivergenceSeen`, :class:`KnownCase`, :class:`Repeated`, :class:`Found`,
:class:`Counterexample`, :class:`OutOfMemory` and :class:`SteeredTurn`. A worker process puts the same events
on the queue to its parent (but :class:`SteeredTurn`, which its compile focus takes),
as ``(worker index, event)``, with its own beside them (:class:`Started`, :class:`Replayed`,
:class:`Stale`, :class:`Done`, :class:`SetupFailed`, :class:`FlashcheckFailed`), and the
parent (:mod:`flashcheck.engine.fuzz_workers`) dispatches on the event's type.

Every event is picklable (it crosses a process boundary): strings, numbers, tuples and
:class:`~flashcheck.engine.fuzz_result.Failure` only, cases as their specs
(:meth:`flashcheck.cases.case.Case.spec`). Importing this module imports neither torch nor
hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass

from flashcheck.engine.fuzz_result import Failure


# -- what the in-process engine reports ---------------------------------------------------------


@dataclass(frozen=True)
class Passed:
    """A case of ``property`` checked and passed. ``kinds``: the regions of the case space it
    exercises (:func:`flashcheck.engine.fuzz.case_kinds`). A worker adds the times its clock
    measured (:mod:`flashcheck.engine.compile_clock`): ``seconds`` of the case, ``compiling`` of
    them compiling (:mod:`flashcheck.engine.compile_clock`), ``compile_classes``, how many compile
    classes it draws in (:mod:`flashcheck.engine.focus`; None without compile-aware drawing),
    ``classes``, those classes in a few words (:meth:`flashcheck.engine.focus.WideningFocus.labels`), and
    ``phases``, the seconds of each of :data:`flashcheck.cases.phases.PHASES`; all None in process."""

    property: str
    case: str
    kinds: tuple[str, ...]
    seconds: float | None = None
    compiling: float | None = None
    compile_classes: int | None = None
    classes: tuple[str, ...] | None = None
    phases: tuple[tuple[str, float], ...] | None = None
    #: What the property could not check on the case (:attr:`flashcheck.engine.verdict.Verdict.unchecked`).
    unchecked: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declined:
    """The implementation declined a case of ``property`` (``NotImplementedError``) with ``reason``:
    nothing was checked. ``inside_domain``: the case lies inside the case domain the
    implementation declares (:mod:`flashcheck.cases.domain`), so the declaration is wrong."""

    property: str
    case: str
    reason: str
    inside_domain: bool = False


@dataclass(frozen=True)
class NotApplicable:
    """``property`` is not run on this implementation, for ``reason``: its features exclude it,
    the implementation declares it not applicable, or no drawn case is one it applies to."""

    property: str
    reason: str


@dataclass(frozen=True)
class KnownDivergenceSeen:
    """A property that the implementation declares a known divergence failed (``failure``, of
    kind ``"known"``): expected, reported once per property, not a finding."""

    failure: Failure


@dataclass(frozen=True)
class KnownCase:
    """A case of ``property`` failed as the implementation's declared known divergence (each
    such case, the first included): counted, so that the run's share of them is known.
    ``cause``: the reason of the single divergence that explained it (of several declared
    together, the one whose cases it is), which every worker then steers off, in every property."""

    property: str
    cause: str = ""


@dataclass(frozen=True)
class Repeated:
    """In a campaign (``--keep-going``), a case of ``property`` failed with the ``signature`` of a
    failure already reported (:attr:`~flashcheck.engine.fuzz_result.Failure.signature`): counted,
    not shrunk or reported again."""

    signature: str
    property: str
    case: str


@dataclass(frozen=True)
class Found:
    """A failure, as drawn, before shrinking: its shrinking begins now. Without
    ``--keep-going`` the run's first, which ends it; in a campaign, the first of its signature."""

    failure: Failure


@dataclass(frozen=True)
class Counterexample:
    """A failure as reported: shrunk (unless ``failure.shrunk`` is False), or a fatal error,
    unshrunk. Without ``--keep-going`` the run ends with it; a campaign goes on."""

    failure: Failure


@dataclass(frozen=True)
class OutOfMemory:
    """The device ran out of memory in flashcheck's own computation on a case of ``property``
    (a reference or an allowance, with the device shared by other workers), or (``in_the_call``)
    twice in the implementation's own call on a device other workers share: neither passed nor
    failed, the case is left unfinished and counted so, and the run goes on. ``report``: the
    error, its case and replay line (:class:`flashcheck.engine.verdict.FlashcheckError`, or the
    implementation's error)."""

    property: str
    case: str
    report: str
    in_the_call: bool = False


@dataclass(frozen=True)
class SteeredTurn:
    """A turn of ``property`` steered off the cases to draw rarely (a seen known divergence's, an
    avoided class's) ended; ``mostly_rare``: most of the cases it drew were such, or it drew none
    other, so that where the worker draws now the property's cases lie mostly where nothing new
    is checked. The worker's compile focus weighs it
    (:meth:`flashcheck.engine.focus.WideningFocus.steered_turn`): classes where every property's
    turns are such are left; where one property's alone are, not."""

    property: str
    mostly_rare: bool


# -- what only a worker process reports -----------------------------------------------------------


@dataclass(frozen=True)
class Started:
    """The worker loaded the implementation and runs on ``device``
    (:func:`flashcheck.engine.placement.describe_device`), a GPU of compute ``capability``
    (:func:`~flashcheck.engine.placement.compute_capability`; None on the CPU), drawing first in
    the compile ``classes`` named (as :class:`Passed` names them; None where none is named)."""

    device: str
    capability: str | None = None
    classes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Replayed:
    """A stored crash or hang was run again: ``still_fails``, or it passed (and leaves the store)."""

    property: str
    case: str
    still_fails: bool


@dataclass(frozen=True)
class Stale:
    """A stored crash or hang the implementation's features no longer cover, for ``problem``:
    kept, not run."""

    property: str
    case: str
    problem: str


@dataclass(frozen=True)
class Done:
    """The worker ended its run as it should: nothing more comes from it."""


@dataclass(frozen=True)
class SetupFailed:
    """The worker could not set up (load the implementation, its library): a usage error."""

    message: str


@dataclass(frozen=True)
class FlashcheckFailed:
    """flashcheck's own code failed in the worker (a bug in flashcheck, not a finding);
    ``report`` carries the case, when there was one, and the traceback. The worker stops."""

    report: str


#: Any of the events above.
Event = (Passed | Declined | NotApplicable | KnownDivergenceSeen | KnownCase | Repeated | Found | Counterexample
         | OutOfMemory | SteeredTurn | Started | Replayed | Stale | Done | SetupFailed | FlashcheckFailed)
