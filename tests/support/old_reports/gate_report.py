"""The string-built page before it moved to a Jinja2 template, kept only to compare with. The validation report: JSON for machines, one self-contained HTML page for people.

The HTML embeds its charts as base64 PNGs so the single file can be opened from
the MLflow UI, a KFP artifact viewer or an e-mail attachment without anything
next to it. Undefined metrics are written as ``null`` in JSON and ``n/a`` in HTML.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.model_validation.charts import bar_chart, group_chart, score_charts
from components.model_validation.checks import finite_or_none
from mlops.gates import FAIL, PASS, status_word

if TYPE_CHECKING:
    from components.model_validation.config import ValidationConfig
    from components.model_validation.gate_result import ModelValidationResult

MAX_EXAMPLE_CHARTS = 5
STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.pass{color:#176f2c;font-weight:600}
.fail{color:#b00020;font-weight:600}.not_conclusive{color:#8a5a00;font-weight:600}.note{color:#8a5a00}
.badge{padding:4px 10px;border-radius:4px;color:#fff}.badge.promote{background:#176f2c}.badge.reject{background:#b00020}
.badge.status-not_conclusive{background:#8a5a00}.badge.status-pass{background:#176f2c}.badge.status-fail{background:#b00020}
img{max-width:100%}"""


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


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.4f}"
    return escape(str(value))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "html":
        return str(value[1])  # already-escaped markup, e.g. a pass/fail badge
    return _fmt(value)


def _status(ok: bool) -> tuple[str, str]:
    """A check decided either way (behavioural, stability): pass or fail."""
    return _three(PASS if ok else FAIL)


def _three(status: str) -> tuple[str, str]:
    """``pass``, ``fail`` or ``not conclusive``, coloured: green, red, amber; never green for an undecided check."""
    css = status if status in ("pass", "fail", "not_conclusive") else "not_conclusive"
    text = status_word(status)
    return ("html", f'<span class="{css}">{escape(text.upper() if status == FAIL else text)}</span>')


def _group_status(undecided: tuple[str, ...]) -> tuple[str, str]:
    """Whether the group's rates were decided on: a fact about its size, not a pass or a fail."""
    if not undecided:
        return ("html", "decided on")
    return ("html", f'<span class="note">too small for {_undecided(undecided)}</span>')


def _undecided(rates: tuple[str, ...]) -> str:
    """``selection/favourable rate, TPR``: the rates a group is too small for."""
    names = {
        "selection_rate": "selection/favourable rate",
        "true_positive_rate": "TPR",
        "false_positive_rate": "FPR",
    }
    return escape(", ".join(names[r] for r in rates)) + ": not decided on"


def _fairness_html(result: ModelValidationResult) -> str:
    parts = ["<h2>Fairness</h2>"]
    policy = result.config.fairness
    parts.append(
        f"<p>Favourable outcome: prediction {result.favourable_prediction} (the favourable rate and the "
        "demographic-parity ratio count it). "
        f"Decision threshold {policy.decision_threshold:g}. A rate is decided on only where its denominator "
        f"is large enough: selection and favourable rates from {policy.min_group_size} rows, TPR from "
        f"{policy.min_group_positives} positives, FPR from {policy.min_group_negatives} negatives; below, the "
        "rate is shown and the group named, never decided on (its bar hatched). Intervals: "
        f"{policy.confidence:.0%} score intervals (Wilson per group, Newcombe/MOVER per pair, simultaneous over "
        "the groups); each holds its estimate. "
        + (
            "A check passes when the whole interval lies within its limit, fails when it lies wholly beyond, "
            "and is not conclusive when it reaches across the limit."
            if policy.gate_on_intervals
            else "Thresholds are compared with the point estimates (gate_on_intervals is off)."
        )
        + "</p>"
    )
    for attr in result.fairness:
        parts.append(f"<h3>{escape(attr.attribute)}</h3>")
        if attr.grouping:
            parts.append(f"<p>Groups: {escape(attr.grouping)}.</p>")
        rows = [
            [
                g.group,
                g.size,
                g.positives,
                g.negatives,
                g.base_rate,
                g.selection_rate,
                g.favourable_rate,
                g.true_positive_rate,
                g.false_positive_rate,
                g.precision,
                g.auc,
                _group_status(g.undecided),
                "; ".join(g.notes),
            ]
            for g in attr.groups
        ]
        parts.append(
            _table(
                [
                    "group",
                    "rows",
                    "positives",
                    "negatives",
                    "base rate",
                    "selection rate",
                    "favourable rate",
                    "TPR",
                    "FPR",
                    "precision",
                    "AUC",
                    "status",
                    "notes",
                ],
                rows,
            )
        )
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
        parts.append(_table(["metric", "value", "interval", "threshold", "status"], summary))
        parts += [f'<p class="note">not conclusive: {escape(u)}</p>' for u in attr.undecided]
        parts += [f'<p class="note">{escape(note)}</p>' for note in attr.notes]
        parts.append(group_chart(attr, policy.confidence))
    if not result.fairness:
        parts.append('<p class="note">No protected attributes configured: nothing checked.</p>')
    return "\n".join(parts)


