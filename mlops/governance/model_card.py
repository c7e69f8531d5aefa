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

Everything here is computed from :class:`ModelFacts` (collected through the MLflow seam by
:mod:`mlops.tracking.model_facts`) and the schema file's ``card:`` block; nothing is guessed:
a section the platform has no record of says so, and the human-written fields still empty
are listed (``empty_fields``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mlops.data.card_fields import CardFields
from mlops.governance.audit import AuditEvent
from mlops.governance.provenance import approvals, history
from mlops.vocabulary import (
    DATASET_DIGEST_TAG,
    DATASET_URI_TAG,
    DECISION_TAG,
    DIGEST_TAG,
    REASON_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
    STATUS_TAG,
    TAG_PREFIX,
    UNDECIDED_TAG,
    Lineage,
)

MCT_SCHEMA = "Model Card Toolkit JSON schema"
MCT_SCHEMA_VERSION = "0.0.2"
FACTS_FORMAT = "mlops-model-facts/1"
CARD_JSON = "model_card.json"
FACTS_JSON = "mlops_facts.json"
CARD_HTML = "model_card.html"
QUALITY_METRICS = ("roc_auc", "pr_auc", "accuracy", "f1", "log_loss", "ece")


@dataclass(frozen=True)
class RunFacts:
    """One MLflow task run of the pipeline run that produced the version."""

    task: str
    run_id: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    reports: dict[str, Any] = field(default_factory=dict)
    """Artifact path -> parsed JSON report (``evaluation/metrics.json``, ``model_validation/report.json`` …)."""
    report_files: list[str] = field(default_factory=list)
    """Downloaded report files, relative to the reports folder (``<task>/<artifact path>``)."""


@dataclass(frozen=True)
class ModelFacts:
    """What the registry, the task runs and the audit trail hold about one version."""

    name: str
    alias: str
    version: str
    aliases: list[str]
    created_at: str
    description: str
    tags: dict[str, str]
    runs: list[RunFacts]
    profile: dict[str, Any]
    """The version's reference profile (training data summary); empty when it has none."""
    events: list[AuditEvent]
    """Audit records of this version and of the validation of its training data."""
    model_events: list[AuditEvent]
    """Every audit record of this registered model (the alias history reads them)."""
    tracking_uri: str = ""

    def run(self, task: str) -> RunFacts | None:
        found = [r for r in self.runs if r.task == task]
        return found[-1] if found else None

    def report(self, task: str, path: str) -> dict[str, Any]:
        run = self.run(task)
        value = run.reports.get(path) if run else None
        return value if isinstance(value, dict) else {}


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


def gate_decisions(facts: ModelFacts) -> list[dict[str, Any]]:
    """Every gate's decision on the version: from the audit trail, else from the version's tags."""
    decided = [e for e in facts.events if e.action == "gate.decided"]
    if decided:
        return [
            {
                "gate": e.details.get("gate", ""),
                "decision": e.details.get("decision", ""),
                "status": e.details.get("status") or _status_of(e.details.get("decision", "")),
                "reason": e.details.get("reason", ""),
                "undecided": list(e.details.get("undecided") or []),
                "at": e.at,
                "audit_seq": e.seq,
            }
            for e in decided
        ]
    prefix = f"{TAG_PREFIX}gate."
    rows = [
        {
            "gate": k[len(prefix) : -len(".decision")],
            "decision": v,
            "status": facts.tags.get(k[: -len("decision")] + "status") or _status_of(v),
            "reason": facts.tags.get(k[: -len("decision")] + "reason", ""),
            "undecided": _lines(facts.tags.get(k[: -len("decision")] + "undecided", "")),
            "at": "",
            "audit_seq": None,
        }
        for k, v in sorted(facts.tags.items())
        if k.startswith(prefix) and k.endswith(".decision")
    ]
    if DECISION_TAG in facts.tags:
        rows.append(
            {
                "gate": "overall",
                "decision": facts.tags[DECISION_TAG],
                "status": facts.tags.get(STATUS_TAG) or _status_of(facts.tags[DECISION_TAG]),
                "reason": facts.tags.get(REASON_TAG, ""),
                "undecided": _lines(facts.tags.get(UNDECIDED_TAG, "")),
                "at": "",
                "audit_seq": None,
            }
        )
    return rows


def _status_of(decision: str) -> str:
    """A decision recorded before gates had statuses: reject is a fail; a promote's status was not recorded."""
    return "fail" if decision == "reject" else "not recorded"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


LIMITS_ACTION = "gate.limits"
"""The audit action ``mlops run`` records with the limits a version's gates decided under (``cli.summaries.limits``)."""


def limits(facts: ModelFacts) -> list[dict[str, Any]]:
    """Every limit the gates decided under, with its default, and for a changed one who changed it and where.

    From the run's ``gate.limits`` audit record (written by ``mlops run``: the person and the command
    line), else from the model-validation report (the values and defaults; who changed one is then
    not recorded). Model-validation values in the report win over the record's: they are what the gate used.
    """
    recorded = [e for e in facts.events if e.action == LIMITS_ACTION]
    event = recorded[-1] if recorded else None
    by_address: dict[str, dict[str, Any]] = {}
    if event is not None:
        for limit in event.details.get("limits") or []:
            by_address[limit["address"]] = {
                **limit,
                "set_by": event.actor if limit.get("source") != "default" else "",
                "audit_seq": event.seq,
            }
    report = facts.report("gate_model_validation", "model_validation/report.json")
    for limit in report.get("limits") or []:
        known = by_address.get(limit["address"])
        if known is not None and known.get("value") == limit.get("value"):
            continue
        changed = limit.get("value") != limit.get("default")
        by_address[limit["address"]] = {
            **limit,
            "source": "changed for this run; who and where not recorded (not started with mlops run)"
            if changed
            else "default",
            "set_by": "",
            "audit_seq": None,
        }
    return list(by_address.values())


def overrides(facts: ModelFacts) -> list[dict[str, Any]]:
    """The limits in force that differ from their defaults."""
    return [limit for limit in limits(facts) if limit.get("value") != limit.get("default")]


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
