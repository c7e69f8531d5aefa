"""The model card for people: one self-contained HTML page from the card's two JSON documents.

The page is ``templates/model_card.html.j2`` (its limits section ``model_card_limits.html.j2``), rendered
with autoescape on: feature names, category values, slice names and the owner's text are the user's data.
This module turns the two documents into the rows each table shows; the template lays them out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from mlops.gates import StatusBadge, status_badge
from mlops.governance.report_charts import calibration_chart, group_rates_chart, score_chart

DISPARITIES = ("demographic_parity_difference", "demographic_parity_ratio", "equalized_odds_difference")


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.4f}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,  # feature names, category values and the owner's text are the user's data
        undefined=StrictUndefined,
    )
    env.filters["fmt"] = _fmt
    env.tests["status"] = lambda value: isinstance(value, StatusBadge)
    return env


_PAGE = _environment()


def _limit(threshold: dict[str, Any] | None) -> str:
    if not threshold or threshold.get("value") is None:
        return "not recorded"
    return f"{threshold.get('bound')} {threshold['value']:g}"


def _interval(lower: Any, upper: Any) -> str:
    return f"[{_fmt(lower)}, {_fmt(upper)}]"


def _group_note(group: dict[str, Any]) -> str:
    """Which of the group's rates were too few to decide on; ``too small`` only when it decided nothing."""
    undecided = list(group.get("undecided") or [])
    if len(undecided) >= 3:
        return "too small: decided nothing"
    names = {"selection_rate": "selection rate", "true_positive_rate": "TPR", "false_positive_rate": "FPR"}
    return ", ".join(names.get(u, u) for u in undecided) + " not decided on" if undecided else ""


def _training(data: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """Where the training data came from, how it was validated, and its reference profile."""
    validation = data.get("validation") or {}
    checked = "no record"
    if validation:
        verdict = "passed" if validation.get("passed") else "FAILED"
        checked = f"{verdict} at {validation.get('at')} (audit record {validation.get('audit_seq')})"
    profile = data["profile"]
    return {
        "summary": [
            ["dataset", data["dataset_uri"]],
            ["sha256", data["dataset_digest"]],
            ["expectation suite", f"{data['suite']} version {data['suite_version']}"],
            ["validation", checked],
            ["rows in the reference profile", profile.get("rows")],
        ],
        "numeric": [[p["feature"], p["missing"], p["mean"], p["std"]] for p in profile.get("numeric", [])],
        "categorical": [
            [p["feature"], p["missing"], p["categories"], p["top"]] for p in profile.get("categorical", [])
        ],
    }


def _slices(slices: dict[str, Any]) -> list[list[Any]]:
    """Each declared slice's size, ROC AUC and accuracy with their intervals."""

    def shown(stat: dict[str, Any]) -> str:
        return f"{_fmt(stat.get('value'))} {_interval(stat.get('lower'), stat.get('upper'))}"

    return [
        [s["slice"], s["size"]]
        + [shown(s["metrics"].get(k, {})) for k in ("roc_auc", "accuracy")]
        + [s.get("note", "")]
        for s in slices.get("slices") or []
    ]


def _fairness(facts: dict[str, Any]) -> dict[str, list[Any]]:
    """Each disparity with its interval, limit and status; what was not conclusive; each group's rates."""
    thresholds = facts.get("fairness_thresholds") or {}
    disparities = []
    for a in facts["fairness"]:
        for k in DISPARITIES:
            low, high = (list(a.get("intervals", {}).get(k) or []) + [None, None])[:2]
            status = status_badge((a.get("statuses") or {}).get(k))
            disparities.append(
                [a.get("attribute"), k, a.get(k), _interval(low, high), _limit(thresholds.get(k)), status]
            )
    rates = ("size", "selection_rate", "true_positive_rate", "false_positive_rate")
    return {
        "disparities": disparities,
        "undecided": [u for a in facts["fairness"] for u in a.get("undecided") or []],
        "groups": [
            [a.get("attribute"), g.get("group"), *(g.get(r) for r in rates), _group_note(g)]
            for a in facts["fairness"]
            for g in a.get("groups", [])
        ],
    }


def _charts(facts: dict[str, Any]) -> dict[str, Any]:
    """The gate's figures, drawn from its JSON: rates per group for each attribute, calibration and scores."""
    confidence = facts.get("fairness_confidence")
    confidence = confidence if isinstance(confidence, float) else None
    scores = facts.get("scores") or {}
    return {
        "groups": [Markup(group_rates_chart(a, confidence)) for a in facts["fairness"]],
        "scores": Markup(calibration_chart(scores) + score_chart(scores)) if scores else "",
    }


def render(card: dict[str, Any], facts: dict[str, Any]) -> str:
    """The page: human fields (empty ones flagged), data, evaluation, slices, fairness, explanations,
    gates, limits, lineage, deployment history and approvals."""
    model = facts["model"]
    explained = facts["explanations"]
    metrics = card["quantitative_analysis"]["performance_metrics"]
    return _PAGE.get_template("model_card.html.j2").render(
        card=card,
        facts=facts,
        title=f"Model card: {model['name']} version {model['version']} ({model['alias']})",
        training=_training(facts["training_data"]),
        evaluation=[[m["type"], m["value"], m.get("n_rows")] for m in metrics if not m["slice"]],
        slices=_slices(facts.get("slices") or {}),
        fairness=_fairness(facts),
        charts=_charts(facts),
        explanations=[
            [a["rank"], a["feature"], a["importance"], a["importance_std"]]
            for a in (explained or {}).get("attributions", [])
        ],
        gates=[
            [g["gate"], g["decision"], status_badge(g.get("status")), g["reason"], g["at"], g["audit_seq"]]
            for g in facts["gate_decisions"]
        ],
        history=[
            [h["alias"], h["version"], h["since"], h["until"] or "now", h["reason"], h["actor"]]
            for h in facts["deployment_history"]
        ],
        approvals=[
            [a["decision"], a["by"], a["key_id"], a["at"], a["reason"], a["audit_seq"]]
            for a in facts.get("approvals", [])
        ],
    )
