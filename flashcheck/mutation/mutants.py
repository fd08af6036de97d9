"""Mutation testing: how many planted kernel bugs the property suite kills.

A *catalogue* is an importable module with

- ``MUTATIONS``: a mapping from mutant name to a record with ``operator`` (a category),
  ``bug`` (what it plants), ``equivalent`` (None, or why the mutant cannot change
  any result) and, optionally, ``beyond_standard`` (None, or why every property accepts the
  mutant's results although they change: the mutant is as accurate as the plain
  implementation in the same precision that the suite holds every kernel to, and only the
  kernel's own, stricter tests, which the reason names, tell it apart);
- an attribute per mutant name, and ``original``, that are protocol implementations
  (the mutants, and the unmutated implementation they derive from), so that each
  resolves as ``"<catalogue>:<name>"``;
- optionally ``COUNTEREXAMPLES``: the path of a file of the kernel's recorded
  counterexamples (:mod:`flashcheck.regress.counterexamples`), which every fuzz run, the
  original's included, checks before it draws: a mutant that plants a bug once found is
  killed by the case that found it, on the device where it was found.

``flashcheck.kernels.mutations`` is the project kernel's catalogue.

Each mutant is fuzzed in a subprocess of its own (``python -m flashcheck.cli fuzz``) for
a time budget, with a per-mutant hypothesis database so that a re-run replays earlier
kills first. The subprocess isolates crashes: one that dies by a signal, or exits with a
status other than fuzz's 0-4, killed the mutant by "crash"; one that runs past the
budget plus a grace period is killed and the mutant counts as killed by "hang". The
fuzzer's own crash, fatal-error and hang reports carry the case that was running; such a kill stands
only when the unmutated implementation replays that case without crashing or hanging
(:func:`confirm_on_original`): otherwise the mutant is "unconfirmed" (a case that
compiles slowly on a busy machine hangs any kernel). Exit 2
(or a result that cannot be read) is an error of the setup, neither kill nor survivor.
The unmutated implementation must pass the same fuzz first: a suite that flags it
makes any mutation score meaningless.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from flashcheck import peers
from flashcheck.engine.fuzz_result import compile_share

#: The name under which a catalogue exposes its unmutated implementation.
ORIGINAL = "original"

#: Exit statuses of ``flashcheck fuzz``: nothing found, counterexample, usage error, nothing
#: checked (every case declined or unfinished), flashcheck's own error (see flashcheck.cli.commands).
_FUZZ_OK, _FUZZ_FOUND, _FUZZ_USAGE, _FUZZ_UNCHECKED, _FUZZ_INTERNAL = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class Entry:
    """One mutant of a catalogue as the engine sees it."""

    name: str
    operator: str
    bug: str
    equivalent: str | None = None
    beyond_standard: str | None = None


@dataclass(frozen=True)
class MutantFuzzSettings:
    """How each mutant is fuzzed: seconds per mutant, seed (None: random), device,
    ``grace`` seconds past the budget before a run counts as hung, the root of the
    per-mutant example databases, the properties (None: all), ``case_timeout``, the
    seconds one case may run before the fuzzer reports it as a hang (see
    :func:`default_case_timeout`), ``workers``, the fuzzer's worker processes per
    mutant, ``shrink_time``, the seconds spent shrinking a mutant's first failure (0:
    it is reported as drawn; the score needs only the killing property, and on a GPU each
    shrink step can compile a new kernel variant), and ``counterexamples``, the path of a
    file of recorded counterexamples each run checks first (None: none)."""

    budget: float
    device: str
    seed: int | None = None
    grace: float = 60.0
    database: str = ".flashcheck/mutants"
    properties: tuple[str, ...] | None = None
    case_timeout: float | None = None
    workers: int = 1
    shrink_time: float = 0.0
    counterexamples: str | None = None

    def __post_init__(self):
        if not self.budget > 0:
            raise ValueError(f"budget: expected a positive number of seconds, got {self.budget}")
        if not self.grace >= 0:
            raise ValueError(f"grace: expected a non-negative number of seconds, got {self.grace}")
        if self.workers < 1:
            raise ValueError(f"workers: expected at least 1, got {self.workers}")
        if not self.shrink_time >= 0:
            raise ValueError(f"shrink_time: expected a non-negative number of seconds, got {self.shrink_time}")
        if self.case_timeout is not None and not self.case_timeout > 0:
            raise ValueError(f"case_timeout: expected a positive number of seconds, got {self.case_timeout}")


def default_case_timeout(budget: float) -> float:
    """Half the budget, at least 10 s and at most 120 s. The fuzzer stops a case still
    running when its budget ends without reporting it, so a mutant that hangs is only
    seen when a case times out inside the budget: half of it leaves room for the first
    cases, while 10 s keeps a slow correct case in the interpreter from counting as hung."""
    return max(10.0, min(120.0, budget / 2))


@dataclass
class Outcome:
    """What fuzzing one mutant (or the original) gave.

    ``verdict``: "killed", "survived", "unconfirmed" (a crash or hang that the unmutated
    implementation shows on the same case too; ``detail`` says what it did) or "error" (the
    fuzz run gave no verdict: a usage error, flashcheck's own error, or no case checked, which
    is no survival; ``detail`` says which).
    ``killed_by``: "property", "crash", "fatal" (a fatal CUDA error) or "hang" when killed (and what was not confirmed
    when unconfirmed). ``property_name``, ``case``, ``evidence`` (its first line) and
    ``replay`` come from the fuzzer's counterexample; ``signal`` names the signal of a
    crash. ``seconds``: the fuzzer's time to its first counterexample (before
    shrinking) or to the end of the budget, or the wall time of a crash or hang. ``detail``: for an error or
    a crash, the tail of the subprocess's output. ``checked`` (cases per property), ``kinds`` (cases per
    case kind: dtype, band, GQA, ...), ``compiling`` (the share of case time spent compiling) and
    ``classes`` (the compile classes each worker drew in, in a few words, by worker) say what the fuzz
    run checked, where its JSON result says it: a survivor's record of what it survived.
    """

    name: str
    operator: str = ""
    bug: str = ""
    equivalent: str | None = None
    beyond_standard: str | None = None
    verdict: str = "error"
    killed_by: str | None = None
    property_name: str | None = None
    signal: str | None = None
    seconds: float = 0.0
    cases: int | None = None
    case: str | None = None
    evidence: str | None = None
    replay: str | None = None
    detail: str | None = None
    checked: dict[str, int] | None = None
    kinds: dict[str, int] | None = None
    compiling: float | None = None
    classes: list[list[str]] | None = None

    @classmethod
    def of(cls, entry: Entry, **fields) -> "Outcome":
        """An outcome of ``entry``, carrying its name, operator, bug and declarations."""
        return cls(entry.name, entry.operator, entry.bug, entry.equivalent, entry.beyond_standard, **fields)

    @property
    def unscored(self) -> bool:
        """Left out of the score: declared equivalent, or beyond the suite's standard."""
        return bool(self.equivalent or self.beyond_standard)

    @property
    def killed(self) -> bool:
        return self.verdict == "killed"

    @property
    def result(self) -> str:
        """The kill-matrix cell: the killing property, "crash (SIGNAL)", "hang",
        "SURVIVED", "UNCONFIRMED", "equivalent", "beyond standard" or "ERROR"."""
        if self.verdict == "error":
            return "ERROR"
        if self.verdict == "unconfirmed":
            return "UNCONFIRMED"
        if self.verdict == "survived":
            if self.equivalent:
                return "equivalent"
            return "beyond standard" if self.beyond_standard else "SURVIVED"
        if self.killed_by == "property":
            return self.property_name or "property"
        if self.killed_by == "crash" and self.signal:
            return f"crash ({self.signal})"
        return self.killed_by or "killed"


