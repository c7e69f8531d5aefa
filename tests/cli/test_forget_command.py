"""``mlops forget``: a person's rows leave every store of rows the workspace holds, and the trail still verifies.

The workspace holds what the platform writes (the request log by the server's own writer, the rest laid out
and named as ``mlops feedback``, ``mlops score`` and registration lay them out): a request log with the
subject key column, feedback labels
joined to it by request id, a batch job's parts with their manifests and request-log copy (recorded by a
``batch.scored`` audit record), reference rows among the registry's artifacts and a table under ``data/``.
After the erasure no file anywhere holds the value, neither in its bytes nor in its decoded rows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cli.main import main
from components.batch_score.batch_finish import AUDIT_ACTION as BATCH_SCORED
from components.batch_score.chunk_writer import ChunkRecord, read_record, write_record
from mlops.data.features import FeatureSpec
from mlops.data.schema_file import SchemaFile
from mlops.governance import audit
from mlops.governance.erasure import ERASED_ACTION, SALT_FILE, is_parquet_bytes, subject_hash
from mlops.monitoring.feedback import store_labels
from serving.request_log import RequestLogger
from serving.request_log_blocks import Block

WHO = "C-7f3a9e"
OTHERS = ["C-1000", "C-2000", "C-3000"]
MODEL = "credit-default"
JOB = "0123456789abcdef"


def schema_file(path: Path, subject_key: str = "customer_id") -> Path:
    schema = SchemaFile(
        label="default", numeric_features=("age",), ignored_columns=("customer_id",), subject_key=subject_key
    )
    path.write_text(schema.to_yaml())
    return path


def request_log(root: Path, subjects: list[str], ids: list[str]) -> Path:
    """One file written by the server's own request-log writer, for a model whose schema names the subject key:
    one-row requests, each carrying its customer_id beside the features."""
    spec = FeatureSpec(numeric=("age",), medians=(0.0,), means=(0.0,), stds=(1.0,), subject="customer_id")
    block = Block("1", spec, len(subjects))
    for i, (who, request_id) in enumerate(zip(subjects, ids, strict=True)):
        x = np.asarray([[30.0 + i]], dtype=np.float32)
        block.add(
            x, np.asarray([0.1], dtype=np.float32), 1_790_000_000_000_000 + i, request_id, subjects=[who]
        )
    (written,) = RequestLogger(str(root), MODEL, 1.0, 60, 10**9).write([block])
    return Path(written)


def batch_job(workspace: Path, output: Path) -> None:
    """A finished batch job: a part (id column = the subject key), its manifest, its request-log copy."""
    name = "day=1/a.part-00000"
    people = [OTHERS[0], WHO, OTHERS[1], WHO]
    part = output / f"{name}.parquet"
    part.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {"customer_id": people, "score": [0.2, 0.7, 0.4, 0.9], "predicted_class": ["0", "1", "0", "1"]}
    ).to_parquet(part, index=False)
    copy = (
        output / "_request_log" / MODEL / f"requests-20261101T000000000000Z-v1-batch-{JOB}-abcd1234.parquet"
    )
    copy.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "age": [40.0, 41.0, 42.0, 43.0],
            "prediction": [0.2, 0.7, 0.4, 0.9],
            "model_version": ["1"] * 4,
            "request_id": [f"batch-{JOB}/{name}"] * 4,
            "request_row": pd.Series([0, 1, 2, 3], dtype="int32"),
        }
    ).to_parquet(copy, index=False)
    record = ChunkRecord(
        JOB,
        "in.csv",
        "fp",
        0,
        0,
        4,
        4,
        0,
        str(part),
        hashlib.sha256(part.read_bytes()).hexdigest(),
        request_log_uri=str(copy),
    )
    write_record(str(output), name, record)
    details = {"output_uri": str(output), "request_log_uri": str(output / "_request_log"), "rows_scored": 4}
    audit.record(BATCH_SCORED, f"{MODEL}/1", details, workspace_root=workspace)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    logs = root / "request-logs"
    request_log(logs, [OTHERS[0], WHO, OTHERS[1]], ["r1", "r2", "r3"])
    request_log(logs, [OTHERS[2]], ["r4"])
    labels = tmp_path / "labels.csv"
    pd.DataFrame(
        {
            "request_id": ["r1", "r2", "r4", f"batch-{JOB}/day=1/a.part-00000"],
            "request_row": [0, 0, 0, 1],
            "label": [0, 1, 0, 1],
        }
    ).to_csv(labels, index=False)
    store_labels(str(labels), str(logs), MODEL)
    batch_job(root, tmp_path / "batch-out")
    reference = root / "artifacts" / "1" / "0af3" / "artifacts" / "explain_reference.parquet"
    reference.parent.mkdir(parents=True)
    pd.DataFrame({"age": [50.0, 51.0], "customer_id": [WHO, OTHERS[0]]}).to_parquet(reference, index=False)
    cached = root / "serving-cache" / MODEL / "1" / "explain_reference.parquet"
    cached.parent.mkdir(parents=True)
    pd.DataFrame({"age": [50.0], "customer_id": [WHO]}).to_parquet(cached, index=False)
    (root / "data").mkdir()
    (root / "data" / "train.csv").write_text(f"age,customer_id,default\n33,{OTHERS[1]},0\n44,{WHO},1\n")
    # A pipeline step's Dataset artifact, as KFP names it: Parquet bytes, no suffix.
    dataset = root / "pipeline-runs" / "training-2026" / "validate-data" / "dataset"
    dataset.parent.mkdir(parents=True)
    pd.DataFrame({"age": [44.0, 45.0], "customer_id": [WHO, OTHERS[2]]}).to_parquet(dataset, index=False)
    return root


def holding(folder: Path, value: str) -> list[str]:
    """Every file under ``folder`` whose bytes, or whose decoded Parquet rows, hold ``value``."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if value.encode() in path.read_bytes():
            found.append(str(path))
        elif is_parquet_bytes(path) and value in json.dumps(pq.read_table(path).to_pylist(), default=str):
            found.append(f"{path} (decoded)")
    return found


