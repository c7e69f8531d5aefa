import contextlib
import json
import math
from pathlib import Path

import mlflow
import pytest
from pydantic import ValidationError

from components.promotion_gate.promotion import MetricsGatePolicy, decide, promote, record
from mlops.tracking.store import TrackingStore


def _register_version(store: TrackingStore, name: str) -> str:
    client = store._client
    with contextlib.suppress(mlflow.exceptions.MlflowException):  # already registered
        client.create_registered_model(name)
    return str(client.create_model_version(name, source="file:///dev/null").version)


def test_first_model_above_floor_is_promoted() -> None:
    decision = decide(MetricsGatePolicy(auc_floor=0.7), 0.8, 0.0, has_champion=False)
    assert decision.promote
    assert "no current champion" in decision.reason
    assert math.isnan(decision.metrics["champion_auc"])


def test_below_floor_is_rejected_with_the_numbers() -> None:
    decision = decide(MetricsGatePolicy(auc_floor=0.75), 0.7, 0.0, has_champion=False)
    assert not decision.promote
    assert decision.reason == "test_auc 0.7000 is below the floor 0.7500"


def test_regression_against_champion_beyond_margin_is_rejected() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=0.02)
    assert decide(policy, 0.79, 0.80, has_champion=True).promote  # within the margin
    rejected = decide(policy, 0.77, 0.80, has_champion=True)
    assert not rejected.promote
    assert "worse than the champion's 0.8000 by more than the allowed 0.0200" in rejected.reason


def test_nan_auc_never_passes() -> None:
    assert not decide(MetricsGatePolicy(), float("nan"), 0.0, has_champion=False).promote


def test_policy_validation() -> None:
    with pytest.raises(ValidationError, match="auc_floor"):
        MetricsGatePolicy(auc_floor=1.5)


def test_record_tags_the_version_and_writes_a_report(tracking: TrackingStore, tmp_path: Path) -> None:
    version = _register_version(tracking, "m")
    decision = decide(MetricsGatePolicy(auc_floor=0.9), 0.8, 0.0, has_champion=False)
    report = tmp_path / "gate" / "report.json"
    record(decision, "m", version, tracking, report)
    tags = tracking.model_version("m", version).tags
    assert tags["mlops.gate.metrics.decision"] == "reject"
    assert "below the floor 0.9000" in tags["mlops.gate.metrics.reason"]
    assert "mlops.decision" not in tags  # the overall verdict is combine_gates' to write
    assert json.loads(report.read_text())["reason"] == decision.reason


def test_the_report_is_valid_json_with_null_and_a_reason_for_an_undefined_figure(
    tracking: TrackingStore, tmp_path: Path
) -> None:
    version = _register_version(tracking, "m")
    decision = decide(MetricsGatePolicy(auc_floor=0.5), 0.8, 0.0, has_champion=False)
    report = tmp_path / "gate" / "report.json"
    record(decision, "m", version, tracking, report)
    text = report.read_text()
    assert "NaN" not in text
    written = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the gate JSON"))
    assert written["metrics"] == {"test_auc": 0.8, "champion_auc": None}
    assert written["null_because"] == {"champion_auc": "no current champion to compare with"}


def test_promote_moves_the_champion_alias(tracking: TrackingStore) -> None:
    first = _register_version(tracking, "m")
    second = _register_version(tracking, "m")
    assert promote("m", first, tracking) is None
    assert promote("m", second, tracking) == first
    client = tracking._client
    assert str(client.get_model_version_by_alias("m", "champion").version) == second
    assert client.get_model_version("m", first).tags["mlops.replaced_by"] == second
    from mlops.governance.audit import read_events

    moves = len([e for e in read_events(tracking_uri=tracking.tracking_uri) if e.action == "alias.moved"])
    assert promote("m", second, tracking) == second  # already champion: nothing moves, nothing is recorded
    assert (
        len([e for e in read_events(tracking_uri=tracking.tracking_uri) if e.action == "alias.moved"])
        == moves
    )
    # The move's audit record links the pipeline run the store belongs to.
    from mlops.governance.audit import read_events

    (last, *_) = reversed(
        [e for e in read_events(tracking_uri=tracking.tracking_uri) if e.action == "alias.moved"]
    )
    assert last.links["pipeline_run_id"] == tracking.pipeline_run_id
    assert (last.details["from"], last.details["to"]) == (first, second)