@dataclass
class MutationRun:
    """The kill matrix of a catalogue: the original's outcome and one per mutant;
    ``pending`` names the mutants not fuzzed yet (a run still going, or stopped early)."""

    catalogue: str
    settings: MutantFuzzSettings
    original: Outcome
    outcomes: list[Outcome] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    @property
    def scored(self) -> list[Outcome]:
        """The mutants the score counts: all but those declared equivalent or beyond the
        suite's standard."""
        return [o for o in self.outcomes if not o.unscored]

    @property
    def killed(self) -> list[Outcome]:
        return [o for o in self.scored if o.killed]

    @property
    def score(self) -> float | None:
        """killed / (mutants - declared equivalent or beyond standard); None when nothing is
        scored."""
        scored = [o for o in self.scored if o.verdict != "error"]
        return len(self.killed) / len(scored) if scored else None

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.scored if o.verdict == "survived"]

    @property
    def unconfirmed(self) -> list[Outcome]:
        """Scored mutants whose only kill was a crash or hang the original shows too."""
        return [o for o in self.scored if o.verdict == "unconfirmed"]

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.verdict == "error"]

    @property
    def wrongly_equivalent(self) -> list[Outcome]:
        """Declared-equivalent mutants that were killed: the declaration is wrong (or the
        suite flags a result that did not change)."""
        return [o for o in self.outcomes if o.equivalent and o.killed]

    @property
    def killed_beyond_standard(self) -> list[Outcome]:
        """Mutants declared beyond the suite's standard that a property killed all the same:
        not scored, but shown, since the declaration may have aged (a property that grew
        stricter) or the case found is one the reason did not foresee."""
        return [o for o in self.outcomes if o.beyond_standard and o.killed]

    def to_json(self) -> dict:
        return {
            "catalogue": self.catalogue,
            "settings": asdict(self.settings),
            "original": asdict(self.original),
            "mutants": [asdict(o) for o in self.outcomes],
            "killed": len(self.killed),
            "scored": len([o for o in self.scored if o.verdict != "error"]),
            "score": self.score,
            "survivors": [o.name for o in self.survivors],
            "unconfirmed": [o.name for o in self.unconfirmed],
            "wrongly_equivalent": [o.name for o in self.wrongly_equivalent],
            "killed_beyond_standard": [o.name for o in self.killed_beyond_standard],
            "errors": [o.name for o in self.errors],
            "pending": list(self.pending),
        }


