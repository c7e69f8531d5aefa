"""The storage layer on a local directory and on a real S3 (Ceph RGW): same calls, same answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlops import storage
from mlops.data.dataset import load_table
from mlops.data.sample_data import SampleDataConfig, write
from mlops.storage import s3_ranged_reader
from tests.services.plugin import S3Service


@pytest.fixture
def s3(rgw: S3Service, monkeypatch: pytest.MonkeyPatch) -> S3Service:
    for name, value in rgw.env.items():
        monkeypatch.setenv(name, value)
    return rgw


@pytest.fixture(params=["local", "file", pytest.param("s3", marks=pytest.mark.remote_tracking)])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh prefix in each store: a directory, the same as a file:// URI, and an RGW bucket prefix."""
    if request.param == "local":
        return str(tmp_path / "store")
    if request.param == "file":
        return (tmp_path / "store").as_uri()
    request.getfixturevalue("s3")
    return f"s3://mlflow/storage-test/{request.node.name.split('[')[0]}"


def test_write_read_exists_list(root: str, tmp_path: Path) -> None:
    assert storage.list_prefix(root) == []
    first = f"{root}/a/one.bin"
    assert not storage.exists(first)
    assert storage.write_bytes(first, b"\x00one") == first
    source = tmp_path / "two.txt"
    source.write_text("two")
    second = storage.write_file(f"{root}/b/two.txt", source)
    assert storage.read_bytes(first) == b"\x00one"
    assert storage.read_bytes(second) == b"two"
    assert storage.exists(first) and storage.exists(second)
    assert storage.list_prefix(root) == [first, second]
    storage.write_bytes(first, b"replaced")
    assert storage.read_bytes(first) == b"replaced"
    assert storage.list_prefix(root) == [first, second]  # overwritten in place, no temporary left over
    storage.delete(first)
    assert not storage.exists(first) and storage.list_prefix(root) == [second]
    storage.delete(first)  # already gone: fine


def test_missing_object_is_not_found(root: str) -> None:
    with pytest.raises(storage.ObjectNotFound, match="nope.csv"):
        storage.read_bytes(f"{root}/nope.csv")


def test_dataset_loads_from_any_store(root: str, tmp_path: Path) -> None:
    local = Path(write(str(tmp_path / "sample.csv"), SampleDataConfig(rows=200, seed=1)))
    uri = storage.write_file(f"{root}/sample.csv", local)
    frame, digest = load_table(uri)
    assert len(frame) == 200
    assert digest == load_table(str(local))[1]


def test_local_write_creates_directories_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "file.parquet"
    storage.write_bytes(str(target), b"x")
    assert [p.name for p in target.parent.iterdir()] == ["file.parquet"]


def test_listing_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(storage.StorageError, match="it is a file, not a directory"):
        storage.list_prefix(str(tmp_path / "f"))


@pytest.mark.parametrize("uri", ["s3://", "s3://bucket-only", "s3://bucket/dir/", "s3:///key"])
def test_malformed_s3_uris(uri: str) -> None:
    with pytest.raises(storage.StorageError, match=r"is not a valid S3 URI; expected s3://bucket/key"):
        storage.read_bytes(uri)


def test_unsupported_scheme_names_the_supported_ones() -> None:
    with pytest.raises(
        storage.StorageError, match=r"gs:// is not supported; use a local path, file:// or s3://"
    ):
        storage.write_bytes("gs://b/k", b"")


def test_s3_without_credentials_names_the_variables(
    s3: S3Service, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(
        storage.StorageError,
        match=r"cannot write s3://mlflow/x: no S3 credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    ):
        storage.write_bytes("s3://mlflow/x", b"x")


def test_s3_with_wrong_credentials_says_refused(s3: S3Service, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "not-a-user")
    with pytest.raises(
        storage.StorageError,
        match=r"cannot read s3://mlflow/x: S3 refused the credentials \(InvalidAccessKeyId\)",
    ):
        storage.read_bytes("s3://mlflow/x")


def test_s3_missing_bucket_is_named(s3: S3Service) -> None:
    with pytest.raises(storage.ObjectNotFound, match=r"bucket 'no-such-bucket' does not exist; create it"):
        storage.write_bytes("s3://no-such-bucket/k", b"x")
    with pytest.raises(storage.ObjectNotFound, match="bucket 'no-such-bucket' does not exist"):
        storage.exists("s3://no-such-bucket/k")


def test_s3_objects_are_real_objects(s3: S3Service) -> None:
    storage.write_bytes("s3://mlflow/real/check.txt", b"hello")
    assert "real/check.txt" in s3.keys("real/")
    head = s3.client().head_object(Bucket="mlflow", Key="real/check.txt")
    assert head["ContentLength"] == 5


def test_open_read_seeks_and_reads_ranges_and_stat_sees_a_new_version(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_ranged_reader, "RANGE_BYTES", 1000)  # several GETs per read on S3
    data = bytes(range(256)) * 20
    uri = storage.write_bytes(f"{root}/ranged.bin", data)
    with storage.open_read(uri) as handle:
        assert handle.read(10) == data[:10]
        handle.seek(-5, 2)
        assert handle.read() == data[-5:]
        handle.seek(1234)
        assert handle.read(3000) == data[1234:4234]
        handle.seek(0)
        assert handle.read() == data
    before = storage.stat(uri)
    assert before.size == len(data)
    storage.write_bytes(uri, data[:100])
    after = storage.stat(uri)
    assert after.size == 100 and (after.version != before.version or not uri.startswith("s3://"))
    with pytest.raises(storage.ObjectNotFound):
        storage.stat(f"{root}/nope.bin")
