"""The error report: how close an implementation comes to its allowances, as markdown and plots.

:func:`build` runs a corpus (by default a sequence-length sweep per dtype,
:data:`flashcheck.regress.corpus.SWEEPS`) forward and backward and gathers per case and output the
worst elementwise error/allowed, and over all elements a histogram of the ratios.
:func:`write` puts ``report.md`` and its PNG figures (:mod:`flashcheck.regress.plots`) into a directory:

- ``errors-<output>.png``: observed and allowed error against sequence length, per dtype;
- ``ratios.png``: histograms of elementwise error/allowed, per output and dtype;
- in ``report.md``: the verdict, the environment, the figures and a table of the worst ratio
  of every case and output, with the case specs to replay.

(Not to be confused with :mod:`flashcheck.cli.fuzz_console`, the fuzzer's console output.)
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import numpy as np

from flashcheck.regress import corpus as corpora
from flashcheck.regress import corpus_workers, environment, plots


@dataclasses.dataclass
class ErrorReport:
    """What :func:`build` measured: the per-case results (without elementwise ratios) and
    the ratio histograms ``{output: {dtype: (counts, zeros)}}``."""

    impl_name: str
    device: str
    corpus: corpora.Corpus
    results: list
    histograms: dict

    @property
    def exceeded(self) -> list[tuple]:
        """``(case, output, OutputError)`` for every comparison beyond its allowance."""
        return [(r.case, name, e) for r in self.results for name, e in r.outputs.items() if e.exceeded]

    @property
    def raised(self) -> list:
        """The results of the cases the implementation raised on (a finding each)."""
        return [r for r in self.results if r.raised]

    @property
    def outputs(self) -> list[str]:
        measured = {name for r in self.results for name in r.outputs}
        return [name for name in corpora.OUTPUTS if name in measured]


def build(impl_name: str, corpus: corpora.Corpus, device, *, jobs: int = 1, on_case=None) -> ErrorReport:
    """Measure the implementation named ``impl_name`` on every case of ``corpus``, ``jobs``
    cases at a time (see :func:`flashcheck.regress.corpus_workers.measure_corpus`), keeping the elementwise ratios
    only as histograms so that long sequences stay cheap."""
    histograms: dict = {}

    def collect(index, result):
        for name, error in result.outputs.items():
            counts, zeros = plots.histogram(error.ratios.numpy())
            error.ratios = None  # binned; the elements themselves are not kept
            per_dtype = histograms.setdefault(name, {})
            previous = per_dtype.get(result.case.dtype, (np.zeros_like(counts), 0))
            per_dtype[result.case.dtype] = (previous[0] + counts, previous[1] + zeros)
        if on_case is not None:
            on_case(index, result)

    results = corpus_workers.measure_corpus(impl_name, corpus, device, jobs=jobs, elementwise=True, on_case=collect)
    ordered = {name: histograms[name] for name in corpora.OUTPUTS if name in histograms}
    return ErrorReport(impl_name, str(device), corpus, results, ordered)


def write(report: ErrorReport, directory) -> Path:
    """Write ``report.md`` and its figures into ``directory`` (created); return the markdown's path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    figures = []
    for output in report.outputs:
        name = f"errors-{output}.png"
        plots.error_vs_length(directory / name, output, _series(report, output))
        figures.append((f"{output}: observed and allowed error against sequence length", name))
    if report.histograms:
        plots.ratio_histograms(directory / "ratios.png", report.histograms)
        figures.append(("elementwise error / allowed, all cases", "ratios.png"))
    path = directory / "report.md"
    path.write_text(_markdown(report, figures))
    return path


def _series(report: ErrorReport, output: str) -> dict:
    series: dict = {}
    for result in report.results:
        error = result.outputs.get(output)
        if error is not None:
            m = error.metrics
            series.setdefault(result.case.dtype, []).append(
                (corpora.length_of(result.case), m.worst_error, m.worst_allowed, m.max_abs))
    return series


def _markdown(report: ErrorReport, figures) -> str:
    exceeded = report.exceeded
    lines = [f"# Error report: `{report.impl_name}` on {environment.device_name(report.device)}", ""]
    if exceeded:
        lines.append(f"**FAILED: {len(exceeded)} comparisons exceed their allowance** (ratios in bold below).")
    if report.raised:
        lines.append(f"**FAILED: the implementation raised on {len(report.raised)} cases** (marked below).")
    if not exceeded and not report.raised:
        lines.append("**Passed: every comparison is within its allowance.**")
    worst = max((e.worst_ratio for r in report.results for e in r.outputs.values()), default=0.0)
    lines += [
        "",
        f"Worst error/allowed over the corpus: {worst:.3g}. The allowance of each element is derived from "
        "the dtype, the reduction lengths and the data (`flashcheck/oracle/tolerance.py`); a ratio above 1 is a failure.",
        "",
        "## Environment",
        "",
        "| | |",
        "|---|---|",
        f"| implementation | `{report.impl_name}` |",
        f"| device | {environment.device_name(report.device)} (`{report.device}`) |",
        *(f"| {package} | {version} |" for package, version in environment.versions().items()),
        f"| corpus | `{report.corpus.name}` ({report.corpus.description}), digest `{report.corpus.digest()}` |",
        f"| date | {datetime.date.today().isoformat()} |",
        "",
        "## Figures",
        "",
    ]
    for title, name in figures:
        lines += [f"![{title}]({name})", ""]
    lines += ["## Worst error/allowed per case", ""]
    outputs = report.outputs
    lines.append("| # | dtype | mask | length | head dim | " + " | ".join(outputs) + " | case |")
    lines.append("|---:|---|---|---:|---:|" + "---:|" * len(outputs) + "---|")
    for index, result in enumerate(report.results):
        case = result.case
        cells = [_ratio_cell(result.outputs.get(name)) for name in outputs]
        spec = f"`{case.spec()}`" + (f" (skipped: {result.skipped})" if result.skipped else "") + (
            f" (**raised** {result.raised})" if result.raised else "")
        lines.append(f"| {index} | {case.dtype} | {corpora.mask_kind(case)} | {corpora.length_of(case)} | "
                     f"{case.head_dim} | " + " | ".join(cells) + f" | {spec} |")
    return "\n".join(lines) + "\n"


def _ratio_cell(error) -> str:
    if error is None:
        return "-"
    return f"**{error.worst_ratio:.3g}**" if error.exceeded else f"{error.worst_ratio:.3g}"
