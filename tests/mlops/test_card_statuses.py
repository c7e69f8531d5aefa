"""The model card shows what the gates decided as they decided it: three statuses, the limits in force
with any override and who set it, and the report's charts."""

from __future__ import annotations

import json

import numpy as np

from components.model_validation.config import ValidationConfig
from components.model_validation.explainability import ExplainabilityResult, Stability
from components.model_validation.fairness import evaluate_fairness
from components.model_validation.gate_report import to_json
from components.model_validation.gate_result import ModelValidationResult
from components.model_validation.score_summary import summarise_scores
from components.model_validation.validation_gate import decide
from mlops.data.card_fields import CardFields
from mlops.governance.audit import AuditEvent
from mlops.governance.card_html import render
from mlops.governance.model_card import facts_document, model_card
from mlops.governance.version_facts import ModelFacts, RunFacts
from tests.support.gate_inputs import confusion_group, scored_groups

RELAXED = 0.25


def _report() -> dict[str, object]:
    """A gate report: parity difference 0.1875 held against a relaxed max 0.25, its interval reaching across it."""
    frame, scores = scored_groups(
        {
            "a": confusion_group(tp=20, fn=20, fp=10, tn=30),
            "b": confusion_group(tp=14, fn=26, fp=1, tn=39),
            "tiny": confusion_group(tp=1, fn=1, fp=1, tn=1),
        },
        attribute="race",
    )
    config = ValidationConfig.model_validate({"fairness": {"max_demographic_parity_difference": RELAXED}})
    fairness = evaluate_fairness(frame, scores, "y", ["race"], config.fairness, "positive")
    explained = ExplainabilityResult("method", 40, (), (), Stability(0.9, 0.8, 3, 0.6, 20), ())
    result = ModelValidationResult(
        "y",
        ("race",),
        len(frame),
        config,
        fairness,
        explained,
        (),
        scores=summarise_scores(frame["y"].to_numpy(), scores, 0.5, 0.95),
        decisions=decide(fairness, explained, []),
    )
    return json.loads(json.dumps(to_json(result, "compas", "2")))


def _facts(*events: AuditEvent) -> ModelFacts:
    run = RunFacts(
        "gate_model_validation", "r1", "FINISHED", {}, {}, {}, {"model_validation/report.json": _report()}
    )
    return ModelFacts(
        "compas", "champion", "2", ["champion"], "2026-01-01", "", {}, [run], {}, list(events), []
    )


LIMITS = AuditEvent(
    "gate.limits",
    "compas/2",
    {
        "limits": [
            {
                "address": "model_validation.fairness.max_demographic_parity_difference",
                "value": RELAXED,
                "default": 0.1,
                "source": "command line (mlops run --set / --SECTION.FIELD)",
            },
            {"address": "gate.auc_floor", "value": 0.7, "default": 0.7, "source": "default"},
        ]
    },
    actor="alice",
    seq=41,
)
DECIDED = AuditEvent(
    "gate.decided",
    "compas/2",
    {
        "gate": "overall",
        "decision": "promote",
        "status": "not_conclusive",
        "reason": "promoted with 1 …",
        "undecided": ["x"],
    },
    seq=42,
)


def test_the_card_names_each_limit_its_override_and_who_set_it() -> None:
    document = facts_document(_facts(LIMITS, DECIDED), CardFields(), "schema.yaml")
    (override,) = document["overrides"]
    assert override["address"] == "model_validation.fairness.max_demographic_parity_difference"
    assert (override["value"], override["default"], override["set_by"], override["audit_seq"]) == (
        RELAXED,
        0.1,
        "alice",
        41,
    )
    assert override["source"].startswith("command line")
    limits = {limit["address"]: limit for limit in document["limits"]}
    assert limits["gate.auc_floor"]["source"] == "default" and limits["gate.auc_floor"]["set_by"] == ""
    assert limits["model_validation.fairness.min_group_size"]["source"] == "default"  # from the report
    html = render(model_card(_facts(LIMITS, DECIDED), CardFields()), document)
    assert "1 limit(s) changed from the platform default" in html
    assert (
        "(default 0.1000): command line (mlops run --set / --SECTION.FIELD), set by alice (audit record 41)"
        in html
    )


def test_without_the_runs_record_an_override_still_shows_and_says_who_is_unknown() -> None:
    document = facts_document(_facts(), CardFields(), "schema.yaml")
    (override,) = document["overrides"]
    assert override["value"] == RELAXED and override["default"] == 0.1
    assert (
        override["source"] == "changed for this run; who and where not recorded (not started with mlops run)"
    )


def test_the_card_shows_each_disparity_with_its_limit_and_status_and_the_charts() -> None:
    facts = _facts(LIMITS, DECIDED)
    document = facts_document(facts, CardFields(), "schema.yaml")
    html = render(model_card(facts, CardFields()), document)
    row = html.split("<td>demographic_parity_difference</td>", 1)[1].split("</tr>", 1)[0]
    # The card: "fairness thresholds met" beside 0.19 with no limit. Now the limit in force and
    # the honest status: 0.1875 is within the relaxed 0.25, but its interval 0.048..0.318 reaches across it.
    assert "<td>0.1875</td>" in row and "<td>max 0.25</td>" in row
    assert '<span class="not_conclusive">not conclusive</span>' in row and "pass" not in row
    assert "Not conclusive on the test rows" in html
    assert "race demographic_parity_difference 0.1875 is within the max 0.2500" in html
    gate_row = html.split("<td>overall</td>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="not_conclusive">not conclusive</span>' in gate_row
    assert html.count('alt="race rates by group"') == 1
    assert 'alt="calibration"' in html and 'alt="score distribution"' in html
    tiny = html.split("<td>tiny</td>", 1)[1].split("</tr>", 1)[0]
    assert "too small: decided nothing" in tiny
    b = html.split("<td>b</td>", 1)[1].split("</tr>", 1)[0]
    assert "too small" not in b


def test_the_machine_readable_card_carries_threshold_and_status_per_disparity() -> None:
    metrics = model_card(_facts(), CardFields())["quantitative_analysis"]["performance_metrics"]
    parity = next(m for m in metrics if m["type"] == "demographic_parity_difference")
    assert parity["threshold"] == {"bound": "max", "value": RELAXED}
    assert parity["status"] == "not_conclusive"
    assert np.isclose(parity["value"], 0.1875)