# -- the catalogue ----------------------------------------------------------------------------


def load_catalogue(module_name: str) -> dict[str, Entry]:
    """The mutants of catalogue ``module_name``, in catalogue order; ValueError naming
    ``--catalogue`` if it cannot be imported or does not follow the contract above."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"--catalogue: cannot import {module_name!r}: {error}") from error
    mutations = getattr(module, "MUTATIONS", None)
    if not isinstance(mutations, Mapping) or not mutations:
        raise ValueError(f"--catalogue: {module_name!r} has no MUTATIONS mapping of name -> mutation")
    entries = {}
    for name, record in mutations.items():
        try:
            entries[name] = Entry(name, record.operator, record.bug, getattr(record, "equivalent", None),
                                  getattr(record, "beyond_standard", None))
        except AttributeError as error:
            raise ValueError(f"--catalogue: {module_name}.MUTATIONS[{name!r}] lacks {error.name!r}") from error
    return entries


def catalogue_counterexamples(module_name: str) -> str | None:
    """The path of catalogue ``module_name``'s recorded counterexamples (its
    ``COUNTEREXAMPLES``), or None where it records none."""
    module = importlib.import_module(module_name)
    path = module.__dict__.get("COUNTEREXAMPLES")  # not getattr: a catalogue resolves names as mutants
    return None if path is None else str(path)


# -- one fuzz subprocess ----------------------------------------------------------------------


def fuzz_command(impl: str, settings: MutantFuzzSettings, json_path: Path, database: Path) -> list[str]:
    """The ``flashcheck fuzz`` command line that fuzzes ``impl``."""
    command = [sys.executable, "-m", "flashcheck.cli", "fuzz", "--impl", impl, "--budget", str(settings.budget),
               "--device", settings.device, "--json", str(json_path), "--database", str(database),
               "--workers", str(settings.workers), "--shrink-time", str(settings.shrink_time)]
    if settings.seed is not None:
        command += ["--seed", str(settings.seed)]
    if settings.case_timeout is not None:
        command += ["--case-timeout", str(settings.case_timeout)]
    for name in settings.properties or ():
        command += ["--property", name]
    if settings.counterexamples is not None:
        command += ["--counterexamples", str(settings.counterexamples)]
    return command


def fuzz_one(catalogue: str, entry: Entry, settings: MutantFuzzSettings, *, environment: dict | None = None) -> Outcome:
    """Fuzz ``<catalogue>:<entry.name>`` in a subprocess and classify how it ended; a
    mutant's kill by a crash or hang on a case is then checked on the original
    (:func:`confirm_on_original`)."""
    outcome = Outcome.of(entry)
    with tempfile.TemporaryDirectory(prefix="flashcheck-mutate-") as scratch:
        json_path = Path(scratch) / "result.json"
        command = fuzz_command(f"{catalogue}:{entry.name}", settings, json_path, Path(settings.database) / entry.name)
        _run_fuzz(command, json_path, settings.budget + settings.grace, outcome, environment)
    if entry.name != ORIGINAL:
        confirm_on_original(catalogue, outcome, settings, environment=environment)
    return outcome


def confirm_on_original(catalogue: str, outcome: Outcome, settings: MutantFuzzSettings, *,
                        environment: dict | None = None) -> Outcome:
    """Check a kill by a crash or hang on a case against the unmutated implementation.

    The original replays that case of that property alone (``flashcheck fuzz --replay-only``,
    the same per-case timeout), with an empty Triton cache: the mutant, being new source,
    compiled every kernel of the case from scratch, and a case that hangs only while it
    compiles (a float32 head-dim-256 backward took 148 s on an idle H100 host: docs/performance.md)
    must then hang the original too, however much of it the original's own fuzz run compiled before. If
    the original crashes, hangs or fails there too, the case says nothing about the mutant,
    and ``outcome`` becomes "unconfirmed" with what the original did in ``detail``. A kill
    by a property, or a crash or hang without a case, is left as it is. Returns
    ``outcome``, updated in place."""
    if not (outcome.killed and outcome.killed_by in ("crash", "fatal", "hang") and outcome.case
            and outcome.property_name):
        return outcome
    from flashcheck.engine.crash_store import CrashStore, database_folder
    from flashcheck.engine.fuzz_workers import FuzzOptions

    original = f"{catalogue}:{ORIGINAL}"
    # The timeout the mutant ran under: without one, fuzz's own default applied.
    timeout = settings.case_timeout if settings.case_timeout is not None else FuzzOptions.case_timeout
    replay = MutantFuzzSettings(budget=timeout + settings.grace, device=settings.device, grace=settings.grace,
                      properties=(outcome.property_name,), case_timeout=timeout)
    with tempfile.TemporaryDirectory(prefix="flashcheck-confirm-") as scratch:
        database, json_path = Path(scratch) / "db", Path(scratch) / "result.json"
        CrashStore.in_database(database_folder(database, original)).add(
            outcome.property_name, outcome.case, outcome.killed_by)
        command = fuzz_command(original, replay, json_path, database) + ["--replay-only"]
        cold = dict(os.environ if environment is None else environment,
                    TRITON_CACHE_DIR=str(Path(scratch) / "triton-cache"))
        check = _run_fuzz(command, json_path, replay.budget + replay.grace,
                          Outcome(ORIGINAL, "", "the unmutated implementation"), cold)
    if check.verdict == "survived" and check.cases:
        return outcome  # the original ran the case: the crash or hang is the mutant's
    what = check.evidence or check.detail or ("the case did not finish" if check.verdict == "survived" else "")
    outcome.verdict = "unconfirmed"
    outcome.detail = f"the unmutated implementation, replaying the case, gave: {check.result} ({what})"
    return outcome


def _run_fuzz(command: list[str], json_path: Path, timeout: float, outcome: Outcome,
              environment: dict | None) -> Outcome:
    """Run one fuzz subprocess for at most ``timeout`` seconds and fill ``outcome`` from how it ended."""
    start = time.monotonic()
    # A session of its own, so that a hang is killed with every process it started.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=environment, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(process)
        process.communicate()
        outcome.verdict, outcome.killed_by = "killed", "hang"
        outcome.seconds = time.monotonic() - start
        outcome.evidence = f"no result {timeout:g} s after the start; killed"
        return outcome
    finally:
        if process.poll() is None:  # interrupted while waiting
            _kill_session(process)
    outcome.seconds = time.monotonic() - start
    tail = _tail(output)
    status = process.returncode
    if status < 0 or status not in (_FUZZ_OK, _FUZZ_FOUND, _FUZZ_USAGE, _FUZZ_UNCHECKED, _FUZZ_INTERNAL):
        outcome.verdict, outcome.killed_by = "killed", "crash"
        outcome.signal = signal.Signals(-status).name if status < 0 and -status in _SIGNALS else None
        outcome.evidence = f"the fuzz process died ({outcome.signal or f'exit status {status}'})"
        outcome.detail = tail
        return outcome
    if status == _FUZZ_USAGE:
        outcome.detail = f"flashcheck fuzz exited 2 (usage or setup error):\n{tail}"
        return outcome
    if status == _FUZZ_INTERNAL:
        outcome.detail = f"flashcheck fuzz exited 4 (flashcheck's own error, not a finding):\n{tail}"
        return outcome
    if status == _FUZZ_UNCHECKED:
        outcome.detail = f"flashcheck fuzz exited 3 (nothing was checked: every case declined or unfinished):\n{tail}"
        return outcome
    try:
        result = json.loads(json_path.read_text())
    except (OSError, ValueError) as error:
        outcome.detail = f"flashcheck fuzz exited {status} without a readable JSON result ({error}):\n{tail}"
        return outcome
    return _classify(outcome, status, result, tail)


_SIGNALS = {s.value for s in signal.Signals}


def _classify(outcome: Outcome, status: int, result: dict, tail: str) -> Outcome:
    """Fill ``outcome`` from the fuzzer's JSON result (schema: FuzzResult.to_json)."""
    outcome.cases = result.get("cases")
    outcome.seconds = float(result.get("seconds", outcome.seconds))
    outcome.checked, outcome.kinds = result.get("by_property"), result.get("by_kind")
    pace = result.get("pace") or {}
    outcome.compiling = compile_share(pace.get("case_seconds", 0.0), pace.get("compile_seconds", 0.0))
    labelled = [worker.get("classes") for worker in result.get("workers") or ()]
    outcome.classes = labelled if any(labelled) else None
    failures = result.get("failures") or []
    if status == _FUZZ_OK and not result.get("found"):
        outcome.verdict = "survived"
        return outcome
    if status == _FUZZ_FOUND and result.get("found") and failures:
        failure = failures[0]
        outcome.verdict, outcome.killed_by = "killed", failure.get("kind") or "property"
        outcome.property_name, outcome.case = failure.get("property"), failure.get("case")
        outcome.replay = failure.get("replay")
        outcome.evidence = first_line(failure.get("evidence"))
        if failure.get("seconds") is not None:
            outcome.seconds = float(failure["seconds"])  # when it was found, before shrinking
        return outcome
    outcome.detail = f"flashcheck fuzz exited {status} but its JSON says found={result.get('found')}:\n{tail}"
    return outcome


