"""Governance end to end through ``mlops``: train → promote → retrain → promote, then lineage, history,
the audit trail's verification, and a planted secret searched for everywhere the platform writes.

The first of the two runs is also where `mlops run training`'s console output is checked (what it prints
and where everything is): it is that command as a user runs it, and a run costs minutes.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.main import main
from mlops.governance.audit import read_events
from mlops.tracking.store import TrackingStore

# Both tests read one module fixture: on one xdist worker it is made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("governance-two-promotions")]

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
MLOPS = shutil.which("mlops", path=str(Path(sys.executable).parent))


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One ``mlops`` console-script command in its own process, as a user runs it (no state left by tests)."""
    assert MLOPS, "the mlops console script is not installed in this environment"
    done = subprocess.run(
        [MLOPS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env if env is not None else os.environ.copy(),
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, (
        f"mlops {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@dataclass(frozen=True)
class TwoPromotions:
    """Two `mlops run training` runs in one workspace, by the actor ci-bot, with secrets in the environment."""

    workspace: Path
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def two_promotions(tmp_path_factory: pytest.TempPathFactory) -> TwoPromotions:
    root = tmp_path_factory.mktemp("governance")
    ws = root / "ws"
    unset = ("MLOPS_AUDIT_URI", "MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY")
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env["MLOPS_ACTOR"] = "ci-bot"
    # Secrets a real deployment would have in its environment: none may be written down anywhere.
    env["AWS_SECRET_ACCESS_KEY"] = env["MLOPS_DB_PASSWORD"] = PLANTED
    first = run_cli(
        "--workspace", str(ws), "run", "training", *SMALL, "--set", "registration.git_commit=aaa111",
        cwd=root, env=env,
    )  # fmt: skip
    second = run_cli(
        "--workspace", str(ws), "run", "training", *SMALL, "--set", "registration.git_commit=bbb222",
        "--set", "gate.max_auc_regression=0.05",
        cwd=root, env=env,
    )  # fmt: skip
    return TwoPromotions(ws, first, second)


def test_run_training_prints_where_everything_is(two_promotions: TwoPromotions) -> None:
    ws, out = two_promotions.workspace, two_promotions.first.stdout
    lines = out.splitlines()
    assert len(lines) <= 40, out  # no library chatter: a line per step and the summary
    assert "KFP Executor" not in out and "great_expectations" not in out.lower()
    assert "model             credit-default version 1 (aliases: challenger" in out
    assert any(line.startswith("  test AUC          0.") for line in lines), out
    report = next(line for line in lines if "data report " in line).split()[-1]
    assert Path(report).is_file() and "<html" in Path(report).read_text().lower()
    steps = {line.split()[1]: line for line in lines if line.startswith("  ok ")}
    for task in ("validate-data", "train-model", "evaluate-model", "register-model", "metrics-gate"):
        assert task in steps, out
    assert "rows validated" in steps["validate-data"] and "validation AUC 0." in steps["train-model"]
    assert "test AUC 0." in steps["evaluate-model"] and "version 1" in steps["register-model"]
    # Each decision reason on its own short line.
    assert all(len(line) <= 160 for line in lines if line.startswith("    - "))
    run_dir = Path(next(line for line in lines if "pipeline run " in line).split()[-1])
    for task in steps:
        assert "KFP Executor" in (run_dir / "logs" / f"{task}.log").read_text()

    # The --set values reached the tasks: the train task logs its settings by address.
    client = TrackingStore.from_uri(f"sqlite:///{ws}/mlflow.db")._client
    experiment = client.get_experiment_by_name("training")
    assert experiment is not None
    first_run_id = client.get_model_version("credit-default", "1").tags["mlops.kfp_run_id"]
    (train_run,) = client.search_runs(
        [experiment.experiment_id],
        f"tags.`mlops.task` = 'train' and tags.`mlops.pipeline_run_id` = '{first_run_id}'",
    )
    assert train_run.data.params["train.epochs"] == "2"
    assert train_run.data.params["train.learning_rate"] == "0.01"

    listed = run_cli("--workspace", str(ws), "runs", cwd=ws.parent)
    row = next(line for line in listed.stdout.splitlines() if line.startswith(run_dir.name))
    assert row.split()[3] == "succeeded" and "credit-default v1" in row
    shown = run_cli("--workspace", str(ws), "runs", "show", run_dir.name, cwd=ws.parent)
    assert "succeeded" in shown.stdout.splitlines()[0]
    assert sum(line.startswith("  ok ") for line in shown.stdout.splitlines()) == len(steps)


def test_lineage_history_and_audit_after_two_promotions(
    two_promotions: TwoPromotions, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = two_promotions.workspace
    for name in ("MLOPS_AUDIT_URI", "MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLOPS_ACTOR", "ci-bot")
    first, second = two_promotions.first, two_promotions.second
    run_output = first.stdout + first.stderr + second.stdout + second.stderr

    client = TrackingStore.from_uri(f"sqlite:///{ws}/mlflow.db")._client
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

    # An edit of the trail is caught and named (then undone: the workspace is the module's).
    trail = ws / "audit.jsonl"
    recorded = trail.read_bytes()
    edited = recorded.replace(b'"reason": "every gate decided promote"', b'"reason": "manual"', 1)
    assert edited != recorded
    try:
        trail.write_bytes(edited)
        assert main(["--workspace", str(ws), "audit", "verify"]) == 1
        assert "was edited" in capfd.readouterr().out
    finally:
        trail.write_bytes(recorded)
