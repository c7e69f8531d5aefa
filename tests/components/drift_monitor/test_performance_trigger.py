"""Retraining on a performance drop and the window checks, pinned at their edges.

One registered champion; each day of the request log (written by the server's own writer)
holds one kind of traffic:

- day 0: normal traffic;
- day 1: *recombined* traffic: each risk feature's values are the normal day's, re-paired
  across rows so that risky values meet safe ones. Every feature's own distribution is
  unchanged (no feature drifts) but the scores crowd into the middle, where the model
  separates the classes badly: the label-free estimate drops;
- day 2: normal traffic whose feedback labels changed (half of them re-drawn at the base
  rate: concept drift). Nothing drifts and the estimate cannot move; the realised AUC drops;
- day 3: harmless drift: ``years_at_address`` (which the label does not depend on) moved by
  8 years.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from components.drift_monitor.config import DriftSettings, WindowSettings
from components.drift_monitor.monitor import check_window, notify_check
from mlops.governance.alerts import AlertSettings
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.feedback import store_labels
from mlops.monitoring.request_window import WindowError
from tests.support.monitoring import MODEL, Monitored, monitored_model, scores_of, traffic, write_log
from tests.support.webhook_receiver import webhook_receiver

T0 = datetime(2026, 11, 1, tzinfo=UTC)
ROWS = 5000
RISK = {
    "credit_score": -1,
    "interest_rate": 1,
    "credit_utilization": 1,
    "debt_to_income": 1,
    "num_delinquencies": 1,
}
"""Features that drive the sample label, and the sign of their effect on the risk."""


def recombine(model: Monitored, frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Re-pair each risk feature's values so that the riskiest rows get its safest values (marginals unchanged)."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    for column, sign in RISK.items():
        scores = scores_of(model, out)
        present = out[column].notna().to_numpy()
        safest_first = np.sort(out.loc[present, column].to_numpy())[:: sign if sign > 0 else -1]
        key = -np.argsort(np.argsort(scores[present])) + rng.normal(0, 0.3 * present.sum(), present.sum())
        out.loc[present, column] = safest_first[np.argsort(np.argsort(key))]
    return out


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    base = tmp_path_factory.mktemp("quality")
    model = monitored_model(base)
    normal = traffic(ROWS, seed=51)
    write_log(model, normal, T0 + timedelta(hours=6))
    write_log(model, recombine(model, normal), T0 + timedelta(days=1, hours=6), request_ids=ids("shifted"))
    concept = traffic(ROWS, seed=53)
    write_log(model, concept, T0 + timedelta(days=2, hours=6), request_ids=ids("concept"))
    rng = np.random.default_rng(4)
    labels = concept["default"].to_numpy().copy()
    redrawn = rng.random(ROWS) < 0.5
    labels[redrawn] = rng.random(int(redrawn.sum())) < labels.mean()
    pd.DataFrame({"request_id": ids("concept"), "label": labels.astype(int)}).to_csv(
        base / "labels.csv", index=False
    )
    store_labels(str(base / "labels.csv"), model.log_root, MODEL)
    harmless = traffic(ROWS, seed=52)
    harmless["years_at_address"] = harmless["years_at_address"] + 8
    write_log(model, harmless, T0 + timedelta(days=3, hours=6), request_ids=ids("harmless"))
    return model


def ids(prefix: str) -> list[str]:
    return [f"{prefix}-{i}" for i in range(ROWS)]


def window(day: int, **extra: object) -> WindowSettings:
    start = T0 + timedelta(days=day)
    values = {"since": start.isoformat(), "until": (start + timedelta(days=1)).isoformat(), "report_rows": 0}
    return WindowSettings(**{**values, **extra})  # type: ignore[arg-type]


def check(model: Monitored, day: int, **drift: object) -> DriftResult:
    return check_window(window(day), DriftSettings(**drift), model.store, model.log_root).result  # type: ignore[arg-type]


def test_scores_moved_into_the_uncertain_region_trigger_on_the_estimated_drop(model: Monitored) -> None:
    result = check(model, 1, trigger="performance")
    assert all(f.score < f.threshold for f in result.features), result.drifted_features
    assert not result.dataset_drift and result.drifted_features == []
    assert result.decision == "retrain" and result.performance_drop
    estimate, champion = result.estimated_bands["roc_auc"], result.reference_bands["roc_auc"]
    assert estimate["high"] < champion["low"]
    assert result.reasons[0].startswith("estimated roc_auc drop")
    assert "no feature drifted past its threshold" in result.reasons[0]
    assert result.as_dict()["headline"].startswith("retrain: estimated roc_auc drop")
    # With both triggers the drop still leads; prediction drift follows as the explanation it is.
    both = check(model, 1)
    assert both.reasons[0] == result.reasons[0] and both.reasons[1].startswith("prediction drift")
    # Drift alone never looked at performance: only the score shift speaks.
    assert not any("drop" in r for r in check(model, 1, trigger="drift").reasons)


def test_a_realised_drop_without_drift_triggers_and_says_the_estimate_cannot_see_it(model: Monitored) -> None:
    result = check(model, 2, trigger="performance")
    assert result.drifted_features == [] and not result.prediction_drift
    assert result.realised["labelled_rows"] == ROWS
    champion = result.reference_bands["roc_auc"]
    assert result.estimated_bands["roc_auc"]["high"] >= champion["low"]  # the estimate stays put
    assert result.realised_bands["roc_auc"]["high"] < champion["low"]
    assert result.decision == "retrain"
    assert (
        result.reasons[0].startswith("realised roc_auc drop")
        and f"on {ROWS} labelled rows" in result.reasons[0]
    )
    assert "the label-free estimate" in result.reasons[0] and "cannot see this drop" in result.reasons[0]
    # Below min_labelled_rows the realised figures are reported, never acted on (at / just outside).
    assert check(model, 2, trigger="performance", min_labelled_rows=ROWS).decision == "retrain"
    held = check(model, 2, trigger="performance", min_labelled_rows=ROWS + 1)
    assert held.decision == "none" and held.realised_bands


def test_harmless_drift_on_a_feature_the_model_barely_uses_does_not_trigger(model: Monitored) -> None:
    result = check(model, 3)
    assert result.drifted_features == ["years_at_address"]
    assert result.decision == "none" and not result.performance_drop, result.reasons
    assert check(model, 3, trigger="performance").decision == "none"
    # A drift-only rule tight enough to see one feature fires on it: the trigger the issue replaces.
    assert check(model, 3, trigger="drift", share=0.05).decision == "retrain"
    assert check(model, 3, trigger="performance", share=0.05).decision == "none"


def test_a_normal_window_triggers_nothing_and_its_estimate_band_meets_the_champions(model: Monitored) -> None:
    result = check(model, 0)
    assert result.decision == "none" and not result.performance_drop
    estimate, champion = result.estimated_bands["roc_auc"], result.reference_bands["roc_auc"]
    assert estimate["low"] <= champion["high"] and estimate["high"] >= champion["low"]
    assert estimate["low"] < estimate["value"] < estimate["high"]


@pytest.mark.parametrize(("drifting", "expected"), [(10, True), (9, False), (11, True)])
def test_ten_of_twenty_features_drifted_is_dataset_drift(
    model: Monitored, drifting: int, expected: bool
) -> None:
    """The share rule at its tie. Thresholds force exactly ``drifting`` features over theirs."""
    names = [f.name for f in check(model, 0).features]
    thresholds = {name: (1e-12 if i < drifting else 1e6) for i, name in enumerate(names)}
    result = check(
        model, 0, feature_thresholds=thresholds, trigger="drift", trigger_on_prediction_drift=False
    )
    assert len(result.drifted_features) == drifting
    assert result.dataset_drift is expected
    assert (result.decision == "retrain") is expected


@pytest.mark.parametrize(("min_rows", "accepted"), [(ROWS - 1, True), (ROWS, True), (ROWS + 1, False)])
def test_a_window_below_min_rows_is_refused(model: Monitored, min_rows: int, accepted: bool) -> None:
    """The window holds exactly ROWS rows; min_rows at, just under and just over it."""
    settings = window(0, min_rows=min_rows)
    if accepted:
        assert check_window(settings, DriftSettings(), model.store, model.log_root).result.rows == ROWS
    else:
        with pytest.raises(WindowError, match=rf"holds {ROWS} logged row\(s\).*min_rows {ROWS + 1}"):
            check_window(settings, DriftSettings(), model.store, model.log_root)


@pytest.mark.parametrize(
    ("column", "value", "wanted"),
    [
        ("income", "52000.0", "numeric"),  # a number logged as text: float() would have read it silently
        ("prediction", "0.4", "numeric"),
        ("region", 3.0, "text"),
    ],
)
def test_a_wrongly_typed_log_column_is_refused_naming_it(
    model: Monitored, tmp_path: Path, column: str, value: object, wanted: str
) -> None:
    """A request log whose column has another type is refused with the column, its type and the fix."""
    day = 10 + ["income", "prediction", "region"].index(column)
    frame = traffic(200, seed=60)
    frame["prediction"], frame["model_version"] = 0.3, model.version
    frame["timestamp"] = pd.Timestamp(T0 + timedelta(days=day, hours=1))
    frame[column] = value
    stamp = (T0 + timedelta(days=day, hours=2)).strftime("%Y%m%dT%H%M%S%f")
    frame.drop(columns=["default", "sex"]).to_parquet(
        Path(model.log_root) / MODEL / f"requests-{stamp}Z-v1-typed.parquet"
    )
    with pytest.raises(
        WindowError, match=rf"column '{column}' is .*, but the model's column is {wanted}.*remove the file"
    ):
        check_window(window(day, min_rows=1), DriftSettings(), model.store, model.log_root)


def test_a_drop_and_drift_alert_people_through_the_webhook(model: Monitored) -> None:
    with webhook_receiver() as receiver:
        settings = AlertSettings(alert_webhook_url=f"{receiver.url}/alerts")
        assert notify_check(check(model, 1), settings) == ["estimated_drop", "drift"]
        assert notify_check(check(model, 0), settings) == []  # nothing to tell
    drop = receiver.posts[0].body
    assert drop["text"].startswith("[mlops] estimated_drop: credit-default/1: estimated roc_auc drop")
    assert f"• version {model.version}'s test roc_auc: " in drop["blocks"][0]["text"]["text"]
    assert "prediction distance" in receiver.posts[1].body["text"] and len(receiver.posts) == 2


def log_gate_report(model: Monitored) -> None:
    """Run the model-validation gate on the champion's test split and log its report.json as the gate does."""
    from components.model_validation.config import ValidationConfig
    from components.model_validation.gate_report import to_json
    from components.model_validation.scoring import load_scorer
    from components.model_validation.validation_gate import validate
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.vocabulary import VALIDATION_REPORT_FILE, VALIDATION_RUN_TAG

    test = generate(SampleDataConfig(rows=1500, seed=22))  # the rows monitored_model registered with
    result = validate(load_scorer(model.onnx_dir), test, "default", ["sex"], ValidationConfig())
    client = model.store._client
    run = client.create_run(client.get_experiment_by_name("training").experiment_id)
    client.log_text(
        run.info.run_id, json.dumps(to_json(result, MODEL, model.version)), VALIDATION_REPORT_FILE
    )
    client.set_model_version_tag(MODEL, model.version, VALIDATION_RUN_TAG, run.info.run_id)


