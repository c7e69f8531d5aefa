"""The charts a model report and a model card share, drawn from the report's JSON.

Both the model-validation report (``components.model_validation``) and the signed model card
(:mod:`mlops.governance.card_html`) draw from the same JSON the gate wrote, so a card shows
exactly the figures the gate decided on: rates per group with their intervals, calibration and
score distributions. Each chart is an ``<img>`` with the PNG inlined, so the single HTML file
stands alone. ``matplotlib.figure.Figure`` is used directly, never ``pyplot``: no global figure
state, no GUI backend, safe in a headless container.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RATES = (
    ("selection_rate", "selection rate"),
    ("true_positive_rate", "TPR"),
    ("false_positive_rate", "FPR"),
)
"""The rates a group is decided on, each by its own denominator, in chart order."""


def png(figure: Figure, alt: str = "chart") -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'  # alt names a user's column


def decided(group: Mapping[str, Any], rate: str) -> bool:
    """Whether the group's ``rate`` was large enough to be decided on (its bar drawn solid)."""
    return rate not in (group.get("undecided") or ())


def group_label(group: Mapping[str, Any]) -> str:
    """The legend entry: ``too small`` only for a group that decided nothing; otherwise the rates it did
    not decide on are named (their bars are hatched), so a group whose rate decided a failure never
    reads as too small."""
    name, size = group.get("group", "?"), group.get("size", "?")
    missing = [label for rate, label in RATES if not decided(group, rate)]
    if len(missing) == len(RATES):
        return f"{name} (n={size}, too small: decided nothing)"
    if missing:
        return f"{name} (n={size}; {', '.join(missing)} not decided on, hatched)"
    return f"{name} (n={size})"


def _value(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else math.nan


def group_rates_chart(attribute: Mapping[str, Any], confidence: float | None = None) -> str:
    """Selection rate, TPR and FPR per group with each rate's interval; undecided rates hatched."""
    import numpy as np
    from matplotlib.figure import Figure

    groups: Sequence[Mapping[str, Any]] = attribute.get("groups") or []
    if not groups:
        return ""
    figure = Figure(figsize=(7.5, 3.2))
    axes = figure.subplots()
    width = 0.8 / len(groups)
    for k, group in enumerate(groups):
        x = np.arange(len(RATES)) + k * width
        heights = [_value(group.get(rate)) for rate, _ in RATES]
        intervals = group.get("intervals") or {}
        below = [h - (intervals.get(rate) or (h, h))[0] for h, (rate, _) in zip(heights, RATES, strict=True)]
        above = [(intervals.get(rate) or (h, h))[1] - h for h, (rate, _) in zip(heights, RATES, strict=True)]
        bars = axes.bar(
            x,
            np.nan_to_num(heights),
            width,
            yerr=np.nan_to_num([below, above]),
            capsize=2,
            label=group_label(group),
        )
        for bar, (rate, _) in zip(bars, RATES, strict=True):
            if not decided(group, rate):
                bar.set_hatch("//")
                bar.set_alpha(0.5)
    axes.set_xticks(np.arange(len(RATES)) + 0.4 - width / 2, [label for _, label in RATES])
    axes.set_ylim(0, 1.05)
    span = f", {confidence:.0%} intervals" if confidence else ", intervals"
    axes.set_title(f"{attribute.get('attribute', '')}: rates by group{span}")
    axes.legend(fontsize=7)
    return png(figure, f"{attribute.get('attribute', '')} rates by group")


def calibration_chart(scores: Mapping[str, Any]) -> str:
    """Observed positive rate against mean score per score bin, with intervals, and the diagonal."""
    from matplotlib.figure import Figure

    bins = scores.get("calibration") or []
    if not bins:
        return ""
    figure = Figure(figsize=(4.2, 4.0))
    axes = figure.subplots()
    x = [b["mean_score"] for b in bins]
    y = [b["observed_rate"] for b in bins]
    low = [b["observed_rate"] - b["interval"][0] for b in bins]
    high = [b["interval"][1] - b["observed_rate"] for b in bins]
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfectly calibrated")
    axes.errorbar(x, y, yerr=[low, high], marker="o", capsize=2, label="test rows per score bin")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel("mean score")
    axes.set_ylabel("observed positive rate")
    ece = scores.get("expected_calibration_error")
    axes.set_title("Calibration" + (f" (ECE {ece:.3f})" if isinstance(ece, int | float) else ""))
    axes.legend(fontsize=7, loc="upper left")
    return png(figure, "calibration")


def score_chart(scores: Mapping[str, Any]) -> str:
    """Score histograms of the two label classes and the decision threshold."""
    from matplotlib.figure import Figure

    edges = scores.get("edges") or []
    if len(edges) < 2:
        return ""
    figure = Figure(figsize=(5.5, 3.0))
    axes = figure.subplots()
    left, widths = edges[:-1], [b - a for a, b in zip(edges[:-1], edges[1:], strict=False)]
    axes.bar(left, scores.get("negatives") or [], widths, align="edge", alpha=0.6, label="label 0")
    axes.bar(left, scores.get("positives") or [], widths, align="edge", alpha=0.6, label="label 1")
    threshold = scores.get("threshold")
    if isinstance(threshold, int | float):
        axes.axvline(threshold, color="black", linestyle=":", label=f"threshold {threshold:g}")
    axes.set_xlim(0, 1)
    axes.set_xlabel("score")
    axes.set_ylabel("test rows")
    axes.set_title("Score distribution by label")
    axes.legend(fontsize=7)
    return png(figure, "score distribution")
