"""Encryption, residency and integrity at the storage layer, on a real S3 (Ceph RGW) and on local disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mlops import storage
from mlops.storage import governed_put
from mlops.storage import s3 as s3_store
from mlops.storage_policy import PolicyError, StoragePolicy
from tests.services.plugin import KMS_KEY_ID, S3Service


@pytest.fixture
def s3(rgw: S3Service, monkeypatch: pytest.MonkeyPatch) -> S3Service:
    for name, value in rgw.env.items():
        monkeypatch.setenv(name, value)
    s3_store._bucket_region.cache_clear()
    return rgw


def test_policy_reads_one_variable_per_setting() -> None:
    policy = StoragePolicy.from_env(
        {
            "MLOPS_S3_SSE": "aws:kms",
            "MLOPS_S3_SSE_KMS_KEY_ID": "k1",
            "MLOPS_S3_ALLOWED_REGIONS": "eu-west-1, eu-central-1",
        }
    )
    assert policy.put_arguments() == {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k1"}
    assert policy.s3_allowed_regions == ("eu-west-1", "eu-central-1")
    assert StoragePolicy.from_env({}).put_arguments() == {"ServerSideEncryption": "AES256"}
    assert StoragePolicy.from_env({"MLOPS_S3_SSE": "none"}).put_arguments() == {}


def test_bad_policy_names_the_variable() -> None:
    with pytest.raises(PolicyError, match=r"MLOPS_S3_SSE='aes'"):
        StoragePolicy.from_env({"MLOPS_S3_SSE": "aes"})


def test_region_outside_the_allowed_list_is_refused_by_name() -> None:
    policy = StoragePolicy(s3_allowed_regions=("eu-central-1",))
    policy.check_region("b", "eu-central-1")
    with pytest.raises(PolicyError, match=r"region 'us-east-1'.*MLOPS_S3_ALLOWED_REGIONS \(eu-central-1\)"):
        policy.check_region("b", "us-east-1")


def test_local_write_returns_the_digest_and_verified_reads_catch_a_change(tmp_path: Path) -> None:
    written = storage.write(str(tmp_path / "ref.parquet"), b"reference")
    assert written.sha256 == hashlib.sha256(b"reference").hexdigest()
    assert storage.read_verified(written.uri, written.sha256) == b"reference"
    (tmp_path / "ref.parquet").write_bytes(b"poisoned")
    with pytest.raises(storage.IntegrityError, match=r"ref.parquet: its SHA-256 is [0-9a-f]{64}, but"):
        storage.read_verified(written.uri, written.sha256)


@pytest.mark.parametrize("as_file", [False, True], ids=["bytes", "file"])
def test_s3_objects_are_stored_encrypted_with_their_digest(
    s3: S3Service, tmp_path: Path, as_file: bool
) -> None:
    uri = f"s3://{s3.bucket}/policy/encrypted-{as_file}.bin"
    source = tmp_path / "blob"
    source.write_bytes(b"secret rows" * 1000)
    written = storage.write(uri, source if as_file else source.read_bytes())
    head = s3.client().head_object(Bucket=s3.bucket, Key=f"policy/encrypted-{as_file}.bin")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"] == KMS_KEY_ID
    assert head["Metadata"]["sha256"] == written.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert storage.read_verified(uri, written.sha256) == source.read_bytes()


def test_s3_region_refused_before_any_byte_is_written(s3: S3Service, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLOPS_S3_ALLOWED_REGIONS", "eu-central-1,eu-west-1")
    with pytest.raises(
        PolicyError, match=rf"bucket '{s3.bucket}'.*region 'default'.*MLOPS_S3_ALLOWED_REGIONS"
    ):
        storage.write_bytes(f"s3://{s3.bucket}/residency/rows.parquet", b"rows")
    assert s3.keys("residency/") == []
    monkeypatch.setenv("MLOPS_S3_ALLOWED_REGIONS", "default")  # what this RGW's zonegroup reports
    storage.write_bytes(f"s3://{s3.bucket}/residency/rows.parquet", b"rows")
    assert s3.keys("residency/") == ["residency/rows.parquet"]


def test_encryption_the_store_ignores_is_refused_and_nothing_stays(
    s3: S3Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLOPS_S3_SSE", "AES256")  # RGW 16 accepts the header and stores the object in clear
    with pytest.raises(PolicyError, match=r"reports encryption None, not the requested 'AES256'.*deleted"):
        storage.write_bytes(f"s3://{s3.bucket}/clear/rows.parquet", b"rows")
    assert s3.keys("clear/") == []


def test_s3_verified_read_refuses_a_replaced_object(s3: S3Service) -> None:
    uri = f"s3://{s3.bucket}/policy/model-ref.bin"
    written = storage.write(uri, b"original")
    s3.client().put_object(Bucket=s3.bucket, Key="policy/model-ref.bin", Body=b"swapped")
    with pytest.raises(storage.IntegrityError, match="model-ref.bin: its SHA-256"):
        storage.read_verified(uri, written.sha256)


def test_mlflow_artifacts_on_s3_get_the_same_policy(
    s3: S3Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow

    from mlops.tracking.store import TrackingStore

    monkeypatch.setenv(governed_put.MLFLOW_UPLOAD_ARGS_ENV, "")  # unset for the test, restored afterwards
    store = TrackingStore(f"sqlite:///{tmp_path}/mlflow.db", "sse", "run", f"s3://{s3.bucket}/mlflow-sse")
    with store.task_run("probe"):
        mlflow.log_text("artifact", "probe.txt")
    (key,) = [k for k in s3.keys("mlflow-sse/") if k.endswith("probe.txt")]
    head = s3.client().head_object(Bucket=s3.bucket, Key=key)
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == KMS_KEY_ID

    monkeypatch.setenv("MLOPS_S3_ALLOWED_REGIONS", "eu-central-1")
    with pytest.raises(PolicyError, match=r"region 'default'"), store.task_run("probe"):
        mlflow.log_text("never", "refused.txt")
    assert not [k for k in s3.keys("mlflow-sse/") if k.endswith("refused.txt")]
