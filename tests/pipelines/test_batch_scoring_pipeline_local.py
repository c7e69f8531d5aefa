"""``mlops run batch_scoring`` under KFP's local runner: plan → two shards (a real ``dsl.ParallelFor``) → finish."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli.main import main
from components.batch_score.chunk_writer import JOB_FILE
from mlops.governance import audit
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("batch-pipeline"))


def test_the_pipeline_scores_every_file_across_two_shards(
    model: Monitored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "in"
    (data / "day=1").mkdir(parents=True)
    (data / "day=2").mkdir()
    first, second = traffic(180, seed=41), traffic(120, seed=42)
    first.to_parquet(data / "day=1" / "a.parquet")
    second.to_csv(data / "day=2" / "b.csv", index=False)
    out = tmp_path / "out"
    ws = model.workspace
    original_print = builtins.print
    code = main(
        [
            "--workspace",
            str(ws.root),
            "run",
            "batch_scoring",
            f"--score.model={MODEL}@champion",
            f"--score.data_uri={data}",
            f"--score.output_uri={out}",
            "--set=score.chunk_rows=100",
            "--set=score.shards=2",
            f"--set=tracking.tracking_uri={ws.tracking_uri}",
            f"--set=tracking.artifact_root={ws.artifact_root}",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    # kfp.local's threads swap builtins.print to indent task output; the run must leave the original.
    assert builtins.print is original_print
    assert "Batch scoring finished: 300 row(s) scored" in printed.out
    steps = [line.split()[:2] for line in printed.out.splitlines() if line.strip().startswith("ok ")]
    assert steps.count(["ok", "score-batch-shard"]) == 2  # the ParallelFor fanned out to both shards
    job = json.loads((out / JOB_FILE).read_text())
    assert (job["files"], job["rows_read"], job["rows_scored"], job["chunks_written"]) == (2, 300, 300, 4)
    scorer = model.scorer
    a = pd.read_parquet(out / "day=1").sort_values("row")
    b = pd.read_parquet(out / "day=2").sort_values("row")
    np.testing.assert_allclose(a["score"], scorer.predict_proba(first), rtol=1e-5)
    np.testing.assert_allclose(b["score"], scorer.predict_proba(second), rtol=1e-5)
    event = audit.read_events(ws.root)[-1]
    assert event.action == "batch.scored" and event.details["rows_scored"] == 300
    assert event.links["pipeline_run_id"]
