"""``mlops run training`` serves the workspace's store once: the recording tasks record over REST, without
importing MLflow, and every run, gate tag and audit record is still there; the server stops with the run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlops.governance.audit import read_events
from mlops.tracking.store import TrackingStore

MLOPS = shutil.which("mlops", path=str(Path(sys.executable).parent))
RECORDING_TASKS = ("metrics-gate", "combine-gates", "promote-to-champion")
"""The training pipeline's tasks whose own work is trivial: they only record."""


def _imported(log: Path) -> set[str]:
    """Top-level modules a task's process imported (its ``-X importtime`` lines, in the task's log)."""
    names = re.findall(r"^\s*import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", log.read_text(), re.MULTILINE)
    return {name.split(".")[0] for name in names}


@pytest.mark.slow
def test_a_local_run_records_everything_through_its_own_tracking_server(tmp_path: Path) -> None:
    assert MLOPS, "the mlops console script is not installed in this environment"
    workspace = tmp_path / "ws"
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}  # every task's imports land in its log
    env.pop("MLFLOW_TRACKING_URI", None)
    # Cold steps, each its own interpreter, as under --runner docker and on a cluster: what a recording step
    # imports is its own (a warm step's process has MLflow already, imported once for the other steps).
    result = subprocess.run(
        [MLOPS, "--workspace", str(workspace), "run", "training", "--cold-steps", "--set", "data.sample.rows=2000",
         "--set", "train.epochs=1", "--set", "train.model.hidden_units=8",
         "--set", "model_validation.fairness.gate_on_intervals=false", "--set", "gate.auc_floor=0.5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1500, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = Path(next(line for line in result.stdout.splitlines() if "pipeline run " in line).split()[-1])

    decision = (
        TrackingStore.from_uri(f"sqlite:///{workspace}/mlflow.db")
        .model_version("credit-default", "1")
        .tags["mlops.decision"]
    )
    ran = RECORDING_TASKS if decision == "promote" else RECORDING_TASKS[:2]  # promote runs on promote only
    for task in ran:
        imported = _imported(run_dir / "logs" / f"{task}.log")
        assert "kfp" in imported, f"{task}: no import lines in its log"
        assert not {"mlflow", "sqlalchemy", "alembic"} & imported, f"{task} imported {imported}"

    store = TrackingStore.from_uri(f"sqlite:///{workspace}/mlflow.db")
    client = store._client
    experiment = client.get_experiment_by_name("training")
    runs = client.search_runs([experiment.experiment_id])
    names = {run.data.tags["mlops.task"] for run in runs}
    assert {"data_validation", "train", "gate_metrics", "gate_overall"} <= names, names
    assert all(run.info.status == "FINISHED" for run in runs)
    assert len({run.data.tags["mlops.pipeline_run_id"] for run in runs}) == 1
    tags = client.get_model_version("credit-default", "1").tags
    assert tags["mlops.gate.metrics.decision"] in ("promote", "reject") and tags["mlops.decision"]
    (gate_run,) = [run for run in runs if run.data.tags["mlops.task"] == "gate_metrics"]
    assert [a.path for a in client.list_artifacts(gate_run.info.run_id, "gate")] == [
        "gate/report"
    ]  # the KFP output file
    events = [(e.action, e.details.get("gate") or e.details.get("alias")) for e in read_events(workspace)]
    assert ("gate.decided", "metrics") in events and ("gate.decided", "overall") in events
    assert ("alias.moved", "challenger") in events
    assert (("alias.moved", "champion") in events) == (decision == "promote")

    logs = list((workspace / "pipeline-runs").glob(".mlflow-server-*.log"))
    assert len(logs) == 1, logs
    assert "POST /mlops-" in logs[0].read_text()  # the tasks' writes went through this run's server
    still_serving = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _serves(pid, f"sqlite:///{workspace}/mlflow.db")
    ]
    assert still_serving == [], "the run left its tracking server running"


def _serves(pid: str, store: str) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"server" in command and store.encode() in command
