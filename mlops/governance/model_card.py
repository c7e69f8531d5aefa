"""The model card: what a version is for, what it was trained and judged on, and where it served.

Machines read ``model_card.json``, which follows Google's **Model Card Toolkit JSON schema,
version 0.0.2** (``model_card_toolkit/schema/v0.0.2/model_card.schema.json``:
``model_details``, ``model_parameters``, ``quantitative_analysis``, ``considerations``).
That schema forbids extra top-level keys and has no place for gate decisions, lineage or
deployment history, so those go in ``mlops_facts.json`` beside it (:data:`FACTS_FORMAT`);
performance metrics carry the toolkit's later ``confidence_interval`` and a row count as
extra keys of each metric (allowed there). People read ``model_card.html``. The three files
are signed together (:mod:`mlops.governance.manifest_signing`) and the signature's digest is
recorded in the audit trail (``card.signed``).

Everything here is computed from :class:`~mlops.governance.version_facts.ModelFacts` (collected
through the MLflow seam by :mod:`mlops.tracking.model_facts`) and the schema file's ``card:`` block; nothing is guessed:
a section the platform has no record of says so, and the human-written fields still empty
are listed (``empty_fields``).
"""

from __future__ import annotations

import math
from typing import Any

from mlops.data.card_fields import CardFields
from mlops.governance.gate_history import gate_decisions, limits, overrides
from mlops.governance.provenance import approvals, history
from mlops.governance.version_facts import ModelFacts, RunFacts
from mlops.vocabulary import (
    DATASET_DIGEST_TAG,
    DATASET_URI_TAG,
    DIGEST_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
    TAG_PREFIX,
    Lineage,
)

MCT_SCHEMA = "Model Card Toolkit JSON schema"
MCT_SCHEMA_VERSION = "0.0.2"
FACTS_FORMAT = "mlops-model-facts/1"
CARD_JSON = "model_card.json"
FACTS_JSON = "mlops_facts.json"
CARD_HTML = "model_card.html"
QUALITY_METRICS = ("roc_auc", "pr_auc", "accuracy", "f1", "log_loss", "ece")


