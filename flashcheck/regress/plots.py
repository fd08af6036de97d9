"""The error report's figures, drawn with matplotlib's Agg backend (no display needed).

Two kinds, each written as a PNG:

- :func:`error_vs_length`: for one output, one panel per dtype, observed and allowed error
  against sequence length (log scale);
- :func:`ratio_histograms`: one panel per output, the distribution of elementwise
  error/allowed over all cases, one step curve per dtype, on log-spaced bins.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, never a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: Edges of the ratio histogram's bins: 4 per decade from 1e-8 to 10. Ratios below the
#: first edge are counted in the first bin, above the last (inf included) in the last;
#: exact zeros are counted apart, since a log axis has no place for them.
RATIO_EDGES = np.logspace(-8, 1, 37)


def error_vs_length(path, output: str, series: dict) -> None:
    """Write the figure of ``output``'s error against sequence length to ``path``.

    ``series``: ``{dtype: [(length, observed, allowed, largest), ...]}``, where ``observed``
    and ``allowed`` are the error and its allowance at the element of largest
    error/allowed, and ``largest`` the largest error anywhere. Zero errors are left out
    (a log axis cannot show them).
    """
    dtypes = list(series)
    figure, axes = plt.subplots(1, max(1, len(dtypes)), figsize=(4.5 * max(1, len(dtypes)), 3.6), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        points = sorted(series[dtype])
        lengths = [p[0] for p in points]
        for column, label, style in ((2, "allowed (worst element)", "-"), (1, "observed (worst element)", "o"),
                                     (3, "largest observed anywhere", "x:")):
            values = [p[column] if p[column] > 0 and math.isfinite(p[column]) else np.nan for p in points]
            ax.plot(lengths, values, style, label=label)
        ax.set_yscale("log")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{output}, {dtype}")
        ax.set_xlabel("sequence length")
        ax.set_ylabel("absolute error")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def ratio_histograms(path, histograms: dict) -> None:
    """Write the ratio histograms to ``path``.

    ``histograms``: ``{output: {dtype: (counts, zeros)}}`` with ``counts`` over
    :data:`RATIO_EDGES` bins and ``zeros`` the number of exact elements.
    """
    outputs = list(histograms)
    figure, axes = plt.subplots(1, max(1, len(outputs)), figsize=(3.6 * max(1, len(outputs)), 3.4), squeeze=False,
                                sharey=True)
    for ax, output in zip(axes[0], outputs):
        for dtype, (counts, zeros) in histograms[output].items():
            ax.stairs(counts, RATIO_EDGES, label=f"{dtype} ({zeros} exact)")
        ax.axvline(1.0, color="red", linestyle="--", linewidth=1)  # the allowance
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(output)
        ax.set_xlabel("error / allowed")
        ax.legend(fontsize="x-small")
    axes[0][0].set_ylabel("elements")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def histogram(ratios) -> tuple[np.ndarray, int]:
    """``(counts over RATIO_EDGES, exact zeros)`` of a flat array of ratios (see RATIO_EDGES)."""
    ratios = np.asarray(ratios, dtype=np.float64)
    zeros = int((ratios == 0).sum())
    positive = np.clip(ratios[ratios > 0], RATIO_EDGES[0], RATIO_EDGES[-1])  # inf lands in the last bin
    counts, _ = np.histogram(positive, bins=RATIO_EDGES)
    return counts, zeros
