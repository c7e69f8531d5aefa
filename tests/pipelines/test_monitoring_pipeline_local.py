"""The monitoring pipeline under KFP's local runner, closing the loop: serve → drift → retrain.

The champion is served by a real ``mlops serve`` process that logs requests; the monitor
reads that log; a drifted window runs the real training pipeline (small data, 2 epochs),
whose new version records the trigger in its lineage.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from cli.local_run import PipelineFailed, run_locally
from cli.main import main
from mlops.governance import audit
from pipelines.monitoring.pipeline import FORM, monitoring_pipeline
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic, write_log
from tests.support.serving import DemoStore, running_server

pytestmark = pytest.mark.slow

T0 = datetime(2026, 11, 1, tzinfo=UTC)
RETRAIN_SMALL = json.dumps(  # the triggered training run's settings, by address
    {
        "data.sample.rows": "1500",
        "data.sample.drift": "1",
        "train.epochs": "2",
        "train.model.hidden_units": "[16]",
        "train.batch_size": "256",
        "model_validation.fairness.gate_on_intervals": "false",
        "model_validation.explainability.n_examples": "0",
        "model_validation.explainability.n_references": "10",
        "model_validation.explainability.permutation_repeats": "1",
    }
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("monitoring-pipeline"))


def arguments(model: Monitored, since: datetime, until: datetime, **extra: object) -> dict[str, object]:
    """The monitoring pipeline's arguments (per-run parameters and whole sections) for this window."""
    ws = model.workspace
    return FORM.arguments(
        {
            **extra,
            "window.since": since.isoformat(),
            "window.until": until.isoformat(),
            "tracking.tracking_uri": ws.tracking_uri,
            "tracking.artifact_root": ws.artifact_root,
            "window.request_log_uri": model.log_root,
            "retrain.workspace": str(ws.root),
            "window.report_rows": 0,
        }
    )


def versions(model: Monitored) -> list[str]:
    client = model.store._client
    return sorted(v.version for v in client.search_model_versions(f"name = '{MODEL}'"))


def test_a_window_without_drift_triggers_nothing(model: Monitored) -> None:
    write_log(model, traffic(800, seed=51), T0 + timedelta(hours=1))
    before = versions(model)
    result = run_locally(monitoring_pipeline, arguments(model, T0, T0 + timedelta(days=1)), model.workspace)
    assert result.output == "none"
    assert result.run_dir is not None and not (result.run_dir / "trigger-retraining").exists()
    assert versions(model) == before
    event = audit.read_events(model.workspace.root)[-1]
    assert (event.action, event.details["decision"]) == ("drift.checked", "none")


def test_an_empty_window_fails_the_check_and_triggers_nothing(model: Monitored) -> None:
    before = versions(model)
    with pytest.raises(PipelineFailed) as failed:
        run_locally(
            monitoring_pipeline,
            arguments(model, T0 - timedelta(days=9), T0 - timedelta(days=8)),
            model.workspace,
        )
    assert failed.value.task == "check-drift"
    assert "holds 0 logged row(s)" in failed.value.reason
    assert versions(model) == before
    assert "retrain.triggered" not in [e.action for e in audit.read_events(model.workspace.root)]


@pytest.mark.timeout(1800)  # serve + two monitoring runs + a training run: ~9 min on a loaded 2-core VM
def test_drifted_traffic_to_the_served_champion_triggers_a_retraining_once(model: Monitored) -> None:
    store = DemoStore(model.workspace, model.onnx_dir, model.onnx_dir, traffic(10, seed=0))
    drifted = traffic(600, seed=52, drift=1.0).drop(columns=["default", "sex"])
    since = datetime.now(UTC)
    with running_server(store, "--request-log-flush-s", "0.5", "--reload-interval-s", "0") as server:
        for start in range(0, len(drifted), 20):
            rows = json.loads(drifted.iloc[start : start + 20].to_json(orient="records"))
            response = httpx.post(f"{server.url}/v1/models/{MODEL}:predict", json={"instances": rows})
            assert response.status_code == 200, response.text
    until = datetime.now(UTC) + timedelta(seconds=1)
    before = versions(model)

    ws = str(model.workspace.root)
    monitor = ["--workspace", ws, "monitor", f"--since={since.isoformat()}", f"--until={until.isoformat()}"]
    assert main([*monitor, f"--set=retrain.overrides={RETRAIN_SMALL}", "--set=window.report_rows=0"]) == 0

    client = model.store._client
    new = [v for v in versions(model) if v not in before]
    assert len(new) == 1, "the drifted window must register exactly one new version"
    challenger = client.get_model_version(MODEL, new[0])
    assert "challenger" in challenger.aliases
    trigger = challenger.tags["mlops.trigger"]
    assert trigger.startswith("drift-monitor run ")
    check_run = client.get_run(trigger.removeprefix("drift-monitor run "))
    assert check_run.data.tags["mlops.monitor.decision"] == "retrain"
    assert "credit_score" in check_run.data.tags["mlops.monitor.reason"]
    events = audit.read_events(model.workspace.root)
    actions = [e.action for e in events]
    checked = len(actions) - 1 - actions[::-1].index("drift.checked")
    # The trigger is recorded right after the check; the retraining run's own records follow it.
    assert actions[checked + 1] == "retrain.triggered"
    assert events[checked + 1].links == {"mlflow_run_id": check_run.info.run_id}
    assert "model.registered" in actions[checked + 2 :]

    # The same window again, within the cooldown: the check still says retrain, nothing is started.
    assert main([*monitor, "--set=window.report_rows=0"]) == 0
    assert len(versions(model)) == len(before) + 1
    assert audit.read_events(model.workspace.root)[-1].action == "retrain.suppressed"


def test_a_retraining_that_fails_fails_the_run_with_what_the_training_run_said(
    model: Monitored, tmp_path: Path
) -> None:
    """The trigger runs inside the pipeline's condition: its failure is named like any step's, with the reason
    the triggered `mlops run training` printed (on stdout, with its summary), not a traceback."""
    write_log(model, traffic(600, seed=53, drift=1.0), T0 + timedelta(days=3, hours=1))
    missing = tmp_path / "no-such-table.csv"
    window = arguments(
        model,
        T0 + timedelta(days=3),
        T0 + timedelta(days=4),
        **{"retrain.overrides": {"data.uri": str(missing)}, "retrain.force": True},
    )
    with pytest.raises(PipelineFailed) as failed:
        run_locally(monitoring_pipeline, window, model.workspace)
    assert failed.value.task == "trigger-retraining"
    said = " ".join([failed.value.reason, *failed.value.details])
    assert "the triggered retraining failed (exit" in said and str(missing) in said, said