def _num(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _metric(
    kind: str, value: Any, slice_: str = "", interval: Any = None, rows: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "value": _num(value), "slice": slice_}
    if isinstance(interval, list | tuple) and len(interval) == 2:
        out["confidence_interval"] = {"lower_bound": _num(interval[0]), "upper_bound": _num(interval[1])}
    if rows is not None:
        out["n_rows"] = int(rows)
    return out


def performance_metrics(facts: ModelFacts) -> list[dict[str, Any]]:
    """Overall quality, quality per declared slice, and fairness disparities per protected attribute."""
    evaluation = facts.report("evaluate", "evaluation/metrics.json")
    test = evaluation.get("test", {})
    metrics = [_metric(k, test.get(k), "", rows=test.get("n_rows")) for k in QUALITY_METRICS if k in test]
    for item in evaluation.get("slices", {}).get("slices", []):
        for name, stat in item.get("metrics", {}).items():
            metrics.append(
                _metric(
                    name,
                    stat.get("value"),
                    item.get("slice", ""),
                    (stat.get("lower"), stat.get("upper")),
                    item.get("size"),
                )
            )
    thresholds = fairness_thresholds(facts)
    for attribute in fairness(facts):
        for name in FAIRNESS_METRICS:
            metric = _metric(
                name,
                attribute.get(name),
                attribute.get("attribute", ""),
                attribute.get("intervals", {}).get(name),
            )
            if name in thresholds:
                metric["threshold"] = thresholds[name]
            metric["status"] = (attribute.get("statuses") or {}).get(name, "not recorded")
            metrics.append(metric)
    return metrics


FAIRNESS_METRICS = ("demographic_parity_difference", "demographic_parity_ratio", "equalized_odds_difference")
_FAIRNESS_LIMITS = {
    "demographic_parity_difference": ("max", "max_demographic_parity_difference"),
    "demographic_parity_ratio": ("min", "min_demographic_parity_ratio"),
    "equalized_odds_difference": ("max", "max_equalized_odds_difference"),
}


def fairness_thresholds(facts: ModelFacts) -> dict[str, dict[str, Any]]:
    """Per disparity metric, the limit it was held against (bound and value), from the gate's report."""
    policy = (
        facts.report("gate_model_validation", "model_validation/report.json")
        .get("config", {})
        .get("fairness")
        or {}
    )
    return {
        metric: {"bound": bound, "value": _num(policy.get(field))}
        for metric, (bound, field) in _FAIRNESS_LIMITS.items()
        if field in policy
    }


def fairness(facts: ModelFacts) -> list[dict[str, Any]]:
    return list(facts.report("gate_model_validation", "model_validation/report.json").get("fairness", []))


def explanations(facts: ModelFacts) -> dict[str, Any]:
    return dict(
        facts.report("gate_model_validation", "model_validation/report.json").get("explainability", {})
    )


def lineage(facts: ModelFacts) -> dict[str, Any]:
    tags = facts.tags
    out: dict[str, Any] = {name.removeprefix(TAG_PREFIX): tags.get(name, "") for name in Lineage.tag_names()}
    out.update(
        {
            "onnx_sha256": tags.get(DIGEST_TAG, ""),
            "dataset_uri": tags.get(DATASET_URI_TAG, ""),
            "signature_uri": tags.get(SIGNATURE_URI_TAG, ""),
            "signing_key_id": tags.get(SIGNING_KEY_ID_TAG, ""),
            "mlflow_runs": {r.task: r.run_id for r in facts.runs},
        }
    )
    return out


def training_data(facts: ModelFacts) -> dict[str, Any]:
    validated = [e for e in facts.events if e.action == "data.validated"]
    last = validated[-1] if validated else None
    validation = facts.run("data_validation")
    profile = facts.profile
    return {
        "dataset_uri": facts.tags.get(DATASET_URI_TAG, "")
        or (validation.params.get("data_uri", "") if validation else ""),
        "dataset_digest": facts.tags.get(DATASET_DIGEST_TAG, ""),
        "suite": (last.details.get("suite", "") if last else "")
        or (validation.params.get("suite_name", "") if validation else ""),
        "suite_version": facts.tags.get(f"{TAG_PREFIX}suite_version", ""),
        "validation": None
        if last is None
        else {"passed": bool(last.details.get("success")), "at": last.at, "audit_seq": last.seq},
        "profile": profile_summary(profile),
    }


def profile_summary(profile: dict[str, Any]) -> dict[str, Any]:
    """Rows, and per feature its missing count and centre (numeric) or top categories (categorical)."""
    if not profile:
        return {}
    numeric = [
        {
            "feature": p["name"],
            "rows": p.get("rows"),
            "missing": p.get("missing"),
            "mean": _num(p.get("mean")),
            "std": _num(p.get("std")),
        }
        for p in profile.get("numeric", [])
    ]
    categorical = []
    for p in profile.get("categorical", []):
        pairs = sorted(zip(p.get("categories", []), p.get("counts", []), strict=False), key=lambda c: -c[1])
        categorical.append(
            {
                "feature": p["name"],
                "rows": p.get("rows"),
                "missing": p.get("missing"),
                "categories": len(pairs),
                "top": [c for c, _ in pairs[:3]],
            }
        )
    return {"rows": profile.get("rows"), "numeric": numeric, "categorical": categorical}


def deployment_history(facts: ModelFacts) -> list[dict[str, Any]]:
    return [
        {
            "alias": h.alias,
            "version": h.version,
            "since": h.since,
            "until": h.until,
            "reason": h.reason,
            "actor": h.actor,
        }
        for h in history(facts.name, facts.model_events)
    ]


def model_card(facts: ModelFacts, fields: CardFields) -> dict[str, Any]:
    """The Model Card Toolkit v0.0.2 document."""
    data = training_data(facts)
    train = facts.run("train")
    evaluation = facts.report("evaluate", "evaluation/metrics.json")
    return {
        "schema_version": MCT_SCHEMA_VERSION,
        "model_details": {
            "name": facts.name,
            "overview": fields.overview,
            "documentation": facts.description,
            "owners": [{"name": owner, "contact": fields.contact} for owner in fields.owners],
            "version": {"name": facts.version, "date": facts.created_at[:10], "diff": ""},
            "licenses": [{"identifier": fields.license}] if fields.license else [],
            "references": [],
            "citations": [],
        },
        "model_parameters": {
            "model_architecture": _architecture(train),
            "data": [
                {
                    "name": "training data",
                    "link": data["dataset_uri"] if "://" in data["dataset_uri"] else "",
                    "description": f"{data['dataset_uri']} sha256 {data['dataset_digest']}; expectation suite "
                    f"{data['suite']} {data['suite_version']}; {data['profile'].get('rows', '?')} profiled rows",
                },
                {
                    "name": "evaluation data (held-out test split)",
                    "description": f"sha256 {evaluation.get('test_data_sha256', '(not recorded)')}, "
                    f"{evaluation.get('test', {}).get('n_rows', '?')} rows",
                },
            ],
            "input_format": "one row of the declared features (KServe V2 / V1 JSON, ONNX tensors)",
            "output_format": "probability of the positive class",
        },
        "quantitative_analysis": {"performance_metrics": performance_metrics(facts)},
        "considerations": {
            "users": [{"description": u} for u in fields.intended_users],
            "use_cases": [{"description": u} for u in fields.intended_uses]
            + [{"description": f"OUT OF SCOPE: {u}"} for u in fields.out_of_scope_uses],
            "limitations": [{"description": u} for u in fields.limitations],
            "tradeoffs": [],
            "ethical_considerations": [_risk(text) for text in fields.ethical_considerations],
        },
    }


def facts_document(facts: ModelFacts, fields: CardFields, schema_source: str) -> dict[str, Any]:
    """What the toolkit's schema has no place for: gates, lineage, history, explanations, empty fields."""
    return {
        "format": FACTS_FORMAT,
        "card_schema": f"{MCT_SCHEMA} {MCT_SCHEMA_VERSION}",
        "card_file": CARD_JSON,
        "model": {
            "name": facts.name,
            "alias": facts.alias,
            "version": facts.version,
            "aliases": facts.aliases,
        },
        "human_fields": {**fields.model_dump(mode="json"), "source": schema_source},
        "empty_fields": fields.empty_fields(),
        "training_data": training_data(facts),
        "evaluation": facts.report("evaluate", "evaluation/metrics.json").get("test", {}),
        "slices": facts.report("evaluate", "evaluation/metrics.json").get("slices", {}),
        "fairness": fairness(facts),
        "fairness_thresholds": fairness_thresholds(facts),
        "fairness_confidence": _num(
            facts.report("gate_model_validation", "model_validation/report.json")
            .get("config", {})
            .get("fairness", {})
            .get("confidence")
        ),
        "scores": facts.report("gate_model_validation", "model_validation/report.json").get("scores") or {},
        "explanations": _explanation_summary(explanations(facts)),
        "gate_decisions": gate_decisions(facts),
        "limits": limits(facts),
        "overrides": overrides(facts),
        "lineage": lineage(facts),
        "deployment_history": deployment_history(facts),
        "approvals": [a for a in approvals(facts.name, facts.events) if a["version"] == facts.version],
        "audit_records": [e.seq for e in facts.events],
    }


def _explanation_summary(explained: dict[str, Any]) -> dict[str, Any]:
    if not explained:
        return {}
    return {
        "method": explained.get("method", ""),
        "rows": explained.get("n_rows"),
        "attributions": [
            {k: a.get(k) for k in ("feature", "importance", "importance_std", "rank")}
            for a in explained.get("attributions", [])
        ],
        "stability": explained.get("stability", {}),
    }


def _architecture(train: RunFacts | None) -> str:
    if train is None:
        return "(no training run recorded)"
    model = {k: v for k, v in train.params.items() if k.startswith("train.model.")}
    shown = ", ".join(f"{k.removeprefix('train.model.')}={v}" for k, v in sorted(model.items()))
    return f"feed-forward network (PyTorch, exported to ONNX){': ' + shown if shown else ''}"


def _risk(text: str) -> dict[str, str]:
    name, sep, mitigation = text.partition(":")
    return {"name": name.strip(), "mitigation_strategy": mitigation.strip() if sep else ""}
