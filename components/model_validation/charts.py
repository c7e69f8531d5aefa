"""Charts for the HTML report, as ``<img>`` tags with the PNG inlined.

``matplotlib.figure.Figure`` is used directly, never ``pyplot``: no global
figure state, no GUI backend to select, safe in a headless container.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from components.model_validation.fairness import AttributeFairness


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="chart" src="data:image/png;base64,{data}">'


def group_chart(attribute: AttributeFairness) -> str:
    import numpy as np
    from matplotlib.figure import Figure

    metrics = ("selection_rate", "true_positive_rate", "false_positive_rate", "precision")
    figure = Figure(figsize=(7, 3))
    axes = figure.subplots()
    width = 0.8 / len(attribute.groups)
    for k, group in enumerate(attribute.groups):
        heights = [np.nan_to_num(getattr(group, m)) for m in metrics]
        small = bool(group.undecided)  # too small for at least one rate: hatched, as the table says
        label = f"{group.group} (n={group.size}{', too small for a rate' if small else ''})"
        axes.bar(np.arange(len(metrics)) + k * width, heights, width, label=label, hatch="//" * small)
    axes.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, ["selection rate", "TPR", "FPR", "precision"])
    axes.set_ylim(0, 1)
    axes.set_title(f"{attribute.attribute}: rates by group")
    axes.legend(fontsize=8)
    return _png(figure)


def bar_chart(labels: list[str], values: list[float], title: str, height: float) -> str:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, height))
    axes = figure.subplots()
    colors = ["#b00020" if v < 0 else "#1f77b4" for v in values]
    axes.barh(labels[::-1], values[::-1], color=colors[::-1])
    axes.set_title(title)
    axes.tick_params(labelsize=8)
    return _png(figure)
