"""One storage layer for local paths, ``file://`` URIs and ``s3://bucket/key`` objects.

Datasets, expectation suites and request logs are read and written through these
few functions, so an S3-compatible store (AWS, Ceph RGW, MinIO) and a local disk
behave the same and every failure names the URI and the fix. The S3 client is
built from the environment only (``MLFLOW_S3_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` or a profile/role), the same
variables MLflow's own S3 artifact store reads; no credential ever appears in code
or in a pipeline parameter.

Every write goes through :func:`mlops.storage.governed_put.put` (one function for bytes and
files), the single place where storage policy applies (:mod:`mlops.storage_policy`); the
SHA-256 it stores with the bytes is returned by :func:`write`. Reads that cross a trust
boundary use :func:`read_verified` with the digest recorded at write time.

Here: the calls every caller makes, each for a local path and for S3. Beside them: what a URI
names and the errors (:mod:`~mlops.storage.location`), the S3 client and its error messages
(:mod:`~mlops.storage.s3`), ranged reads of an object (:mod:`~mlops.storage.s3_ranged_reader`),
the governed write (:mod:`~mlops.storage.governed_put`), and Object Lock and versions
(:mod:`~mlops.storage.object_lock`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from mlops.storage import s3
from mlops.storage.governed_put import put, put_local
from mlops.storage.location import AlreadyExists, IntegrityError, ObjectNotFound, StorageError, parse
from mlops.storage.s3_ranged_reader import RANGE_BYTES, open_object


@contextmanager
def _local_read(path: Path) -> Iterator[None]:
    """A local read's OS errors as storage errors: a missing file is :class:`ObjectNotFound`, any other
    names the path and why."""
    try:
        yield
    except FileNotFoundError as exc:
        raise ObjectNotFound(f"{path} does not exist or is not a file") from exc
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc


@dataclass(frozen=True)
class Written:
    """Where bytes were stored and their SHA-256 (record it to check later reads)."""

    uri: str
    sha256: str


def read_bytes(uri: str) -> bytes:
    """The whole file or object."""
    location = parse(uri)
    if location.path is not None:
        if not location.path.is_file():
            raise ObjectNotFound(f"{location.path} does not exist or is not a file")
        with _local_read(location.path):
            return location.path.read_bytes()
    with s3.failing_as("read", location):
        body: bytes = s3.s3_client().get_object(Bucket=location.bucket, Key=location.key)["Body"].read()
    return body


@dataclass(frozen=True)
class Stat:
    """Size and version of a file or object, without reading it."""

    size: int
    version: str
    """Modification time (ns) of a local file, the ETag of an object: it changes when the bytes do."""


def stat(uri: str) -> Stat:
    location = parse(uri)
    if location.path is not None:
        with _local_read(location.path):
            info = location.path.stat()
        return Stat(info.st_size, str(info.st_mtime_ns))
    with s3.failing_as("read", location):
        head = s3.s3_client().head_object(Bucket=location.bucket, Key=location.key)
    return Stat(int(head["ContentLength"]), str(head.get("ETag", "")))


def open_read(uri: str, read_ahead: int = RANGE_BYTES) -> BinaryIO:
    """A seekable binary reader of the file or object, for streaming or random access (Parquet reads
    its footer, then only the column chunks asked for). An S3 object is read by ranged GETs of at most
    :data:`~mlops.storage.s3_ranged_reader.RANGE_BYTES`, each pinned to the ETag seen when it was opened (a changed object fails the
    read instead of mixing two versions), so memory is bounded by what the caller reads at a time.
    A small read fetches ``read_ahead`` bytes (pass the size of a header you only want to look at)."""
    location = parse(uri)
    if location.path is not None:
        with _local_read(location.path):
            return location.path.open("rb")
    info = stat(uri)
    return open_object(location, info.size, info.version, read_ahead)


def read_verified(uri: str, sha256: str) -> bytes:
    """The bytes at ``uri``, only if their SHA-256 is ``sha256`` (the digest recorded when written)."""
    data = read_bytes(uri)
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256.lower():
        raise IntegrityError(
            f"refusing {uri}: its SHA-256 is {actual}, but {sha256} was recorded when it was written; "
            "it was changed or replaced since. Restore the original or re-create it through the pipeline"
        )
    return data


def write(uri: str, body: bytes | Path) -> Written:
    """Store bytes (or copy a local file) at ``uri`` under the storage policy; returns where and the SHA-256."""
    if isinstance(body, Path) and not body.is_file():
        raise ObjectNotFound(f"cannot upload {body}: it does not exist or is not a file")
    return Written(uri, put(parse(uri), body))


def write_bytes(uri: str, data: bytes) -> str:
    """Store ``data`` at ``uri`` (a local file appears atomically); returns ``uri``."""
    return write(uri, data).uri


def create_bytes(uri: str, data: bytes) -> str:
    """Store ``data`` at ``uri`` only if nothing is there; :class:`AlreadyExists` otherwise. Atomic on S3
    (``If-None-Match: *``, which Ceph RGW and AWS honour) and locally (a hard link, which fails on an
    existing name): two writers of one key never both succeed, so neither overwrites the other."""
    location = parse(uri)
    if location.path is not None:
        if location.path.exists():
            raise AlreadyExists(f"{uri} exists already")
        staging = location.path.with_name(f".{location.path.name}.new")
        put_local(staging, data)
        try:
            os.link(staging, location.path)
        except FileExistsError as exc:
            raise AlreadyExists(f"{uri} exists already") from exc
        finally:
            staging.unlink(missing_ok=True)
        return uri
    try:
        put(location, data, {"IfNoneMatch": "*"})
    except StorageError as exc:
        if "PreconditionFailed" in str(exc) or "412" in str(exc):
            raise AlreadyExists(f"{uri} exists already: another writer stored it first") from exc
        raise
    return uri


def write_file(uri: str, source: Path) -> str:
    """Copy the local file ``source`` to ``uri`` (S3 uploads large files in parts); returns ``uri``."""
    return write(uri, Path(source)).uri


def delete(uri: str) -> None:
    """Remove the file or object at ``uri``; one already gone is fine (S3 deletes are idempotent too)."""
    location = parse(uri)
    if location.path is not None:
        location.path.unlink(missing_ok=True)
        return
    with s3.failing_as("delete", location):
        s3.s3_client().delete_object(Bucket=location.bucket, Key=location.key)


def exists(uri: str) -> bool:
    """True if the file or object exists; an unreadable store is an error, not False."""
    location = parse(uri)
    if location.path is not None:
        return location.path.is_file()
    client = s3.s3_client()
    try:
        client.head_object(Bucket=location.bucket, Key=location.key)
        return True
    except Exception as exc:
        error = s3.s3_error(exc, "check", location)
        if not isinstance(error, ObjectNotFound):
            raise error from exc
    # A HEAD 404 has no body, so it cannot say whether the key or the bucket is missing.
    s3.require_bucket(client, location, "check")
    return False


def list_prefix(uri: str) -> list[str]:
    """Every file under a local directory, or every object whose key starts with the prefix; sorted.

    Entries are spelled like ``uri`` (plain paths, ``file://`` URIs or ``s3://bucket/key``).
    """
    location = parse(uri, need_key=False)
    if location.path is not None:
        if not location.path.exists():
            return []
        if not location.path.is_dir():
            raise StorageError(f"cannot list {location.path}: it is a file, not a directory")
        files = sorted(p for p in location.path.rglob("*") if p.is_file())
        return [f"file://{p}" if uri.startswith("file://") else str(p) for p in files]
    with s3.failing_as("list", location):
        pages = (
            s3.s3_client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=location.bucket, Prefix=location.key)
        )
        keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    return sorted(f"s3://{location.bucket}/{key}" for key in keys)


def check_access(uri: str) -> None:
    """Raise :class:`StorageError` now if ``uri``'s bucket cannot be reached with these credentials.

    For start-up checks (a server that will write there later): one HEAD on the bucket, no writes.
    A local path always passes; its directory is created on the first write.
    """
    location = parse(uri, need_key=False)
    if location.path is not None:
        return
    s3.require_bucket(s3.s3_client(), location, "access")