def test_feedback_naming_groups_shows_bias_drift_against_the_gates_figures(
    model: Monitored, tmp_path: Path
) -> None:
    """Day 4: normal traffic; feedback gives each request's sex, and group F now holds the riskiest half."""
    frame = traffic(ROWS, seed=54)
    write_log(model, frame, T0 + timedelta(days=4, hours=6), request_ids=ids("bias"))
    risky = scores_of(model, frame) >= np.median(scores_of(model, frame))
    groups = pd.DataFrame({"request_id": ids("bias"), "sex": np.where(risky, "F", "M")})
    groups.to_csv(tmp_path / "groups.csv", index=False)  # no label column: the groups alone
    assert store_labels(str(tmp_path / "groups.csv"), model.log_root, MODEL).matched == ROWS
    unjudged = check(model, 4)
    assert unjudged.findings == [
        "bias drift not checked: feedback named protected groups, but the version has no model-validation "
        "report to compare with"
    ]
    log_gate_report(model)
    mismatched = check(model, 4)
    assert mismatched.findings[0].startswith(
        "bias drift: feedback names sex group(s) ['F', 'M'] the gate did not"
    )
    groups["sex"] = np.where(risky, "female", "male")  # the gate's names; the later file wins
    groups.to_csv(tmp_path / "groups.csv", index=False)
    store_labels(str(tmp_path / "groups.csv"), model.log_root, MODEL)
    result = check(model, 4)
    rates = {f["group"]: f for f in result.bias if f["kind"] == "selection_rate"}
    assert set(rates) == {"female", "male"} and rates["female"]["rows"] + rates["male"]["rows"] == ROWS
    assert rates["female"]["selection_rate"] > rates["female"]["reference"] + 0.05
    assert rates["female"]["breach"] and rates["female"]["low"] > rates["female"]["reference"] + 0.05
    assert result.findings == [f for f in result.findings if f.startswith("bias drift: sex=")]
    assert any(f.startswith("bias drift: sex=female selection rate") for f in result.findings)
    assert result.realised == {}  # no label arrived: nothing realised
    with webhook_receiver() as receiver:
        assert "bias_drift" in notify_check(result, AlertSettings(alert_webhook_url=receiver.url))
    assert receiver.posts[0].body["text"].startswith("[mlops] bias_drift: credit-default/1: bias drift: sex=")


