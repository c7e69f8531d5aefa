"""Confusion matrix and ROC curve images for the evaluation report.

Figures are drawn on an explicit Agg canvas instead of through ``pyplot``: no
global backend switch, no display needed on a headless pod, and no figure
registry that leaks memory when a process draws many reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def plot_confusion_matrix(matrix: Sequence[Sequence[int]], threshold: float, path: Path) -> Path:
    """Draw ``[[tn, fp], [fn, tp]]`` as a labelled heat map and save it as PNG."""
    import numpy as np

    counts = np.asarray(matrix, dtype=np.int64)
    if counts.shape != (2, 2):
        raise ValueError(f"a binary confusion matrix is 2x2, got shape {counts.shape}")
    figure = _figure(5.2, 4.2)
    axes = figure.add_subplot()
    image = axes.imshow(counts, cmap="Blues")
    figure.colorbar(image, ax=axes)
    labels = ("0 (negative)", "1 (positive)")
    axes.set_xticks([0, 1], labels)
    axes.set_yticks([0, 1], labels)
    axes.set_xlabel("predicted")
    axes.set_ylabel("actual")
    axes.set_title(f"Confusion matrix (threshold {threshold:g})")
    midpoint = counts.max() / 2
    for (row, col), value in np.ndenumerate(counts):
        colour = "white" if value > midpoint else "black"
        axes.text(col, row, f"{value:d}", ha="center", va="center", color=colour, fontsize=12)
    figure.savefig(path, format="png")
    return path


def plot_roc_curves(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]], path: Path) -> Path:
    """Draw one ROC curve per ``(label, fpr, tpr)`` plus the chance diagonal and save it as PNG."""
    if not curves:
        raise ValueError("no ROC curve to draw; pass at least one (label, fpr, tpr)")
    figure = _figure(4.8, 4.2)
    axes = figure.add_subplot()
    for label, fpr, tpr in curves:
        axes.plot(fpr, tpr, label=label, linewidth=1.8)
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="chance")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.01)
    axes.set_xlabel("false positive rate")
    axes.set_ylabel("true positive rate")
    axes.set_title("ROC curve (test data)")
    axes.legend(loc="lower right")
    figure.savefig(path, format="png")
    return path
