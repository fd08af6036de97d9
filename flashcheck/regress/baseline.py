"""Regression baselines: an implementation's error relative to its allowance, bucket by bucket.

Passing the properties says every error is within its allowance; it does not say a change
left the kernel as accurate as it was. A change that doubles the error but stays inside the
tolerance passes every property, and a baseline is what catches it.

**Buckets.** Each comparison of a corpus run (:func:`flashcheck.regress.corpus.measure_corpus`) gives one worst
ratio, the largest elementwise error/allowed of that output on that case. Comparisons are
grouped by output (out, lse, dq, dk, dv) × dtype × head-dim class × mask kind (none, causal,
window, mask, varlen) × length class, and a bucket holds the largest ratio of its
comparisons. Its key is one line of text, e.g. ``dq bfloat16 d<=64 varlen n<=256``.

**The margin rule.** A bucket has *worsened* when its new ratio ``after`` exceeds
``before × (1 + relative) + absolute`` (:data:`MARGIN`: relative 0.25, absolute 0.01), and
any ``after > 1`` is a failure whatever the baseline said (the error then exceeds its
allowance, which no baseline can excuse). Why these numbers:

- The project kernel is bitwise deterministic and the corpus inputs are drawn on the CPU
  from fixed seeds, so rerunning unchanged code on the same device and versions gives the
  same ratios exactly. What moves them is a change in the arithmetic: a legitimate reordering
  (other block sizes, another Triton version, an fma) shifts a worst-element statistic by
  ten or twenty percent; 25% lets those through and catches an error that grew by more.
- A relative margin alone flaps on ratios near zero (float32 gradients sit near 0.001, where
  a reordering may double the ratio and nothing is wrong); the absolute floor of 0.01, a
  hundredth of the allowance, keeps those quiet while an error of a tenth of the allowance
  added anywhere is still caught.

A bucket in the file that the new run does not produce (a case that no longer runs, a
feature no longer declared) is a failure too; a bucket the file lacks is reported as new.

**The file** (:meth:`Baseline.dumps`) is JSON laid out for review: a header of one field
per line (format and version, implementation, device kind and name, corpus name and digest,
versions of flashcheck, torch and triton, the margin, the date) and then one bucket per line,
``"key": {"ratio": r, "cases": n, "worst": "<case spec>"}``, ``worst`` being the case that
set the ratio (replay it with ``flashcheck check --case``). Ratios are written to four
significant digits.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path

from flashcheck.regress import corpus as corpora

FORMAT = "flashcheck-baseline"
FORMAT_VERSION = 1

HEAD_DIM_CLASSES = (32, 64, 128, 256)  # d<=32, d<=64, d<=128, d<=256, then d>256
LENGTH_CLASSES = (32, 256, 2048)  # n<=32 (a couple of interpreter blocks), n<=256, n<=2048, n>2048
DTYPE_ORDER = ("float16", "bfloat16", "float32")


class BaselineError(ValueError):
    """A baseline file cannot be used: missing, unreadable, another format version, or
    recorded on another corpus. A usage error, not a regression."""


@dataclasses.dataclass(frozen=True)
class Margin:
    """How much a bucket's ratio may grow before it counts as worse (see the module docstring)."""

    relative: float = 0.25
    absolute: float = 0.01

    def limit(self, before: float) -> float:
        """The largest ratio that still passes for a bucket recorded at ``before`` (never above 1)."""
        return min(1.0, before * (1.0 + self.relative) + self.absolute)

    @property
    def rule(self) -> str:
        return (f"worse when after > before * (1 + {self.relative:g}) + {self.absolute:g}, "
                f"or after > 1 whatever before was")


MARGIN = Margin()


@dataclasses.dataclass(frozen=True)
class Bucket:
    """The largest worst ratio of a bucket's comparisons, how many there were, and the case
    (its spec) that set the ratio."""

    ratio: float
    cases: int
    worst: str


# -- buckets ---------------------------------------------------------------------------------

def _class(value: int, bounds: tuple[int, ...], letter: str) -> str:
    for bound in bounds:
        if value <= bound:
            return f"{letter}<={bound}"
    return f"{letter}>{bounds[-1]}"


