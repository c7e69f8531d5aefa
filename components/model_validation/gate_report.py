"""The validation report: JSON for machines, one self-contained HTML page for people.

The HTML embeds its charts as base64 PNGs so the single file can be opened from
the MLflow UI, a KFP artifact viewer or an e-mail attachment without anything
next to it; the page is templates/gate_report.html.j2, autoescaped. Undefined metrics are written as ``null`` in JSON and ``n/a`` in HTML.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from components.model_validation.charts import bar_chart, group_chart, score_charts
from components.model_validation.checks import finite_or_none
from mlops.gates import FAIL, PASS, StatusBadge, status_badge, status_word

if TYPE_CHECKING:
    from components.model_validation.config import FairnessPolicy, ValidationConfig
    from components.model_validation.fairness import AttributeFairness
    from components.model_validation.gate_result import ModelValidationResult

MAX_EXAMPLE_CHARTS = 5
RATE_NAMES = {
    "selection_rate": "selection/favourable rate",
    "true_positive_rate": "TPR",
    "false_positive_rate": "FPR",
}


@dataclass(frozen=True)
class _Note:
    """An amber remark in a table cell (a group too small to decide on)."""

    text: str


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.4f}"
    return str(value)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,  # attribute names, group values and features are the user's data
        undefined=StrictUndefined,
    )
    env.filters.update(fmt=_fmt, status_word=status_word, percent=lambda v: f"{v:.0%}")
    env.tests.update(status=lambda v: isinstance(v, StatusBadge), note=lambda v: isinstance(v, _Note))
    return env


_PAGE = _environment()


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def to_json(result: ModelValidationResult, model_name: str, version: str) -> dict[str, Any]:
    body = {name: asdict(decision) for name, decision in result.decisions.items()}
    return _clean(
        {
            "model_name": model_name,
            "version": version,
            "created_at": datetime.now(UTC).isoformat(),
            "decision": result.decision.decision,
            "status": result.decision.status,
            "reason": result.decision.reason,
            "undecided": list(result.decision.undecided),
            "violations": [{**asdict(v), "message": v.message} for v in result.violations],
            "decisions": body,
            "label": result.label,
            "protected_attributes": list(result.protected_attributes),
            "favourable_prediction": result.favourable_prediction,
            "n_rows": result.n_rows,
            "config": result.config.model_dump(),
            "limits": limits_in_force(result.config),
            "fairness": [asdict(a) for a in result.fairness],
            "explainability": asdict(result.explainability),
            "behavioural": [{**asdict(b), "passed": b.passed} for b in result.behavioural],
            "scores": asdict(result.scores) if result.scores is not None else None,
        }
    )


def limits_in_force(config: ValidationConfig) -> list[dict[str, Any]]:
    """Every setting the gate decided under, by address, with the platform default beside it: a value
    that differs was changed for this run (the card says by whom, from the run's audit record)."""
    from components.model_validation.config import ValidationConfig
    from mlops.settings import addressed

    defaults = addressed(ValidationConfig())
    return [
        {
            "address": address,
            "value": value,
            "default": defaults.get(address),
            "source": "default" if value == defaults.get(address) else "changed for this run",
        }
        for address, value in addressed(config).items()
        if not address.startswith(f"{ValidationConfig.section}.behavioural")
    ]


def _status(ok: bool) -> StatusBadge:
    """A check decided either way (behavioural, stability): pass or fail."""
    return _three(PASS if ok else FAIL)


def _three(status: str) -> StatusBadge:
    """``pass``, ``fail`` or ``not conclusive``, coloured: green, red, amber; never green for an undecided check."""
    return status_badge(status, loud_fail=True)


def _group_status(undecided: tuple[str, ...]) -> str | _Note:
    """Whether the group's rates were decided on: a fact about its size, not a pass or a fail."""
    if not undecided:
        return "decided on"
    return _Note(f"too small for {', '.join(RATE_NAMES[r] for r in undecided)}: not decided on")


def _attribute(attr: AttributeFairness, policy: FairnessPolicy) -> dict[str, Any]:
    """One protected attribute's rows: its groups, its three disparities against their limits, its chart."""
    limits = {
        "demographic_parity_difference": ("max", policy.max_demographic_parity_difference),
        "demographic_parity_ratio": ("min", policy.min_demographic_parity_ratio),
        "equalized_odds_difference": ("max", policy.max_equalized_odds_difference),
    }
    summary = []
    for metric, (bound, limit) in limits.items():
        low, high = attr.intervals.get(metric, (math.nan, math.nan))
        interval = "n/a" if math.isnan(low) else f"{low:.4f} .. {high:.4f}"
        summary.append(
            [metric, getattr(attr, metric), interval, f"{bound} {limit:g}", _three(attr.status(metric))]
        )
    groups = [
        [g.group, g.size, g.positives, g.negatives, g.base_rate, g.selection_rate, g.favourable_rate]
        + [g.true_positive_rate, g.false_positive_rate, g.precision, g.auc, _group_status(g.undecided)]
        + ["; ".join(g.notes)]
        for g in attr.groups
    ]
    return {
        "name": attr.attribute,
        "grouping": attr.grouping,
        "groups": groups,
        "summary": summary,
        "undecided": attr.undecided,
        "notes": attr.notes,
        "chart": Markup(group_chart(attr, policy.confidence)),  # an <img>, its alt escaped
    }


def _examples(result: ModelValidationResult) -> list[dict[str, Any]]:
    """Each explained row's top eight contributions; the first few also as a chart."""
    examples = []
    for k, example in enumerate(result.explainability.examples):
        top = example.contributions[:8]
        chart = ""
        if k < MAX_EXAMPLE_CHARTS:
            chart = bar_chart(
                [f"{c.feature} = {c.value}" for c in top],
                [c.contribution for c in top],
                f"row {example.row} (p={example.probability:.3f}): red lowers the score, blue raises it",
                2.4,
            )
        rows = [[c.feature, c.value, c.contribution] for c in top]
        examples.append(
            {"row": example.row, "probability": example.probability, "rows": rows, "chart": Markup(chart)}
        )
    return examples


def _charts(result: ModelValidationResult) -> dict[str, Markup]:
    """The page's figures as ``<img>`` markup (PNG inlined): feature importance and the score charts."""
    attributions = result.explainability.attributions
    importance = bar_chart(
        [a.feature for a in attributions],
        [a.importance for a in attributions],
        "mean |change in probability| when shuffled",
        0.25 * len(attributions) + 1,
    )
    scores = score_charts(result.scores) if result.scores is not None else ""
    return {"importance": Markup(importance), "scores": Markup(scores)}


def render_html(result: ModelValidationResult, model_name: str, version: str) -> str:
    """The page (templates/gate_report.html.j2): decision, violations, what was not conclusive, fairness,
    scores, explanations, behavioural tests and the configuration."""
    explained = result.explainability
    return _PAGE.get_template("gate_report.html.j2").render(
        result=result,
        model_name=model_name,
        version=version,
        violations=[
            [v.check, v.subject, v.metric, v.value, f"{v.bound} {v.threshold:g}", v.detail]
            for v in result.violations
        ],
        fairness=[_attribute(a, result.config.fairness) for a in result.fairness],
        attributions=[
            [a.rank, a.feature, a.importance, a.importance_std, a.auc_drop] for a in explained.attributions
        ],
        stable=_status(not explained.violations),
        examples=_examples(result),
        charts=_charts(result),
        behavioural=[
            [b.name, b.n_rows, b.mean_change, b.mean_abs_change, b.max_abs_change, b.pass_fraction]
            + [_status(b.passed), "; ".join(v.message for v in b.violations)]
            for b in result.behavioural
        ],
    )


def write_reports(
    result: ModelValidationResult, model_name: str, version: str, html_path: Path, json_path: Path
) -> None:
    for path in (html_path, json_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(render_html(result, model_name, version), encoding="utf-8")
    json_path.write_text(json.dumps(to_json(result, model_name, version), indent=2), encoding="utf-8")