def forget(workspace: Path, schema: Path, key: str, *extra: str) -> int:
    return main(["--workspace", str(workspace), "forget", "--key", key, "--schema", str(schema), *extra])


def test_nothing_of_the_person_is_left_and_the_trail_verifies(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = schema_file(tmp_path / "credit.schema.yaml")
    batch = tmp_path / "batch-out"
    assert holding(workspace, WHO) and holding(batch, WHO)  # the person is everywhere to begin with
    assert forget(workspace, schema, f"customer_id={WHO}") == 0
    out = capsys.readouterr().out
    assert holding(workspace, WHO) == [] and holding(batch, WHO) == []
    assert "status            erased" in out and "rows removed      11" in out
    assert "request log       2 file(s) searched by customer_id, 1 row(s) removed from 1 file(s)" in out
    assert "batch request-log copies 1 file(s)" in out and "feedback labels   1 file(s)" in out
    # everyone else is still there
    for other in OTHERS:
        assert holding(workspace, other) or holding(batch, other)
    labels = pq.read_table(next((workspace / "request-logs" / MODEL / "labels").glob("*.parquet")))
    assert sorted(labels.column("request_id").to_pylist()) == [
        "r1",
        "r4",
    ]  # r2 and the batch row 1 were theirs
    copy = pq.read_table(next((batch / "_request_log").rglob("*.parquet")))
    assert copy.column("request_row").to_pylist() == [0, 2]
    # the batch part's manifest records the erased part: a re-run trusts it instead of scoring the person again
    record = read_record(str(batch / "_manifest" / "day=1" / "a.part-00000.json"))
    assert record is not None and record.rows_scored == 2
    assert (
        record.part_sha256
        == hashlib.sha256((batch / "day=1" / "a.part-00000.parquet").read_bytes()).hexdigest()
    )

    assert main(["--workspace", str(workspace), "audit", "verify"]) == 0
    event = audit.read_events(workspace)[-1]
    salt = (workspace / SALT_FILE).read_bytes()
    assert event.action == ERASED_ACTION and event.details["subject_hash"] == subject_hash(
        salt, "customer_id", WHO
    )
    stores = event.details["stores"]
    assert {k: v["rows_removed"] for k, v in stores.items()} == {
        "request log": 1,
        "batch request-log copies": 2,
        "feedback labels": 2,
        "batch outputs": 2,
        "reference rows": 2,
        "other workspace tables": 2,
        "other workspace files (bytes)": 0,
    }
    assert WHO not in (workspace / audit.AUDIT_FILE).read_text()

    # the same request again: searched everywhere, nothing left
    assert forget(workspace, schema, f"customer_id={WHO}") == 0
    out = capsys.readouterr().out
    assert "status            nothing found" in out and "rows removed      0" in out
    assert main(["--workspace", str(workspace), "audit", "verify"]) == 0
    later = audit.read_events(workspace)[-1]
    assert later.details["subject_hash"] == event.details["subject_hash"]  # the same person, matched


def test_a_column_other_than_the_subject_key_is_refused(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = schema_file(tmp_path / "credit.schema.yaml")
    assert forget(workspace, schema, "age=44") == 2
    assert "the schema's subject_key is 'customer_id'" in capsys.readouterr().err
    assert holding(workspace, WHO) and not any(
        e.action == ERASED_ACTION for e in audit.read_events(workspace)
    )


def test_a_store_that_cannot_be_searched_makes_the_erasure_not_conclusive(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = schema_file(tmp_path / "credit.schema.yaml")
    blind = tmp_path / "exports"
    blind.mkdir()
    pd.DataFrame({"age": [44.0], "note": ["no key here"]}).to_csv(blind / "export.csv", index=False)
    assert forget(workspace, schema, f"customer_id={WHO}", "--rows", str(blind)) == 1
    out = capsys.readouterr().out
    assert f"  - cannot be searched by customer_id: {blind / 'export.csv'}" in out
    assert "status            not conclusive" in out
    assert holding(workspace, WHO) == []  # what could be erased was
    event = audit.read_events(workspace)[-1]
    assert event.details["status"] == "not conclusive"
    assert event.details["stores"]["named stores (--rows)"]["unsearchable"] == [str(blind / "export.csv")]
    assert main(["--workspace", str(workspace), "audit", "verify"]) == 0


def test_a_file_that_is_not_rows_but_holds_the_value_is_named(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = schema_file(tmp_path / "credit.schema.yaml")
    log = workspace / "server-8080.log"
    log.write_text(f"refused instance 0: customer_id {WHO} has a bad age\n")
    assert forget(workspace, schema, f"customer_id={WHO}") == 1
    out = capsys.readouterr().out
    assert (
        f"  - NOT erased: {log}: holds the value's bytes and is not a table of rows; erase it by hand" in out
    )
    assert "status            not conclusive" in out and log.read_text().count(WHO) == 1
    event = audit.read_events(workspace)[-1]
    assert event.details["stores"]["other workspace files (bytes)"]["refused"] == [
        f"{log}: holds the value's bytes and is not a table of rows; erase it by hand"
    ]
    assert WHO not in (workspace / audit.AUDIT_FILE).read_text()