def bucket_key(output: str, case) -> str:
    """The bucket of ``output`` on ``case``: ``"<output> <dtype> d<=D <mask kind> n<=N"``."""
    return " ".join((
        output, case.dtype, _class(case.head_dim, HEAD_DIM_CLASSES, "d"), corpora.mask_kind(case),
        _class(corpora.length_of(case), LENGTH_CLASSES, "n"),
    ))


def sort_key(key: str) -> tuple:
    """Orders bucket keys by output, dtype, head dim, mask kind and length, as the file lists them."""
    parts = key.split(" ")
    if len(parts) != 5:
        return (len(corpora.OUTPUTS), key)

    def rank(values, value):
        return values.index(value) if value in values else len(values)

    def bound(text):
        number = re.sub(r"^[a-z][<>]=?", "", text)
        return (text[1] == ">", int(number) if number.isdigit() else 0)

    output, dtype, head_dim, mask, length = parts
    return (rank(corpora.OUTPUTS, output), rank(DTYPE_ORDER, dtype), bound(head_dim),
            rank(corpora.MASK_KINDS, mask), bound(length), key)


def buckets(results) -> dict[str, Bucket]:
    """Bucket the comparisons of a corpus run (a list of :class:`flashcheck.regress.corpus.CaseResult`)."""
    found: dict[str, Bucket] = {}
    for result in results:
        for output, error in result.outputs.items():
            key = bucket_key(output, result.case)
            previous = found.get(key)
            if previous is None:
                found[key] = Bucket(error.worst_ratio, 1, result.case.spec())
            elif error.worst_ratio > previous.ratio:
                found[key] = Bucket(error.worst_ratio, previous.cases + 1, result.case.spec())
            else:
                found[key] = dataclasses.replace(previous, cases=previous.cases + 1)
    return {key: found[key] for key in sorted(found, key=sort_key)}


def exceeded(results) -> list[tuple]:
    """``(case, output, OutputError)`` for every comparison beyond its allowance."""
    return [(r.case, name, error) for r in results for name, error in r.outputs.items() if error.exceeded]


# -- the file --------------------------------------------------------------------------------

@dataclasses.dataclass
class Baseline:
    """A recorded baseline: where and how it was measured, and its buckets."""

    impl: str
    device_kind: str
    device: str
    corpus: str
    corpus_digest: str
    versions: dict
    buckets: dict[str, Bucket]
    margin: Margin = MARGIN
    recorded: str = dataclasses.field(default_factory=lambda: datetime.date.today().isoformat())

    def dumps(self) -> str:
        """The file's text: JSON with one header field and one bucket per line."""
        header = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "impl": self.impl,
            "device_kind": self.device_kind,
            "device": self.device,
            "corpus": self.corpus,
            "corpus_digest": self.corpus_digest,
            "versions": self.versions,
            "margin": {"relative": self.margin.relative, "absolute": self.margin.absolute, "rule": self.margin.rule},
            "recorded": self.recorded,
        }
        lines = ["{"]
        lines += [f"  {json.dumps(name)}: {json.dumps(value)}," for name, value in header.items()]
        lines.append('  "buckets": {')
        entries = [
            f"    {json.dumps(key)}: "
            + json.dumps({"ratio": float(f"{bucket.ratio:.4g}"), "cases": bucket.cases, "worst": bucket.worst})
            for key, bucket in sorted(self.buckets.items(), key=lambda item: sort_key(item[0]))
        ]
        lines.append(",\n".join(entries))
        lines += ["  }", "}"]
        return "\n".join(lines) + "\n"

    @classmethod
    def loads(cls, text: str, source: str = "the baseline") -> "Baseline":
        """Parse :meth:`dumps`' text; BaselineError naming ``source`` when it is not a
        baseline of this format version."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise BaselineError(f"{source}: not valid JSON ({error})") from error
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BaselineError(f"{source}: not a flashcheck baseline (expected \"format\": \"{FORMAT}\")")
        if data.get("format_version") != FORMAT_VERSION:
            raise BaselineError(
                f"{source}: format version {data.get('format_version')!r}, this flashcheck reads version "
                f"{FORMAT_VERSION}; re-record it with 'flashcheck baseline record'"
            )
        try:
            margin = Margin(float(data["margin"]["relative"]), float(data["margin"]["absolute"]))
            buckets = {
                str(key): Bucket(float(entry["ratio"]), int(entry["cases"]), str(entry["worst"]))
                for key, entry in data["buckets"].items()
            }
            baseline = cls(
                impl=str(data["impl"]), device_kind=str(data["device_kind"]), device=str(data["device"]),
                corpus=str(data["corpus"]), corpus_digest=str(data["corpus_digest"]),
                versions=dict(data["versions"]), buckets=buckets, margin=margin, recorded=str(data["recorded"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise BaselineError(f"{source}: malformed baseline ({type(error).__name__}: {error})") from error
        if margin.relative < 0 or margin.absolute < 0:
            raise BaselineError(f"{source}: margin must be non-negative, got {margin}")
        return baseline


def read(path) -> Baseline:
    """The baseline in ``path``; BaselineError naming ``--file`` when it cannot be used."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise BaselineError(f"--file: cannot read baseline {str(path)!r}: {error.strerror or error}") from error
    return Baseline.loads(text, f"--file {path}")


