"""What a fuzzing run found, as plain data: :class:`Failure` and :class:`FuzzResult`.

Apart from the engine (:mod:`flashcheck.engine.fuzz`, which re-exports both), so that importing them
imports neither torch nor hypothesis: ``flashcheck fuzz`` reports a run that a Ctrl-C ended
during its start-up, perhaps inside ``import torch``, whose module cannot be imported again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

#: A duration in a crash's or hang's evidence ("besides 12 s of compiling Triton kernels"):
#: it differs between runs of one case that end alike.
_SECONDS = re.compile(r"\b\d+(?:\.\d+)? s\b")
#: A number in a failure's first line (a size, an index, a value, an address): it differs between
#: occurrences of one bug. Not the digits of a name (``float16``, ``sm90``).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)(?![\w.])")
#: The kinds of failure that end or stop the worker process running the case.
PROCESS_KINDS = ("crash", "hang", "fatal")
#: The longest subject a signature keeps of a failure's first line.
_SUBJECT_LENGTH = 160


def compile_share(case_seconds: float, compile_seconds: float) -> float | None:
    """The share of ``case_seconds`` (finished cases' worker time) spent compiling, as a run's
    summary and ``--json`` (``pace``) give both; None where no case time was counted."""
    return compile_seconds / case_seconds if case_seconds > 0 else None


def case_class(spec: str) -> str:
    """The coarse class of a case (its spec, :meth:`flashcheck.cases.case.Case.spec`) that tells one
    failure's signature from another's: whether it is dense, masked or packed, and its band
    (none, causal or a window), e.g. ``"packed causal"``: the kernel paths a bug usually lives
    in, few enough that a bug failing every case is still reported a handful of times, not once
    per dtype and shape. Read off the spec's text, so that it needs neither torch nor a case
    that still parses."""
    fields = dict(item.partition("=")[::2] for item in spec.split())
    structure = ("packed" if "seqlens" in fields
                 else "masked" if fields.get("mask", "none") != "none" else "dense")
    band = ("causal" if fields.get("causal") == "True"
            else "window" if fields.get("window", "-1,-1") != "-1,-1" else "no band")
    return f"{structure} {band}"


#: How a property failure's evidence begins when the implementation raised an error
#: (:func:`flashcheck.engine.verdict.decide`): the call's error, whichever property made the call.
RAISED = "the implementation raised"


def failure_subject(evidence: str) -> str:
    """What failed, as a signature names it: the evidence's first line (the output that differs,
    the error raised, how a worker died) with its numbers written ``N``."""
    first = evidence.split("\n", 1)[0].strip()
    return _NUMBER.sub("N", first)[:_SUBJECT_LENGTH]


@dataclass
class Failure:
    """One counterexample, as plain data that crosses process boundaries.

    ``kind``: ``"property"`` (the property failed, or the implementation raised; the case
    is shrunk when found by fuzzing), ``"known"`` (it failed, and the implementation
    declares that property a known divergence: reported, not a finding; not shrunk),
    ``"fatal"`` (an error after which the process could run no further case, a CUDA error
    that lost the context: the process stopped there, unshrunk), ``"crash"`` (the process
    running the case died: a segfault, an abort) or ``"hang"`` (the case ran past its
    timeout). ``case`` is a case spec (:meth:`flashcheck.cases.case.Case.spec`), None when the
    process died between cases.
    """

    kind: str
    property: str | None
    case: str | None
    evidence: str
    impl: str
    seconds: float | None = None  # into the run when it was found (before shrinking)
    #: Of a property failure: False when reported as first drawn because its shrinking was
    #: cut short (the run interrupted, or its budget spent); None otherwise.
    shrunk: bool | None = None
    #: Of a crash or a hang: the per-case timeout of the run that found it, so that its replay
    #: line runs the case as that run did, in a worker process watched with that timeout.
    case_timeout: float | None = None
    #: How many times a run met this failure's :attr:`signature`: this report and its repeats
    #: (``--keep-going`` counts repeats instead of shrinking them again).
    count: int = 1
    #: Where its standalone reproduction script was written (``--repro-dir``), or why none was.
    script: str | None = None
    #: Of a campaign's failure: its case is the one an earlier run sharing the database shrunk
    #: (:mod:`flashcheck.engine.shared_database`); this run met its signature and did not
    #: shrink it again.
    shrunk_elsewhere: bool = False

    @property
    def signature(self) -> str:
        """What makes two failures the same bug, one line: the kind, the property, what failed
        (:func:`failure_subject`) and the coarse class of the case (:func:`case_class`). A
        campaign (``flashcheck fuzz --keep-going``) reports and shrinks each signature once and
        counts its repeats. A crash, a hang or a fatal error is the process's, whichever
        property's call met it, and an error the implementation raised is its call's: their
        signatures name no property (an implementation that refuses some inputs at launch
        raises alike under every property that draws them, one cause)."""
        kind = "property" if self.kind == "known" else self.kind
        where = case_class(self.case) if self.case is not None else "between cases"
        subject = failure_subject(self.evidence)
        if kind in PROCESS_KINDS:
            return " | ".join((kind, subject.split(" while running ", 1)[0], where))
        if subject.startswith(RAISED):
            return " | ".join((kind, subject, where))
        return " | ".join((kind, self.property or "-", subject, where))

    @classmethod
    def from_property_failure(cls, failure, kind: str = "property") -> "Failure":
        return cls(kind, failure.property_name, failure.case.spec(), failure.evidence, failure.impl_name)

    @classmethod
    def from_verdict(cls, verdict) -> "Failure":
        """The failure a ``FAILED``, ``KNOWN`` or ``FATAL`` verdict reports: of kind
        ``"known"`` when a declared divergence explains it, a declared fault included."""
        from flashcheck.engine.verdict import Outcome

        kind = {Outcome.FAILED: "property", Outcome.KNOWN: "known", Outcome.FATAL: "fatal"}[verdict.outcome]
        if verdict.reason is not None:
            kind = "known"
        failure = cls.from_property_failure(verdict.failure, kind)
        if verdict.reason is not None:
            failure.evidence += f"\ndeclared: {verdict.reason}"
        return failure

    def reproduction(self) -> str | None:
        """One command line that replays exactly this case (None without a case)."""
        if self.case is None or self.property is None:
            return None
        from flashcheck.oracle.compare import replay_command

        return replay_command(self.impl, self.property, self.case, self.case_timeout)

    def outcome(self) -> tuple:
        """What this report says happened, for telling identical reports apart from others:
        its kind, property and case, and the nature of its outcome, the first line of its
        evidence (how the worker died, or whether the case ran or compiled past its time)
        with the seconds it took left out. The lines below it (what the worker's log quotes,
        a thread's address, say) differ between processes that ended alike."""
        nature = _SECONDS.sub("N s", self.evidence.split("\n", 1)[0])
        return self.kind, self.property, self.case, nature

    def to_json(self) -> dict:
        return {"kind": self.kind, "property": self.property, "case": self.case, "evidence": self.evidence,
                "replay": self.reproduction(), "seconds": self.seconds, "shrunk": self.shrunk,
                "signature": self.signature, "count": self.count, "script": self.script,
                "shrunk_elsewhere": self.shrunk_elsewhere}

    def __str__(self) -> str:
        what = {"property": "failed", "crash": "crashed the process", "hang": "hung",
                "fatal": "ended the process with a fatal error",
                "known": "failed as declared (a known divergence)"}[self.kind]
        lines = [f"property {self.property} {what} for {self.impl}" if self.property else f"{self.impl}: {what}",
                 self.evidence]
        if self.case is not None:
            lines.append(f"case: {self.case}")
        if self.reproduction():
            lines.append(f"reproduce: {self.reproduction()}")
        return "\n".join(lines)


#: Why a case is left unfinished where the device ran out of memory in flashcheck's own
#: computation (:meth:`FuzzResult.out_of_memory`).
OUT_OF_MEMORY = "the device ran out of memory in flashcheck's own computation"
#: Why one is left unfinished where it ran out in the implementation's own call, twice, on a
#: device other workers share, whose memory may be theirs (:meth:`FuzzResult.out_of_memory`).
OUT_OF_MEMORY_IN_THE_CALL = "the device ran out of memory in the implementation's own call, twice"

#: Seconds per entry of :attr:`FuzzResult.pace`.
PACE_SPAN = 10


@dataclass
class FuzzResult:
    """What a fuzzing run did and the counterexamples it found."""

    cases: int = 0
    seconds: float = 0.0
    by_property: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    declined: int = 0  # cases the implementation declined with NotImplementedError
    #: Declined cases by property, then by the message the implementation declined with.
    declined_by_property: dict[str, Counter] = field(default_factory=dict)
    #: What passed cases could not check (:mod:`flashcheck.oracle.unchecked`), by property: counted,
    #: shown, never a pass of its own.
    not_checked: dict[str, Counter] = field(default_factory=dict)
    #: Declined cases that lie inside the case domain the implementation declares: the
    #: declaration is wrong. ``{"property", "case", "reason", "count"}``, one per property and
    #: reason, with its first case.
    declined_inside_domain: list[dict] = field(default_factory=list)
    #: The implementation's declared case domain (:meth:`flashcheck.cases.domain.CaseDomain.as_dict`;
    #: None: none declared) and compile key (None: Triton's specialisation assumed), as run.
    case_domain: dict | None = None
    compile_key: list | None = None
    #: The kernels whose Triton autotuners the implementation declares and flashcheck pinned
    #: (``flashcheck_autotuners``, :mod:`flashcheck.autotune_pin`); None: none declared.
    autotuners: list | None = None
    #: The recorded counterexamples the run checked first (``flashcheck fuzz --counterexamples``):
    #: ``{"file", "run_first", "not_run"}``: how many of its cases were handed to the workers
    #: (those for this device and the chosen properties) and how many were not; None where none
    #: were given.
    counterexamples: dict | None = None
    #: Properties not run because no case inside the implementation's features is one they
    #: apply to, or because the implementation declares them not applicable, with the reason:
    #: not passed, not failed.
    not_applicable: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    #: Per worker process position (isolated runs): ``{"worker", "gpu", "device", "capability",
    #: "cases", "processes", "compile_classes", "classes"}``, where ``device`` is what the worker
    #: reported it runs on, ``capability`` its GPU's compute capability ("9.0"; None on the CPU),
    #: ``compile_classes`` how many compile classes it drew in at its latest case
    #: (:mod:`flashcheck.engine.focus`; None without compile-aware drawing) and ``classes`` those
    #: classes in a few words (None where that count is, or with a compile key).
    workers: list[dict] = field(default_factory=list)
    #: Failures of properties the implementation declares known divergences
    #: (``flashcheck_known_divergences``): expected, reported, not findings.
    known: list[Failure] = field(default_factory=list)
    #: How many cases failed as a declared known divergence, by property (every one, where
    #: ``known`` reports each property once).
    known_cases: Counter = field(default_factory=Counter)
    #: Cases neither passed nor failed: still running when the budget ran out, stopped with
    #: their worker (``{"property", "case", "running_for", "worker"}``), or left where the device
    #: ran out of memory in flashcheck's own computation or, twice, in the implementation's call
    #: on a shared device (``{"property", "case", "worker", "reason": OUT_OF_MEMORY or
    #: OUT_OF_MEMORY_IN_THE_CALL, "error"}``, :meth:`out_of_memory`).
    unfinished: list[dict] = field(default_factory=list)
    #: Crash-store entries no longer replayable (``{"property", "case", "problem", "store"}``,
    #: see :meth:`flashcheck.engine.crash_store.CrashStore.replayable`): reported, not run, not findings.
    stale: list[dict] = field(default_factory=list)
    #: The run was interrupted (SIGINT) before its end: what it found so far is all there is.
    interrupted: bool = False
    #: flashcheck's own code failed in a worker and ended the run early (a bug in flashcheck,
    #: not a finding): its report, with the case and the traceback; what the run found until
    #: then is all there is. None when it did not happen.
    flashcheck_error: str | None = None
    #: Where the time went, in isolated runs (:meth:`timed`): worker-seconds of finished
    #: cases, the part of them spent in Triton's compilations, and the finished cases per
    #: :data:`PACE_SPAN` seconds of the run, first span first.
    case_seconds: float = 0.0
    compile_seconds: float = 0.0
    #: Seconds of the finished cases by phase (:data:`flashcheck.cases.phases.PHASES`).
    phase_seconds: dict[str, float] = field(default_factory=dict)
    pace: list[int] = field(default_factory=list)

    #: Repeats of signatures whose failure is not reported yet (another worker still shrinking
    #: it): added to its count when it comes (:meth:`add_failure`).
    early_repeats: Counter = field(default_factory=Counter)

    @property
    def found(self) -> bool:
        return bool(self.failures)

    def failure_with(self, signature: str) -> Failure | None:
        """The failure reported with ``signature`` (:attr:`Failure.signature`), or None."""
        return next((failure for failure in self.failures if failure.signature == signature), None)

    def add_failure(self, failure: Failure, *, campaign: bool) -> Failure:
        """Report ``failure``; in a ``campaign`` (``--keep-going``), one whose signature is
        already reported adds its count to that one's instead. Returns the failure that
        carries it."""
        failure.count += self.early_repeats.pop(failure.signature, 0)
        reported = self.failure_with(failure.signature) if campaign else None
        if reported is None:
            self.failures.append(failure)
            return failure
        reported.count += failure.count
        return reported

    def add_known(self, failure: Failure) -> None:
        """Report a declared known divergence seen (``failure``, of kind ``"known"``): once per
        property in a run, however many workers saw it, later sightings counted on the first."""
        seen = next((known for known in self.known if known.property == failure.property), None)
        if seen is None:
            self.known.append(failure)
        else:
            seen.count += failure.count

    @property
    def checked(self) -> int:
        """Cases that said something about a property: passed, failed (each occurrence of a
        failure) or failed as a declared known divergence."""
        return self.cases + sum(failure.count for failure in self.failures) + sum(self.known_cases.values())

    def known_share(self) -> float:
        """The share of :attr:`checked` cases that failed as a declared known divergence (0 where
        none was checked)."""
        return sum(self.known_cases.values()) / self.checked if self.checked else 0.0

    def repeated(self, signature: str) -> None:
        """One more occurrence of the failure with ``signature``, counted, not reported again."""
        reported = self.failure_with(signature)
        if reported is None:
            self.early_repeats[signature] += 1
        else:
            reported.count += 1

    @property
    def checked_anything(self) -> bool:
        """Whether any case said anything about a property: one passed, failed, or failed
        as a declared known divergence. A run of declined cases only, or of cases that never
        finished, checked nothing, and must not read as a pass."""
        return self.cases > 0 or bool(self.failures) or bool(self.known)

    def never_checked(self) -> list[str]:
        """Properties that had cases, every one of them declined."""
        return sorted(name for name in self.declined_by_property
                      if not self.by_property.get(name) and not any(f.property == name for f in self.known))

    def count(self, prop: str, kinds, unchecked=()) -> None:
        """Record one completed case of property ``prop`` with case kinds ``kinds``, on which
        the property could not check ``unchecked`` (:mod:`flashcheck.oracle.unchecked`)."""
        self.cases += 1
        self.by_property[prop] += 1
        self.by_kind.update(kinds)
        for what in unchecked:
            self.not_checked.setdefault(what, Counter())[prop] += 1

    def timed(self, at: float, seconds: float, compiling: float, phases=None) -> None:
        """Record the times of one finished case: it ended ``at`` seconds into the run,
        after ``seconds`` of its worker's time, ``compiling`` of them compiling, and
        ``phases`` (``(phase, seconds)`` pairs, :mod:`flashcheck.cases.phases`) of them by phase."""
        self.case_seconds += seconds
        self.compile_seconds += compiling
        for name, spent in phases or ():
            self.phase_seconds[name] = self.phase_seconds.get(name, 0.0) + spent
        span = int(at // PACE_SPAN)
        self.pace.extend([0] * (span + 1 - len(self.pace)))
        self.pace[span] += 1

    def rate(self, start: float, end: float | None = None) -> float | None:
        """Finished cases per second between ``start`` and ``end`` seconds into the run
        (multiples of :data:`PACE_SPAN`; ``end`` None: to the end of the run), or None
        where the run did not time its cases or has no time there."""
        if not self.pace:
            return None
        first = int(start // PACE_SPAN)
        last = len(self.pace) if end is None else int(end // PACE_SPAN)
        elapsed = min(self.seconds, last * PACE_SPAN) - first * PACE_SPAN
        return sum(self.pace[first:last]) / elapsed if elapsed > 1 else None

    @property
    def compile_share(self) -> float | None:
        """The share of finished cases' worker time spent compiling (None: not timed)."""
        return compile_share(self.case_seconds, self.compile_seconds)

    def decline(self, prop: str, reason: str, *, inside_domain: str | None = None) -> None:
        """Record one case of property ``prop`` that the implementation declined with ``reason``;
        ``inside_domain``: the case's spec where it lies inside the declared case domain."""
        self.declined += 1
        self.declined_by_property.setdefault(prop, Counter())[reason] += 1
        if inside_domain is None:
            return
        for entry in self.declined_inside_domain:
            if entry["property"] == prop and entry["reason"] == reason:
                entry["count"] += 1
                return
        self.declined_inside_domain.append({"property": prop, "case": inside_domain, "reason": reason, "count": 1})

    def out_of_memory(self, prop: str, case: str, report: str, *, worker: int | None = None,
                      in_the_call: bool = False) -> None:
        """Record a case of property ``prop`` left unfinished because the device ran out of
        memory in flashcheck's own computation, or (``in_the_call``) twice in the
        implementation's own call on a device other workers share; ``report``: the error's
        report, whose first line is kept."""
        reason = OUT_OF_MEMORY_IN_THE_CALL if in_the_call else OUT_OF_MEMORY
        self.unfinished.append({"property": prop, "case": case, "worker": worker, "reason": reason,
                                "error": report.splitlines()[0] if report else ""})

    @classmethod
    def from_json(cls, data: dict) -> "FuzzResult":
        """The result a run wrote with :meth:`to_json` (``--json``), read back: its counts,
        pace, failures and known divergences, as the summaries print them. What the file does
        not hold (the workers' pending repeats) starts empty."""
        impl = data.get("impl", "")

        def failures(entries) -> list[Failure]:
            return [Failure(entry["kind"], entry["property"], entry["case"], entry["evidence"], impl,
                            seconds=entry.get("seconds"), shrunk=entry.get("shrunk"), count=entry.get("count", 1),
                            script=entry.get("script"), shrunk_elsewhere=entry.get("shrunk_elsewhere", False))
                    for entry in entries]

        pace = data.get("pace", {})
        return cls(
            cases=data["cases"], seconds=data["seconds"], declined=data["declined"],
            by_property=Counter(data.get("by_property", {})), by_kind=Counter(data.get("by_kind", {})),
            declined_by_property={name: Counter(reasons)
                                  for name, reasons in data.get("declined_by_property", {}).items()},
            not_checked={what: Counter(counts) for what, counts in data.get("not_checked", {}).items()},
            declined_inside_domain=list(data.get("declined_inside_domain", [])), case_domain=data.get("case_domain"),
            compile_key=data.get("compile_key"), autotuners=data.get("autotuners"),
            counterexamples=data.get("counterexamples"), not_applicable=dict(data.get("not_applicable", {})),
            failures=failures(data.get("failures", [])), workers=list(data.get("workers", [])),
            known=failures(data.get("known", [])), known_cases=Counter(data.get("known_cases", {})),
            unfinished=list(data.get("unfinished", [])), stale=list(data.get("stale", [])),
            interrupted=data.get("interrupted", False), flashcheck_error=data.get("flashcheck_error"),
            case_seconds=pace.get("case_seconds", 0.0), compile_seconds=pace.get("compile_seconds", 0.0),
            phase_seconds=dict(pace.get("phases", {})), pace=list(pace.get("cases_per_span", [])),
        )

    def distinct(self) -> list[tuple[Failure, int]]:
        """``(failure, count)`` per distinct failure, in order of first report: crashes and hangs
        of the same :meth:`Failure.outcome` (kind, property, case and how the worker died or why it
        was killed, whatever the seconds it took) count as one; ``count`` adds up the repeats a
        campaign counted (:attr:`Failure.count`)."""
        counts: dict = {}
        for failure in self.failures:
            key = (id(failure),) if failure.kind == "property" else failure.outcome()
            first, count = counts.get(key, (failure, 0))
            counts[key] = (first, count + failure.count)
        return list(counts.values())

    def to_json(self, *, impl_name: str, device: str, budget: float) -> dict:
        """The result as plain data: ``impl``, ``device``, ``budget``, ``seconds``, ``cases``
        (checked and passed), ``declined``, ``found``, ``checked_anything`` (see
        :attr:`checked_anything`), ``by_property`` and ``by_kind`` (counts),
        ``declined_by_property`` (``{property: {reason: count}}``), ``not_checked`` (``{what:
        {property: passed cases}}``), ``declined_inside_domain``,
        ``case_domain``, ``compile_key``, ``autotuners`` and ``counterexamples`` (see the fields), ``not_applicable``
        (``{property: reason}``), and ``failures``: a list of ``{"kind", "property", "case",
        "evidence", "replay", "seconds", "shrunk", "signature", "count", "script"}`` (see
        :class:`Failure`; ``seconds``: when it was found; ``count``: how many times the run met
        its signature; ``script``: its standalone reproduction), one per distinct failure, ``workers``,
        ``unfinished``, ``known``, ``known_cases`` (``{property: cases}``), ``stale``, ``interrupted``,
        ``flashcheck_error`` (see :attr:`flashcheck_error`; null unless the run ended on it), and
        ``pace``: ``{"span", "cases_per_span", "case_seconds", "compile_seconds", "phases"}`` (see
        :meth:`timed`; empty lists and zeros where the run did not time its cases)."""
        return {
            "impl": impl_name, "device": device, "budget": budget, "seconds": round(self.seconds, 3),
            "cases": self.cases, "declined": self.declined, "found": self.found,
            "checked_anything": self.checked_anything,
            "declined_by_property": {name: dict(reasons) for name, reasons in self.declined_by_property.items()},
            "declined_inside_domain": self.declined_inside_domain, "case_domain": self.case_domain,
            "not_checked": {what: dict(counts) for what, counts in self.not_checked.items()},
            "compile_key": self.compile_key, "autotuners": self.autotuners, "counterexamples": self.counterexamples,
            "not_applicable": dict(self.not_applicable),
            "by_property": dict(self.by_property), "by_kind": dict(self.by_kind),
            "failures": [failure.to_json() for failure in self.failures], "workers": self.workers,
            "unfinished": self.unfinished, "known": [failure.to_json() for failure in self.known],
            "known_cases": dict(self.known_cases),
            "stale": self.stale, "interrupted": self.interrupted, "flashcheck_error": self.flashcheck_error,
            "pace": {"span": PACE_SPAN, "cases_per_span": list(self.pace),
                     "case_seconds": round(self.case_seconds, 3), "compile_seconds": round(self.compile_seconds, 3),
                     "phases": {name: round(spent, 3) for name, spent in self.phase_seconds.items()}},
        }
