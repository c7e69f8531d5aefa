"""Charts for the HTML report, as ``<img>`` tags with the PNG inlined.

The group-rate, calibration and score charts are the model card's too
(:mod:`mlops.governance.report_charts`, drawn from the report's JSON); the attribution
bars are the report's own. ``matplotlib.figure.Figure`` is used directly, never ``pyplot``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from mlops.governance.report_charts import calibration_chart, group_rates_chart, png, score_chart

if TYPE_CHECKING:
    from components.model_validation.fairness import AttributeFairness
    from components.model_validation.score_summary import ScoreSummary

__all__ = ["bar_chart", "group_chart", "score_charts"]


def group_chart(attribute: AttributeFairness, confidence: float | None = None) -> str:
    return group_rates_chart(asdict(attribute), confidence)


def score_charts(summary: ScoreSummary | None) -> str:
    """Calibration and score distributions side by side; '' without a summary."""
    if summary is None:
        return ""
    data = asdict(summary)
    return calibration_chart(data) + score_chart(data)


def bar_chart(labels: list[str], values: list[float], title: str, height: float) -> str:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, height))
    axes = figure.subplots()
    colors = ["#b00020" if v < 0 else "#1f77b4" for v in values]
    axes.barh(labels[::-1], values[::-1], color=colors[::-1])
    axes.set_title(title)
    axes.tick_params(labelsize=8)
    return png(figure)