def test_attribution_is_measured_on_the_window_and_a_changed_ranking_is_a_finding(model: Monitored) -> None:
    """Day 5: normal traffic, except that the two features the gate found most important hold one value."""
    from mlops.vocabulary import VALIDATION_RUN_TAG

    model.store._client.delete_model_version_tag(MODEL, model.version, VALIDATION_RUN_TAG)
    unjudged = check(model, 0)
    assert unjudged.attribution == {
        "not_checked": "the version has no model-validation report with feature importances to compare with"
    }
    assert not any(f.startswith("attribution") for f in unjudged.findings)
    log_gate_report(model)
    normal = check(model, 0)
    assert normal.attribution["rows"] == 2000 and not normal.attribution["changed"]
    assert normal.attribution["agreement"] >= 0.8, normal.attribution
    assert not any(f.startswith("attribution") for f in normal.findings)
    assert set(normal.attribution["window"]) == set(normal.attribution["reference"])

    reference = normal.attribution["reference"]
    top = sorted(reference, key=reference.__getitem__, reverse=True)[:2]
    frame = traffic(ROWS, seed=55)
    for column in top:
        frame[column] = frame[column].median()
    write_log(model, frame, T0 + timedelta(days=5, hours=6), request_ids=ids("flat"))
    flat = check(model, 5)
    assert flat.attribution["changed"] and flat.attribution["agreement"] < 0.8, flat.attribution
    assert set(flat.attribution["movers"][:2]) == set(top)
    assert all(flat.attribution["window"][c] == 0.0 for c in top)
    finding = next(f for f in flat.findings if f.startswith("attribution drift:"))
    assert f"rank agreement {flat.attribution['agreement']:.2f} < 0.80 on 2000 rows" in finding
    assert set(finding.split("moved most: ")[1].split(", ")[:2]) == set(top)
    # A looser agreement floor accepts the same window; switched off, nothing is measured.
    assert not check(model, 5, attribution_min_agreement=-0.9).attribution["changed"]
    assert check(model, 5, attribution_rows=0).attribution == {}
    with webhook_receiver() as receiver:
        assert "drift" in notify_check(flat, AlertSettings(alert_webhook_url=receiver.url))
    assert any(
        "attribution drift: the feature-importance ranking changed" in p.body["text"] for p in receiver.posts
    )