def write(baseline: Baseline, path) -> None:
    """Write ``baseline`` to ``path``, creating its directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(baseline.dumps())


def default_path(impl_name: str, device_kind: str) -> Path:
    """``ci/baselines/<impl>-<device kind>.json`` (relative: run from the repository root),
    the implementation's name made safe for a file name (``pkg.mod:attr`` -> ``pkg.mod_attr``)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", impl_name)
    return Path("ci") / "baselines" / f"{safe}-{device_kind}.json"


def check_corpus(baseline: Baseline, corpus: corpora.Corpus, source: str) -> None:
    """BaselineError unless ``corpus`` is the one ``baseline`` was recorded on, unchanged."""
    if baseline.corpus != corpus.name:
        raise BaselineError(f"--corpus: {source} was recorded on corpus {baseline.corpus!r}, not {corpus.name!r}")
    if baseline.corpus_digest != corpus.digest():
        raise BaselineError(
            f"{source}: corpus {corpus.name!r} has changed since it was recorded (digest {baseline.corpus_digest} "
            f"in the file, {corpus.digest()} now): its cases or the way they are measured differ, so the ratios "
            f"are not comparable; re-record it with 'flashcheck baseline record' and review the diff"
        )


# -- comparing -------------------------------------------------------------------------------

VERDICTS = ("exceeds", "worse", "missing", "ok", "better", "new")
FAILING = frozenset({"exceeds", "worse", "missing"})


@dataclasses.dataclass(frozen=True)
class Row:
    """One bucket of a check: its ratio before (recorded) and after (measured), the largest
    ratio the margin allows, and the verdict (one of :data:`VERDICTS`)."""

    key: str
    before: float | None
    after: float | None
    limit: float | None
    verdict: str
    worst: str = ""

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING


def compare(baseline: Baseline, measured: dict[str, Bucket]) -> list[Row]:
    """Each bucket of ``baseline`` and ``measured`` with its verdict, under the baseline's margin.

    ``exceeds``: after > 1; ``worse``: after beyond the margin; ``missing``: in the file, not
    measured; ``better``: before beyond the margin of after (re-recording would tighten it);
    ``new``: measured, not in the file; ``ok`` otherwise. The first three fail.
    """
    rows = []
    for key in sorted(set(baseline.buckets) | set(measured), key=sort_key):
        recorded, now = baseline.buckets.get(key), measured.get(key)
        if recorded is None:
            verdict = "exceeds" if now.ratio > 1.0 else "new"
            rows.append(Row(key, None, now.ratio, None, verdict, now.worst))
            continue
        limit = baseline.margin.limit(recorded.ratio)
        if now is None:
            rows.append(Row(key, recorded.ratio, None, limit, "missing", recorded.worst))
            continue
        if now.ratio > 1.0:
            verdict = "exceeds"
        elif now.ratio > limit:
            verdict = "worse"
        elif recorded.ratio > baseline.margin.limit(now.ratio):
            verdict = "better"
        else:
            verdict = "ok"
        rows.append(Row(key, recorded.ratio, now.ratio, limit, verdict, now.worst))
    return rows
