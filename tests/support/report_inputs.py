"""Realistic inputs for the three HTML reports (gate report, model card, data report), shared by the
content tests and the browser tests: one real gate run (fairness with a small group, scores, per-example
explanations), the card built from that run's JSON, and a data validation of the bank table with a note
and failed checks. ``name`` is the protected attribute / column name, so a test can pass markup as one."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from components.data_validation.check_results import CheckResult, DataValidationResult
from components.model_validation.config import ValidationConfig
from components.model_validation.gate_report import to_json
from components.model_validation.gate_result import ModelValidationResult
from mlops.data.card_fields import CardFields
from mlops.governance.audit import AuditEvent
from mlops.governance.model_card import ModelFacts, RunFacts, facts_document, model_card
from tests.support.gate_inputs import numeric_spec, stub_scorer

ATTRIBUTE = "race"
GROUPS = ("a", "b", "tiny")


def gate_result(name: str = ATTRIBUTE, groups: tuple[str, ...] = GROUPS) -> ModelValidationResult:
    """A real gate run on 500 scored rows: three groups, the last too small, two explained rows."""
    from components.model_validation.validation_gate import validate

    rng = np.random.default_rng(8)
    rows = 500
    x, z = rng.normal(size=rows), rng.normal(size=rows)
    group = np.where(np.arange(rows) < 6, groups[-1], np.where(rng.random(rows) < 0.5, groups[0], groups[1]))
    y = (rng.random(rows) < 1 / (1 + np.exp(-(1.5 * x + 0.5 * z)))).astype(int)
    frame = pd.DataFrame({"x": x, "z": z, name: group, "y": y})
    scorer = stub_scorer(numeric_spec("x", "z"), lambda m: 1 / (1 + np.exp(-(1.4 * m[:, 0] + 0.4 * m[:, 1]))))
    config = ValidationConfig.model_validate(
        {"explainability": {"n_examples": 2, "permutation_repeats": 1, "n_references": 20}}
    )
    return validate(scorer, frame, "y", [name], config, "positive")


def card_inputs(name: str = ATTRIBUTE) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(card, facts)`` for :func:`mlops.governance.card_html.render`, as ``mlops card`` builds them."""
    report = json.loads(json.dumps(to_json(gate_result(name), "credit", "7")))
    evaluation = {
        "test": {"roc_auc": 0.8125, "accuracy": 0.75, "n_rows": 500},
        "slices": {
            "slices": [
                {
                    "slice": f"{name} = a",
                    "size": 240,
                    "metrics": {"roc_auc": {"value": 0.8, "lower": 0.74, "upper": 0.86}},
                },
                {"slice": f"{name} = tiny", "size": 6, "metrics": {}, "note": "too few rows"},
            ]
        },
    }
    runs = [
        RunFacts("evaluate", "r-eval", "FINISHED", {}, {}, {}, {"evaluation/metrics.json": evaluation}),
        RunFacts(
            "gate_model_validation",
            "r-gate",
            "FINISHED",
            {},
            {},
            {},
            {"model_validation/report.json": report},
        ),
        RunFacts("data_validation", "r-data", "FINISHED", {"data_uri": "s3://data/credit.csv"}, {}, {}),
    ]
    profile = {
        "numeric": [{"name": "x", "rows": 500, "missing": 0, "mean": 0.01, "std": 0.99}],
        "categorical": [
            {"name": name, "rows": 500, "missing": 2, "categories": list(GROUPS), "counts": [250, 244, 6]}
        ],
    }
    events = [
        AuditEvent("data.validated", "credit/7", {"suite": "credit", "success": True}, at="t0", seq=3),
        AuditEvent(
            "approval.approved",
            "credit/7",
            {"approver": "alice", "reason": "read <b>it</b>"},
            actor="alice",
            at="t2",
            seq=9,
        ),
    ]
    history = [
        AuditEvent("alias.moved", "credit/7", {"alias": "champion", "to": "7"}, actor="bob", at="t3", seq=10)
    ]
    facts = ModelFacts(
        "credit", "champion", "7", ["champion"], "2026-01-01", "", {}, runs, profile, events, events + history
    )
    fields = CardFields(
        overview="Ranks loan applications for manual review.",
        intended_uses=("rank applications",),
        owners=("risk team",),
        license="proprietary",
    )
    return model_card(facts, fields), facts_document(facts, fields, "credit.schema.yaml")


def data_result(name: str = "job") -> DataValidationResult:
    """A validation with a note, two failed checks (one on column ``name``) and passing ones."""
    checks = (
        CheckResult(
            expectation="dataset_schema",
            column=None,
            success=True,
            observed=None,
            observed_text="17 columns as declared",
            kwargs={},
        ),
        CheckResult(
            expectation="expect_column_values_to_be_in_set",
            column=name,
            success=False,
            observed={"unexpected": ["pilot", "<i>x</i>"]},
            observed_text="2 rows outside the set: 'pilot', '<i>x</i>'",
            kwargs={"column": name, "value_set": ["admin.", "retired"], "mostly": 1.0},
            notes="categories seen in the reference data",
        ),
        CheckResult(
            expectation="expect_column_values_to_be_between",
            column="age",
            success=False,
            observed={"min": -5},
            observed_text="min -5 < 18",
            kwargs={"column": "age", "min_value": 18, "max_value": 100},
        ),
        CheckResult(
            expectation="expect_column_values_to_not_be_null",
            column="balance",
            success=True,
            observed={"unexpected_percent": 0.0},
            observed_text="0 nulls",
            kwargs={"column": "balance"},
        ),
    )
    return DataValidationResult(
        suite_name="bank",
        suite_version="3",
        source="s3://data/bank.csv",
        dataset_digest="ab" * 32,
        rows=800,
        columns=17,
        duration_s=1.234,
        checks=checks,
        notes=("column(s) ['region'] are in the data but not in the schema file: dropped",),
    )