def _explainability_html(result: ModelValidationResult) -> str:
    explained = result.explainability
    stability = explained.stability
    threshold = result.config.explainability.min_rank_agreement
    parts = [
        "<h2>Explainability</h2>",
        f"<p>Method: {escape(explained.method)}, on {explained.n_rows} rows.</p>",
        _table(
            ["rank", "feature", "importance", "± std", "AUC drop"],
            [[a.rank, a.feature, a.importance, a.importance_std, a.auc_drop] for a in explained.attributions],
        ),
        bar_chart(
            [a.feature for a in explained.attributions],
            [a.importance for a in explained.attributions],
            "mean |change in probability| when shuffled",
            0.25 * len(explained.attributions) + 1,
        ),
        "<h3>Stability</h3>",
        _table(
            [
                "Spearman",
                "Kendall",
                f"top-{stability.top_k} overlap",
                "rows per half",
                "min Spearman",
                "status",
            ],
            [
                [
                    stability.spearman,
                    stability.kendall,
                    stability.top_k_overlap,
                    stability.rows_per_half,
                    threshold,
                    _status(not explained.violations),
                ]
            ],
        ),
        "<h3>Per-example explanations</h3>",
    ]
    for k, example in enumerate(explained.examples):
        top = example.contributions[:8]
        parts.append(f"<h4>row {escape(example.row)}: probability {example.probability:.4f}</h4>")
        parts.append(
            _table(["feature", "value", "contribution"], [[c.feature, c.value, c.contribution] for c in top])
        )
        if k < MAX_EXAMPLE_CHARTS:
            labels = [f"{c.feature} = {c.value}" for c in top]
            parts.append(
                bar_chart(
                    labels,
                    [c.contribution for c in top],
                    f"row {example.row} (p={example.probability:.3f}): red lowers the score, blue raises it",
                    2.4,
                )
            )
    return "\n".join(parts)


def _behavioural_html(result: ModelValidationResult) -> str:
    rows = [
        [
            b.name,
            b.n_rows,
            b.mean_change,
            b.mean_abs_change,
            b.max_abs_change,
            b.pass_fraction,
            _status(b.passed),
            "; ".join(v.message for v in b.violations),
        ]
        for b in result.behavioural
    ]
    headers = [
        "test",
        "rows",
        "mean change",
        "mean |change|",
        "max |change|",
        "pass fraction",
        "status",
        "why",
    ]
    return "<h2>Behavioural tests</h2>" + (
        _table(headers, rows) if rows else "<p>No behavioural tests declared.</p>"
    )


def _undecided_html(result: ModelValidationResult) -> str:
    """Every check these rows could not decide, and what the policy made of them."""
    undecided = result.decision.undecided
    if not undecided:
        return ""
    verdict = "passed, listed here" if result.decision.promote else "the model is held back"
    policy = f"model_validation.pass_not_conclusive is {result.config.pass_not_conclusive}: {verdict}"
    items = "".join(f"<li>{escape(u)}</li>" for u in undecided)
    return f"<h2>Not conclusive</h2><p>{len(undecided)} check(s) not decided ({policy}).</p><ul>{items}</ul>"


def _scores_html(result: ModelValidationResult) -> str:
    if result.scores is None:
        return ""
    ece = result.scores.expected_calibration_error
    return (
        f"<h2>Scores</h2><p>Calibration over {result.n_rows} test rows (expected calibration error "
        f"{ece:.4f}) and the scores of each label class.</p>" + score_charts(result.scores)
    )


def render_html(result: ModelValidationResult, model_name: str, version: str) -> str:
    decision = result.decision
    violations = _table(
        ["check", "subject", "metric", "value", "threshold", "detail"],
        [
            [v.check, v.subject, v.metric, v.value, f"{v.bound} {v.threshold:g}", v.detail]
            for v in result.violations
        ],
    )
    sections = [
        f"<h1>Model validation: {escape(model_name)} version {escape(version)}</h1>",
        f'<p><span class="badge {decision.decision}">{escape(decision.decision.upper())}</span> '
        f'<span class="badge status-{decision.status}">{escape(status_word(decision.status))}</span> '
        f"{escape(decision.reason)}</p>",
        f"<p>{result.n_rows} test rows; label <code>{escape(result.label)}</code>.</p>",
        "<h2>Violations</h2>" + (violations if result.violations else "<p>None.</p>"),
        _undecided_html(result),
        _fairness_html(result),
        _scores_html(result),
        _explainability_html(result),
        _behavioural_html(result),
        "<h2>Configuration</h2><pre>" + escape(result.config.model_dump_json(indent=2)) + "</pre>",
    ]
    body = "\n".join(sections)
    title = f"Model validation {escape(model_name)} v{escape(version)}"
    return f'<!doctype html><html><head><meta charset="utf-8"><title>{title}</title><style>{STYLE}</style></head><body>{body}</body></html>'


def write_reports(
    result: ModelValidationResult, model_name: str, version: str, html_path: Path, json_path: Path
) -> None:
    for path in (html_path, json_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(render_html(result, model_name, version), encoding="utf-8")
    json_path.write_text(json.dumps(to_json(result, model_name, version), indent=2), encoding="utf-8")
