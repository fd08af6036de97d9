"""The speed benchmark's report, from the JSON that ``pytest --benchmark-json`` wrote.

:func:`load` reads the measured cases (each benchmark's ``extra_info``, written by
:func:`flashcheck.bench.measure`, and its median round) and the unmeasured ones (the
``"flashcheck"`` key: out of memory, unavailable). :func:`write` turns them into
``DIR/bench.md`` and ``DIR/bench.png``:

- the headline: the project kernel's (``flash``) speedup over standard attention
  (``sdpa-math``) at 2K, 4K and 8K, and the lengths where standard attention ran out of
  memory while ``flash`` did not;
- per configuration, ``flash``'s speed relative to each peer measured in the same run (the
  ratio of TFLOP/s, which is the inverse ratio of times: > 1 means flash is faster), as the
  geometric mean over the lengths both have, with the smallest and largest;
- TFLOP/s and peak extra memory per configuration, length and provider (``OOM`` where the
  provider ran out of memory, ``n/a`` where it was unavailable, ``-`` where not run);
- the plot: TFLOP/s against length, one line per provider, one panel per configuration.

TFLOP/s is recomputed here from the median round and the FLOP count in ``extra_info``
(the convention is :mod:`flashcheck.bench`'s), so that the numbers are those of the
timings in the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

#: The project kernel and the standard attention it is compared with in the headline.
SUBJECT, STANDARD = "flash", "sdpa-math"
HEADLINE_LENGTHS = (2048, 4096, 8192)
PROVIDER_ORDER = ("flash", "fa4", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "flex", "sdpa-math")
_CONFIG_KEYS = ("mode", "dtype", "head_dim", "causal")


@dataclass(frozen=True)
class Entry:
    """One (configuration, length, provider): ``status`` is ``"ok"`` (then ``tflops`` and,
    on a GPU, ``peak_extra_bytes`` are set), ``"oom"`` or ``"unavailable"``."""

    provider: str
    mode: str
    dtype: str
    head_dim: int
    causal: bool
    seqlen: int
    status: str
    tflops: float | None = None
    seconds: float | None = None
    peak_extra_bytes: int | None = None

    @property
    def panel(self) -> tuple:
        return (self.mode, self.dtype, self.head_dim, self.causal)


def panel_name(panel: tuple) -> str:
    mode, dtype, head_dim, causal = panel
    return f"{mode} {dtype} d{head_dim} {'causal' if causal else 'full'}"


@dataclass
class Results:
    entries: list
    machine: str = ""

    def __post_init__(self):
        # A measurement wins over a record of the same case (a rerun after an OOM, say).
        self._index = {}
        for entry in sorted(self.entries, key=lambda e: e.status == "ok"):
            self._index[(entry.panel, entry.seqlen, entry.provider)] = entry

    def get(self, panel, seqlen, provider) -> Entry | None:
        return self._index.get((panel, seqlen, provider))

    @property
    def panels(self) -> list:
        return sorted({e.panel for e in self.entries}, key=lambda p: (p[0], p[1], p[2], p[3]))

    def lengths(self, panel) -> list:
        return sorted({e.seqlen for e in self.entries if e.panel == panel})

    @property
    def providers(self) -> list:
        present = {e.provider for e in self.entries}
        return [p for p in PROVIDER_ORDER if p in present] + sorted(present - set(PROVIDER_ORDER))

    def tflops(self, panel, seqlen, provider) -> float | None:
        entry = self.get(panel, seqlen, provider)
        return entry.tflops if entry is not None and entry.status == "ok" else None


def load(*paths) -> Results:
    """The entries of one or more pytest-benchmark JSON files written by ``tests/benchmarks``
    (parts of one run, such as ``ci/gpu.sh``'s gated and host-bound parts); the machine is
    the first file's.

    Raises ValueError naming the path when a file is not such a JSON file, or when a
    benchmark lacks the ``extra_info`` fields that :func:`flashcheck.bench.measure` writes.
    """
    if not paths:
        raise ValueError("paths: expected at least one benchmark JSON file")
    parts = [_load_one(path) for path in paths]
    return Results([entry for part in parts for entry in part.entries], machine=parts[0].machine)


def _load_one(path) -> Results:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"path: cannot read benchmark JSON {str(path)!r}: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ValueError(f"path: {str(path)!r} is not a pytest-benchmark JSON file (no 'benchmarks' list)")
    entries = []
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") or {}
        missing = [key for key in ("provider", "seqlen", "flops", *_CONFIG_KEYS) if key not in info]
        if missing:
            raise ValueError(f"path: benchmark {bench.get('fullname', '?')!r} in {str(path)!r} lacks "
                             f"extra_info {missing} (not written by flashcheck.bench.measure?)")
        median = bench["stats"]["median"]
        entries.append(_entry(info, "ok", tflops=info["flops"] / median / 1e12 if median > 0 else None,
                              seconds=median, peak_extra_bytes=info.get("peak_extra_bytes")))
    unmeasured = data.get("flashcheck") or {}
    for status, key in (("oom", "out_of_memory"), ("unavailable", "unavailable")):
        entries.extend(_entry(info, status) for info in unmeasured.get(key, []))
    versions = ", ".join(f"{name} {version}" for name, version in (unmeasured.get("versions") or {}).items())
    return Results(entries, machine="; ".join(x for x in (unmeasured.get("device", ""), versions) if x))


def _entry(info: dict, status: str, **values) -> Entry:
    return Entry(info["provider"], info["mode"], info["dtype"], int(info["head_dim"]), bool(info["causal"]),
                 int(info["seqlen"]), status, **values)


# ---------------------------------------------------------------- comparisons


def ratios(results: Results, peer: str, subject: str = SUBJECT) -> dict:
    """``{panel: {seqlen: subject TFLOP/s / peer TFLOP/s}}`` where both were measured."""
    table = {}
    for panel in results.panels:
        row = {}
        for n in results.lengths(panel):
            mine, theirs = results.tflops(panel, n, subject), results.tflops(panel, n, peer)
            if mine and theirs:
                row[n] = mine / theirs
        if row:
            table[panel] = row
    return table


def geometric_mean(values) -> float:
    values = list(values)
    if not values or any(not v > 0 for v in values):
        raise ValueError(f"values: expected positive numbers, got {values!r}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def standard_oom_lengths(results: Results) -> dict:
    """``{panel: [lengths]}`` where standard attention ran out of memory and flash did not."""
    found = {}
    for panel in results.panels:
        lengths = [n for n in results.lengths(panel)
                   if (e := results.get(panel, n, STANDARD)) is not None and e.status == "oom"
                   and results.tflops(panel, n, SUBJECT) is not None]
        if lengths:
            found[panel] = lengths
    return found


def headline(results: Results) -> str:
    """The Markdown headline (see the module docstring)."""
    missing = [name for name in (SUBJECT, STANDARD) if name not in results.providers]
    if missing:
        # A run of the project kernel alone (ci/gpu.sh's default) has nothing to compare.
        return f"- no headline: {' and '.join(missing)} not measured in this run"
    lines = []
    speedups = ratios(results, STANDARD)
    for n in HEADLINE_LENGTHS:
        at_n = [row[n] for row in speedups.values() if n in row]
        if at_n:
            lines.append(f"- at {_length(n)}: flash is **{geometric_mean(at_n):.1f}×** as fast as standard attention "
                         f"(geometric mean over {len(at_n)} configurations; {min(at_n):.1f}× to {max(at_n):.1f}×)")
        else:
            lines.append(f"- at {_length(n)}: no configuration with both flash and standard attention measured")
    oom = standard_oom_lengths(results)
    if oom:
        lengths = sorted({n for found in oom.values() for n in found})
        lines.append("- standard attention ran out of memory where flash did not at "
                     + ", ".join(_length(n) for n in lengths) + ": "
                     + "; ".join(f"{panel_name(p)} at {', '.join(_length(n) for n in ns)}" for p, ns in oom.items()))
    else:
        lines.append("- standard attention ran out of memory at no length where flash was measured")
    return "\n".join(lines)


# ---------------------------------------------------------------- Markdown


def markdown(results: Results, plot_name: str | None = "bench.png") -> str:
    providers = results.providers
    peers = [p for p in providers if p != SUBJECT]
    parts = ["# Attention speed", ""]
    if results.machine:
        parts += [f"Device: {results.machine}.", ""]
    parts += ["## Headline", "", headline(results), ""]
    if SUBJECT in providers and peers:
        parts += ["## flash against each peer (same run)", "",
                  "TFLOP/s of flash divided by the peer's (> 1: flash is faster): geometric mean over the lengths "
                  "both ran, with the smallest and largest ratio.", ""]
        parts += _table(["configuration", *(f"flash / {p}" for p in peers)],
                        [[panel_name(panel), *(_ratio_cell(ratios(results, peer).get(panel)) for peer in peers)]
                         for panel in results.panels])
        parts.append("")
    parts += ["## TFLOP/s", "",
              "Forward: 4·B·H·N²·D FLOPs, halved for causal; forward+backward: 3.5× the forward. Median round. "
              "OOM: out of memory; n/a: unavailable on this machine.", ""]
    parts += _table(["configuration", "N", *providers], _rows(results, providers, _tflops_cell))
    parts += ["", "## Peak extra memory (GiB)", "",
              "Peak allocated during one call minus what was allocated before it (the inputs).", ""]
    parts += _table(["configuration", "N", *providers], _rows(results, providers, _memory_cell))
    if plot_name:
        parts += ["", f"![TFLOP/s against sequence length]({plot_name})"]
    return "\n".join(parts) + "\n"


def _rows(results, providers, cell):
    return [[panel_name(panel), str(n), *(cell(results.get(panel, n, p)) for p in providers)]
            for panel in results.panels for n in results.lengths(panel)]


def _table(header, rows) -> list:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def _status_cell(entry):
    if entry is None:
        return "-"
    return {"oom": "OOM", "unavailable": "n/a"}.get(entry.status)


def _tflops_cell(entry) -> str:
    return _status_cell(entry) or (f"{entry.tflops:.1f}" if entry.tflops is not None else "?")


def _memory_cell(entry) -> str:
    return _status_cell(entry) or (f"{entry.peak_extra_bytes / 2**30:.2f}" if entry.peak_extra_bytes is not None else "?")


def _ratio_cell(row) -> str:
    if not row:
        return "-"
    values = list(row.values())
    return f"{geometric_mean(values):.2f}× ({min(values):.2f}–{max(values):.2f})"


def _length(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


# ---------------------------------------------------------------- plot and files


def plot(results: Results, path) -> None:
    """TFLOP/s against sequence length, one panel per configuration, one line per provider;
    out-of-memory points are marked with an x at the bottom of their panel."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: files only, never a window
    import matplotlib.pyplot as plt

    panels = results.panels
    columns = min(4, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    colours = {p: f"C{i}" for i, p in enumerate(results.providers)}
    for ax, panel in zip(axes.flat, panels):
        lengths = results.lengths(panel)
        for provider in results.providers:
            points = [(n, results.tflops(panel, n, provider)) for n in lengths]
            points = [(n, t) for n, t in points if t is not None]
            if points:
                ax.plot(*zip(*points), "o-", label=provider, color=colours[provider], markersize=3)
            oom = [n for n in lengths if (e := results.get(panel, n, provider)) is not None and e.status == "oom"]
            if oom:
                ax.plot(oom, [0] * len(oom), "x", color=colours[provider], markersize=7)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title(panel_name(panel), fontsize="medium")
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if panels:
        axes.flat[0].legend(fontsize="small", title="x at 0: out of memory", title_fontsize="x-small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def write(results: Results, directory) -> tuple[Path, Path]:
    """Write ``bench.md`` and ``bench.png`` into ``directory`` (created); return their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    figure = directory / "bench.png"
    plot(results, figure)
    report = directory / "bench.md"
    report.write_text(markdown(results, plot_name=figure.name))
    return report, figure
