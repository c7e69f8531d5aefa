"""Erasure on a real S3 (Ceph RGW): every earlier version of a rewritten object goes too, and an object S3
Object Lock keeps is named with its date, left as it is, and makes the erasure not conclusive."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from cli.main import main
from mlops import storage
from mlops.data.schema_file import SchemaFile
from mlops.governance import audit
from mlops.governance.erasure import RowStore, erase, erase_store
from mlops.storage import object_lock
from mlops.storage import s3 as s3_store
from tests.services.plugin import S3Service

WHO = "C-5eed-42"


@pytest.fixture
def s3(rgw: S3Service, monkeypatch: pytest.MonkeyPatch) -> S3Service:
    for name, value in rgw.env.items():
        monkeypatch.setenv(name, value)
    s3_store._bucket_region.cache_clear()
    return rgw


def rows(*people: str) -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame({"customer_id": list(people), "age": [30.0 + i for i in range(len(people))]}).to_parquet(
        buffer, index=False
    )
    return buffer.getvalue()


def bucket(s3: S3Service, name: str, locked: bool = False) -> str:
    client = s3.client()
    if locked:
        client.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
        client.put_object_lock_configuration(
            Bucket=name,
            ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}},
            },
        )
    else:
        client.create_bucket(Bucket=name)
        client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def every_version(s3: S3Service, name: str, key: str) -> list[bytes]:
    client = s3.client()
    versions = client.list_object_versions(Bucket=name, Prefix=key).get("Versions", [])
    return [
        client.get_object(Bucket=name, Key=key, VersionId=v["VersionId"])["Body"].read() for v in versions
    ]


def test_a_rewritten_object_keeps_no_earlier_version_holding_the_person(s3: S3Service) -> None:
    name = bucket(s3, "erasure-versioned")
    uri = f"s3://{name}/logs/model/requests-1.parquet"
    storage.write_bytes(uri, rows("C-1", WHO))
    storage.write_bytes(uri, rows("C-1", WHO, "C-2"))  # a second version, holding them too
    outcome = erase_store(RowStore("log", (uri,)), "customer_id", WHO, None)
    assert outcome.rows_removed == 1 and outcome.conclusive and outcome.rewritten == [uri]
    (only,) = every_version(s3, name, "logs/model/requests-1.parquet")
    assert WHO.encode() not in only
    assert pq.read_table(io.BytesIO(only)).column("customer_id").to_pylist() == ["C-1", "C-2"]
    head = s3.client().head_object(Bucket=name, Key="logs/model/requests-1.parquet")
    assert head["ServerSideEncryption"] == "aws:kms"  # the rewrite went through the storage policy


def test_deleting_an_object_removes_every_version(s3: S3Service) -> None:
    name = bucket(s3, "erasure-deleted")
    uri = f"s3://{name}/old.parquet"
    storage.write_bytes(uri, rows(WHO))
    storage.write_bytes(uri, rows(WHO, "C-1"))
    storage.delete(uri)
    assert object_lock.purge_versions(uri, keep_current=False) == []
    listing = s3.client().list_object_versions(Bucket=name, Prefix="old.parquet")
    assert listing.get("Versions", []) == [] and listing.get("DeleteMarkers", []) == []


def test_an_object_lock_object_is_named_with_its_date_and_left_as_it_is(s3: S3Service) -> None:
    name = bucket(s3, "erasure-locked", locked=True)
    mine, theirs = f"s3://{name}/out/a.parquet", f"s3://{name}/out/b.parquet"
    storage.write_bytes(mine, rows("C-1", WHO))
    storage.write_bytes(theirs, rows("C-2"))
    before = storage.read_bytes(mine)
    result = erase([RowStore("batch outputs", (mine, theirs))], "customer_id", WHO, b"s" * 32)
    (outcome,) = result.stores
    (lock,) = outcome.locked  # only the object holding the person: the other one needs no erasure
    assert lock.uri == mine and lock.mode == "GOVERNANCE" and not lock.legal_hold
    until = datetime.fromisoformat(lock.until)
    assert timedelta(hours=23) < until - datetime.now(UTC) <= timedelta(days=1, minutes=5)
    assert storage.read_bytes(mine) == before and outcome.rows_removed == 0
    assert result.status == "not conclusive"
    assert result.details()["stores"]["batch outputs"]["locked"] == [
        {"uri": mine, "mode": "GOVERNANCE", "until": lock.until, "legal_hold": False}
    ]


def test_forget_names_the_locked_object_and_exits_one(
    s3: S3Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = bucket(s3, "erasure-locked-cli", locked=True)
    storage.write_bytes(f"s3://{name}/exports/rows.parquet", rows(WHO))
    storage.write_bytes(f"s3://{name}/exports/open.parquet", rows("C-1"))
    schema = tmp_path / "s.schema.yaml"
    schema.write_text(SchemaFile(label="y", numeric_features=("age",), subject_key="customer_id").to_yaml())
    workspace = tmp_path / "ws"
    argv = ["--workspace", str(workspace), "forget", "--key", f"customer_id={WHO}", "--schema", str(schema)]
    assert main([*argv, "--rows", f"s3://{name}/exports"]) == 1
    out = capsys.readouterr().out
    assert "  - NOT erasable, kept by S3 Object Lock GOVERNANCE until 20" in out
    assert out.rstrip().endswith("status            not conclusive")
    assert f"s3://{name}/exports/rows.parquet" in out and "open.parquet" not in out
    assert audit.verify(workspace).intact
