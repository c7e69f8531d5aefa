"""Batch scoring of an ``s3://`` prefix on a real S3 (Ceph RGW): read by ranged GETs, never whole."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from components.batch_score.batch_finish import JobSummary, finish_job
from components.batch_score.batch_plan import plan_job
from components.batch_score.batch_shard import score_shard
from components.batch_score.config import ScoreSettings
from mlops.storage import s3, s3_ranged_reader
from tests.services.plugin import S3Service
from tests.support.monitoring import MODEL, Monitored, monitored_model, traffic

pytestmark = pytest.mark.remote_tracking

RANGE = 16 << 10


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Monitored:
    return monitored_model(tmp_path_factory.mktemp("batch-s3"))


@pytest.fixture
def gets(rgw: S3Service, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The S3 endpoint and credentials only (the model's registry and audit trail stay local); every
    GetObject call is recorded."""
    for name in (
        "MLFLOW_S3_ENDPOINT_URL",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.setenv(name, rgw.env[name])
    monkeypatch.setattr(s3_ranged_reader, "RANGE_BYTES", RANGE)
    calls: list[dict[str, Any]] = []
    real = s3.s3_client

    class Recording:
        def __init__(self, client: Any):
            self.client = client

        def get_object(self, **arguments: Any) -> Any:
            calls.append(arguments)
            return self.client.get_object(**arguments)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.client, name)

    monkeypatch.setattr(s3, "s3_client", lambda: Recording(real()))
    return calls


def put(rgw: S3Service, key: str, body: bytes) -> str:
    rgw.client().put_object(Bucket=rgw.bucket, Key=key, Body=body)
    return f"s3://{rgw.bucket}/{key}"


def run(model: Monitored, cache: Path, **values: object) -> JobSummary:
    settings = ScoreSettings.model_validate({"model": f"{MODEL}@champion", **values})
    plan = plan_job(settings, model.store, cache)
    results = [score_shard(plan, s, model.store, cache) for s in range(len(plan.shards))]
    return finish_job(plan, results, workspace_root=model.workspace.root)


def test_an_s3_prefix_is_read_in_ranges_and_resumed_by_etag(
    model: Monitored, rgw: S3Service, gets: list[dict[str, Any]], tmp_path: Path
) -> None:
    first, second = traffic(3000, seed=61), traffic(400, seed=62)
    parquet = io.BytesIO()
    first.to_parquet(parquet, row_group_size=500)
    prefix = f"batch-s3/{tmp_path.name}"
    put(rgw, f"{prefix}/day=1/a.parquet", parquet.getvalue())
    put(rgw, f"{prefix}/day=2/b.csv", second.to_csv(index=False).encode())
    assert len(parquet.getvalue()) > 4 * RANGE  # so that reading it whole would show
    values = {
        "data_uri": f"s3://{rgw.bucket}/{prefix}",
        "output_uri": str(tmp_path / "out"),
        "chunk_rows": 700,
    }

    summary = run(model, tmp_path / "cache", **values)
    assert (summary.files, summary.rows_scored, summary.chunks_written) == (2, 3400, 5 + 1)
    assert gets and all("Range" in call and "IfMatch" in call for call in gets)
    sizes = [int(end) - int(start) + 1 for start, end in (c["Range"][6:].split("-") for c in gets)]
    assert max(sizes) <= RANGE
    stored = len(parquet.getvalue()) + len(second.to_csv(index=False).encode())
    # Read once to score and once to hash, plus Parquet's 64 KiB footer reads (plan, columns, reader) and
    # the CSV's header: much of these small files, nothing on real ones.
    assert sum(sizes) <= 2 * stored + 4 * (64 << 10)
    assert {"bytes=0-3"} <= {c["Range"] for c in gets}  # the format check fetches 4 bytes, not a buffer
    scorer = model.scorer
    a = pd.read_parquet(tmp_path / "out" / "day=1").sort_values("row")
    b = pd.read_parquet(tmp_path / "out" / "day=2").sort_values("row")
    np.testing.assert_allclose(a["score"], scorer.predict_proba(first), rtol=1e-5)
    np.testing.assert_allclose(b["score"], scorer.predict_proba(second), rtol=1e-5)

    again = run(model, tmp_path / "cache", **values)
    assert (again.chunks_written, again.chunks_skipped) == (0, 6)
    put(rgw, f"{prefix}/day=2/b.csv", traffic(400, seed=63).to_csv(index=False).encode())  # a new ETag
    changed = run(model, tmp_path / "cache", **values)
    assert (changed.chunks_written, changed.chunks_skipped) == (1, 5)
    assert changed.input_digest != summary.input_digest
