"""Governance end to end through ``mlops``: train → promote → retrain → promote, then lineage, history,
the audit trail's verification, and a planted secret searched for everywhere the platform writes."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from mlops.governance.audit import read_events
from mlops.tracking.store import TrackingStore

pytestmark = pytest.mark.slow

PLANTED = "planted-S3cr3t-7f3a9c"
SMALL = [  # 2 epochs that still clear both gates (measured: test AUC 0.80, behavioural tests pass)
    *(
        "--set",
        "data.sample.rows=3000",
        "--set",
        "train.epochs=2",
        "--set",
        "train.learning_rate=0.01",
        "--set",
        "train.batch_size=64",
    ),
    *("--set", "model_validation.fairness.gate_on_intervals=false"),
]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """One ``mlops`` command in its own process, as a user runs it (no state left by earlier tests)."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, (
        f"mlops {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def test_lineage_history_and_audit_after_two_promotions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    for name in ("MLOPS_AUDIT_URI", "MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLOPS_ACTOR", "ci-bot")
    # Secrets a real deployment would have in its environment: none may be written down anywhere.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PLANTED)
    monkeypatch.setenv("MLOPS_DB_PASSWORD", PLANTED)

    first = run_cli(
        "--workspace", str(ws), "run", "training", *SMALL, "--set", "registration.git_commit=aaa111"
    )
    second = run_cli(
        "--workspace",
        str(ws),
        "run",
        "training",
        *SMALL,
        "--set",
        "registration.git_commit=bbb222",
        "--set",
        "gate.max_auc_regression=0.05",
    )
    run_output = first.stdout + first.stderr + second.stdout + second.stderr

    client = TrackingStore.from_uri(f"sqlite:///{ws}/mlflow.db").client
    champion = client.get_model_version_by_alias("credit-default", "champion")
    assert str(champion.version) == "2", champion.tags.get("mlops.reason")
    tags = champion.tags

    assert main(["--workspace", str(ws), "lineage", "credit-default@champion"]) == 0
    lineage = capfd.readouterr().out
    assert lineage.splitlines()[0] == "credit-default@champion = version 2"
    for expected in (
        f"dataset digest     {tags['mlops.dataset_digest']}",
        f"expectation suite  version {tags['mlops.suite_version']}",
        "code commit        bbb222",
        f"pipeline run       {tags['mlops.kfp_run_id']}",
        f"signed             key {tags['mlops.signing_key_id']}",
        "by ci-bot",
    ):
        assert expected in lineage, lineage
    assert re.search(r"metrics\s+promote", lineage) and re.search(r"overall\s+promote", lineage), lineage
    assert "data validated" in lineage and "passed" in lineage

    assert main(["--workspace", str(ws), "history", "credit-default"]) == 0
    rows = [line.split() for line in capfd.readouterr().out.splitlines()[1:]]
    champion_rows = [row for row in rows if row[0] == "champion"]
    assert [row[1] for row in champion_rows] == ["1", "2"]
    assert champion_rows[0][3] == champion_rows[1][2]  # version 1 held it until version 2 took over
    assert champion_rows[1][3] == "now"
    assert "every gate decided promote" in " ".join(champion_rows[1])
    assert [row[1] for row in rows if row[0] == "challenger"] == ["1", "2"]

    events = read_events(ws)
    actions = [e.action for e in events]
    for action in ("data.validated", "model.registered", "model.signed", "gate.decided", "alias.moved"):
        assert action in actions
    assert all(e.actor == "ci-bot" for e in events)
    assert main(["--workspace", str(ws), "audit", "verify"]) == 0

    # The planted secret is nowhere: console, every file in the workspace (reports, the audit trail,
    # pipeline-run logs, keys, the MLflow store), nor any MLflow param or tag.
    assert PLANTED not in run_output
    leaks = [p for p in ws.rglob("*") if p.is_file() and PLANTED.encode() in p.read_bytes()]
    assert leaks == []
    experiment = client.get_experiment_by_name("training")
    assert experiment is not None
    for run in client.search_runs([experiment.experiment_id]):
        assert PLANTED not in str(run.data.params) + str(run.data.tags)
    for version in client.search_model_versions("name='credit-default'"):
        assert PLANTED not in str(version.tags)
    with sqlite3.connect(ws / "mlflow.db") as db:  # every table, not only what the API shows
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            assert PLANTED not in str(db.execute(f'SELECT * FROM "{table}"').fetchall()), table

    # An edit of the trail is caught and named.
    trail = ws / "audit.jsonl"
    trail.write_text(
        trail.read_text().replace('"reason": "every gate decided promote"', '"reason": "manual"', 1)
    )
    assert main(["--workspace", str(ws), "audit", "verify"]) == 1
    assert "was edited" in capfd.readouterr().out
