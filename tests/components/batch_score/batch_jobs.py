"""A local batch-scoring job run end to end (plan, every shard, finish) and its scores read back, for
test_batch_outputs.py and test_batch_refusals_and_reruns.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from components.batch_score.batch_finish import JobSummary, finish_job
from components.batch_score.batch_plan import plan_job
from components.batch_score.batch_shard import score_shard
from components.batch_score.config import ScoreSettings
from tests.support.monitoring import MODEL, Monitored


def run(registered: Monitored, cache: Path, **values: object) -> JobSummary:
    settings = ScoreSettings.model_validate({"model": f"{MODEL}@champion", **values})
    plan = plan_job(settings, registered.store, cache)
    results = [score_shard(plan, shard, registered.store, cache) for shard in range(len(plan.shards))]
    return finish_job(plan, results, workspace_root=registered.workspace.root)


def scores(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out).sort_values("row").reset_index(drop=True)


def expected(model: Monitored, frame: pd.DataFrame) -> np.ndarray:
    return model.scorer.predict_proba(frame)