def first_line(text: str | None, width: int = 120) -> str | None:
    """The first non-empty line of ``text``, cut to ``width`` characters."""
    if not text:
        return None
    line = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def _tail(output: bytes | None, lines: int = 20) -> str:
    return "\n".join((output or b"").decode(errors="replace").rstrip().splitlines()[-lines:])


def _kill_session(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- the whole catalogue ----------------------------------------------------------------------


def subprocess_environment(catalogue: str) -> dict:
    """This process's environment, with the catalogue's import root on PYTHONPATH when
    the subprocess could not otherwise import it (e.g. a catalogue under tests/)."""
    environment = dict(os.environ)
    root = peers.import_root(catalogue)
    if root is not None:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, (root, environment.get("PYTHONPATH"))))
    return environment


def fuzz_all(catalogue: str, entries: list[Entry], settings: MutantFuzzSettings, *, jobs: int = 1,
        on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Fuzz every entry (a mutant, or ``Entry(ORIGINAL, ...)`` for the unmutated
    implementation), ``jobs`` at a time; outcomes in the entries' order."""
    if jobs < 1:
        raise ValueError(f"jobs: expected at least 1, got {jobs}")
    environment = subprocess_environment(catalogue)

    def one(entry: Entry) -> Outcome:
        outcome = fuzz_one(catalogue, entry, settings, environment=environment)
        if on_outcome is not None:
            on_outcome(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, entries))


def original_entry() -> Entry:
    """The catalogue's unmutated implementation as an entry to fuzz like the mutants."""
    return Entry(ORIGINAL, "", "the unmutated implementation")
