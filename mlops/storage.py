"""One storage layer for local paths, ``file://`` URIs and ``s3://bucket/key`` objects.

Datasets, expectation suites and request logs are read and written through these
few functions, so an S3-compatible store (AWS, Ceph RGW, MinIO) and a local disk
behave the same and every failure names the URI and the fix. The S3 client is
built from the environment only (``MLFLOW_S3_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` or a profile/role), the same
variables MLflow's own S3 artifact store reads; no credential ever appears in code
or in a pipeline parameter.

Every write goes through :func:`_put` (one function for bytes and files), the
single place where storage policy applies (:mod:`mlops.storage_policy`): on S3 the
bucket's region is checked against the allowed regions before any byte is sent,
server-side encryption is requested and then read back, and the SHA-256 of the bytes
is stored as object metadata (``x-amz-meta-sha256``) and returned by :func:`write`.
Reads that cross a trust boundary use :func:`read_verified` with the digest recorded
at write time.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

ENDPOINT_ENVS = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")
"""Checked in this order, as MLflow does; unset means AWS itself."""
CREDENTIALS_FIX = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run with an IAM role)"
ENDPOINT_FIX = "check MLFLOW_S3_ENDPOINT_URL / AWS_ENDPOINT_URL and that the S3 service is up"


class StorageError(ValueError):
    """A URI cannot be read or written; the message names the URI and how to fix it."""


class ObjectNotFound(StorageError):
    """The file or object does not exist."""


class AlreadyExists(StorageError):
    """:func:`create_bytes` found something at the URI already (another writer got there first)."""


class IntegrityError(StorageError):
    """The bytes read are not the bytes recorded: never use them."""


SHA256_METADATA = "sha256"
"""Object metadata key (``x-amz-meta-sha256``) holding the SHA-256 of the bytes written."""


@dataclass(frozen=True)
class Written:
    """Where bytes were stored and their SHA-256 (record it to check later reads)."""

    uri: str
    sha256: str


@dataclass(frozen=True)
class Location:
    """A parsed URI: either a local ``path`` or an S3 ``bucket`` and ``key``."""

    uri: str
    path: Path | None = None
    bucket: str = ""
    key: str = ""


def parse(uri: str, need_key: bool = True) -> Location:
    """Split ``uri``; ``s3://`` needs a bucket (and a key unless ``need_key`` is False)."""
    if uri.startswith("s3://"):
        bucket, _, key = uri[len("s3://") :].partition("/")
        if not bucket or (need_key and (not key or key.endswith("/"))):
            expected = "s3://bucket/key" if need_key else "s3://bucket[/prefix]"
            raise StorageError(f"{uri!r} is not a valid S3 URI; expected {expected}")
        return Location(uri, bucket=bucket, key=key)
    if "://" in uri and not uri.startswith("file://"):
        scheme = uri.split("://", 1)[0]
        raise StorageError(
            f"{uri!r}: scheme {scheme}:// is not supported; use a local path, file:// or s3://"
        )
    return Location(uri, path=Path(uri.removeprefix("file://")).expanduser())


def read_bytes(uri: str) -> bytes:
    """The whole file or object."""
    location = parse(uri)
    if location.path is not None:
        if not location.path.is_file():
            raise ObjectNotFound(f"{location.path} does not exist or is not a file")
        try:
            return location.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {location.path}: {exc.strerror or exc}") from exc
    try:
        body: bytes = s3_client().get_object(Bucket=location.bucket, Key=location.key)["Body"].read()
    except Exception as exc:  # botocore raises many types; _s3_error sorts them into fixes
        raise _s3_error(exc, "read", location) from exc
    return body


RANGE_BYTES = 8 << 20
"""Most bytes one ranged GET of :func:`open_read` asks for (and its read-ahead buffer)."""


@dataclass(frozen=True)
class Stat:
    """Size and version of a file or object, without reading it."""

    size: int
    version: str
    """Modification time (ns) of a local file, the ETag of an object: it changes when the bytes do."""


def stat(uri: str) -> Stat:
    location = parse(uri)
    if location.path is not None:
        try:
            info = location.path.stat()
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"{location.path} does not exist or is not a file") from exc
        return Stat(info.st_size, str(info.st_mtime_ns))
    try:
        head = s3_client().head_object(Bucket=location.bucket, Key=location.key)
    except Exception as exc:
        raise _s3_error(exc, "read", location) from exc
    return Stat(int(head["ContentLength"]), str(head.get("ETag", "")))


def open_read(uri: str, read_ahead: int = RANGE_BYTES) -> BinaryIO:
    """A seekable binary reader of the file or object, for streaming or random access (Parquet reads
    its footer, then only the column chunks asked for). An S3 object is read by ranged GETs of at most
    :data:`RANGE_BYTES`, each pinned to the ETag seen when it was opened (a changed object fails the
    read instead of mixing two versions), so memory is bounded by what the caller reads at a time.
    A small read fetches ``read_ahead`` bytes (pass the size of a header you only want to look at)."""
    location = parse(uri)
    if location.path is not None:
        try:
            return location.path.open("rb")
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"{location.path} does not exist or is not a file") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {location.path}: {exc.strerror or exc}") from exc
    return io.BufferedReader(
        _RangedObject(location, stat(uri)), buffer_size=max(1, min(read_ahead, RANGE_BYTES))
    )


class _RangedObject(io.RawIOBase):
    """An S3 object as a raw seekable stream: every read is one ranged GET."""

    def __init__(self, location: Location, info: Stat):
        self.location = location
        self.size = info.size
        self.etag = info.version
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self.position >= self.size or not len(view):
            return 0
        end = min(self.size, self.position + len(view), self.position + RANGE_BYTES) - 1
        arguments = {
            "Bucket": self.location.bucket,
            "Key": self.location.key,
            "Range": f"bytes={self.position}-{end}",
        }
        if self.etag:
            arguments["IfMatch"] = self.etag
        try:
            body: bytes = s3_client().get_object(**arguments)["Body"].read()
        except Exception as exc:
            raise _s3_error(exc, "read", self.location) from exc
        view[: len(body)] = body
        self.position += len(body)
        return len(body)


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
    return Written(uri, _put(parse(uri), body))


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
        _put_local(staging, data)
        try:
            os.link(staging, location.path)
        except FileExistsError as exc:
            raise AlreadyExists(f"{uri} exists already") from exc
        finally:
            staging.unlink(missing_ok=True)
        return uri
    try:
        _put(location, data, {"IfNoneMatch": "*"})
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
    try:
        s3_client().delete_object(Bucket=location.bucket, Key=location.key)
    except Exception as exc:
        raise _s3_error(exc, "delete", location) from exc


@dataclass(frozen=True)
class Retention:
    """Why an S3 object cannot be changed or deleted now: S3 Object Lock retention or a legal hold."""

    uri: str
    mode: str
    """``GOVERNANCE`` or ``COMPLIANCE`` (empty when only a legal hold applies)."""
    until: str
    """The retain-until date (ISO 8601, UTC), empty when only a legal hold applies."""
    legal_hold: bool


def retention(uri: str) -> Retention | None:
    """The Object Lock that keeps the object at ``uri`` as it is now, or None (a local file never has one).

    A retain-until date in the past no longer protects it; a legal hold does until it is lifted.
    """
    from datetime import UTC, datetime

    location = parse(uri)
    if location.path is not None:
        return None
    try:
        head = s3_client().head_object(Bucket=location.bucket, Key=location.key)
    except Exception as exc:
        raise _s3_error(exc, "read", location) from exc
    until = head.get("ObjectLockRetainUntilDate")
    held = head.get("ObjectLockLegalHoldStatus") == "ON"
    retained = until is not None and until > datetime.now(UTC)
    if not (retained or held):
        return None
    when = until.astimezone(UTC).isoformat() if retained else ""
    return Retention(uri, str(head.get("ObjectLockMode", "")) if retained else "", when, held)


def purge_versions(uri: str, keep_current: bool = True) -> list[str]:
    """Delete the earlier stored versions of an S3 object (and its delete markers): on a versioned bucket a
    rewrite or a delete leaves them readable. ``keep_current=False`` deletes the current version too.
    Returns the version ids S3 refused to delete (a locked version), each as ``uri?versionId=…``; a local
    file has no versions."""
    location = parse(uri)
    if location.path is not None:
        return []
    client = s3_client()
    try:
        pages = client.get_paginator("list_object_versions").paginate(
            Bucket=location.bucket, Prefix=location.key
        )
        entries = [
            item
            for page in pages
            for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            if item["Key"] == location.key
        ]
    except Exception as exc:
        raise _s3_error(exc, "list the versions of", location) from exc
    refused = []
    for item in entries:
        if keep_current and item.get("IsLatest") and "ETag" in item:
            continue
        try:
            client.delete_object(Bucket=location.bucket, Key=location.key, VersionId=item["VersionId"])
        except Exception:  # noqa: BLE001 - a locked version: named to the caller, never silently kept
            refused.append(f"{uri}?versionId={item['VersionId']}")
    return refused


def exists(uri: str) -> bool:
    """True if the file or object exists; an unreadable store is an error, not False."""
    location = parse(uri)
    if location.path is not None:
        return location.path.is_file()
    client = s3_client()
    try:
        client.head_object(Bucket=location.bucket, Key=location.key)
        return True
    except Exception as exc:
        error = _s3_error(exc, "check", location)
        if not isinstance(error, ObjectNotFound):
            raise error from exc
    # A HEAD 404 has no body, so it cannot say whether the key or the bucket is missing.
    _require_bucket(client, location, "check")
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
    try:
        pages = (
            s3_client().get_paginator("list_objects_v2").paginate(Bucket=location.bucket, Prefix=location.key)
        )
        keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    except Exception as exc:
        raise _s3_error(exc, "list", location) from exc
    return sorted(f"s3://{location.bucket}/{key}" for key in keys)


def check_access(uri: str) -> None:
    """Raise :class:`StorageError` now if ``uri``'s bucket cannot be reached with these credentials.

    For start-up checks (a server that will write there later): one HEAD on the bucket, no writes.
    A local path always passes; its directory is created on the first write.
    """
    location = parse(uri, need_key=False)
    if location.path is not None:
        return
    _require_bucket(s3_client(), location, "access")


def describe_error(exc: Exception, action: str, uri: str) -> StorageError:
    """The one-line :class:`StorageError` for a failure some other library hit on ``uri`` (e.g. MLflow's S3 store)."""
    return _s3_error(exc, action, Location(uri, bucket=uri.removeprefix("s3://").partition("/")[0]))


def _put(location: Location, body: bytes | Path, extra: dict[str, Any] | None = None) -> str:
    """The one write path: every byte any caller stores passes here; returns the bytes' SHA-256.

    On S3: region check (before any byte is sent), encryption requested, SHA-256 stored as
    metadata, and the encryption the store reports read back (an object stored without
    it is deleted and the write refused). ``extra`` adds put arguments (e.g. Object Lock).
    """
    digest = _sha256(body)
    if location.path is not None:
        _put_local(location.path, body)
        return digest
    from mlops.storage_policy import PolicyError, StoragePolicy

    policy = StoragePolicy.from_env()
    client = s3_client()
    if policy.s3_allowed_regions:
        policy.check_region(location.bucket, bucket_region(location.bucket))
    arguments: dict[str, Any] = {
        **policy.put_arguments(),
        "Metadata": {SHA256_METADATA: digest},
        **(extra or {}),
    }
    try:
        if isinstance(body, Path):
            client.upload_file(str(body), location.bucket, location.key, ExtraArgs=arguments)
        else:
            client.put_object(Bucket=location.bucket, Key=location.key, Body=body, **arguments)
        problem = policy.check_applied(client.head_object(Bucket=location.bucket, Key=location.key))
    except Exception as exc:
        raise _s3_error(exc, "write", location) from exc
    if problem:
        client.delete_object(Bucket=location.bucket, Key=location.key)
        raise PolicyError(
            f"refused {location.uri}: {problem}; the object was deleted. Use an encryption the store applies "
            f"(Ceph RGW ignores AES256: set MLOPS_S3_SSE=aws:kms and MLOPS_S3_SSE_KMS_KEY_ID) or, knowingly, "
            "MLOPS_S3_SSE=none"
        )
    return digest


MLFLOW_UPLOAD_ARGS_ENV = "MLFLOW_S3_UPLOAD_EXTRA_ARGS"
"""MLflow's own variable: extra arguments of every S3 upload its artifact store makes."""


def govern_mlflow_artifacts(artifact_location: str) -> None:
    """MLflow writes model artifacts to S3 with its own client: give it the same policy.

    The artifact bucket's region is checked before anything is logged, and the encryption
    arguments go into ``MLFLOW_S3_UPLOAD_EXTRA_ARGS`` (unless already set) for this process.
    A server-proxied store (``mlflow-artifacts:/``) is written by the MLflow server: set the
    variable on its deployment.
    """
    if not artifact_location.startswith("s3://"):
        return
    import json

    from mlops.storage_policy import StoragePolicy

    policy = StoragePolicy.from_env()
    bucket = parse(artifact_location, need_key=False).bucket
    if policy.s3_allowed_regions:
        policy.check_region(bucket, bucket_region(bucket))
    arguments = policy.put_arguments()
    if arguments and not os.environ.get(MLFLOW_UPLOAD_ARGS_ENV):
        os.environ[MLFLOW_UPLOAD_ARGS_ENV] = json.dumps(arguments)


def _sha256(body: bytes | Path) -> str:
    if not isinstance(body, Path):
        return hashlib.sha256(body).hexdigest()
    digest = hashlib.sha256()
    with body.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bucket_region(bucket: str) -> str:
    """The region a bucket lives in (``us-east-1`` when S3 reports none), cached per endpoint and bucket."""
    return _bucket_region(s3_endpoint(), bucket)


@lru_cache(maxsize=64)
def _bucket_region(endpoint: str, bucket: str) -> str:
    location = Location(f"s3://{bucket}", bucket=bucket)
    try:
        answer = s3_client().get_bucket_location(Bucket=bucket)
    except Exception as exc:
        raise _s3_error(exc, "check the region of", location) from exc
    return str(answer.get("LocationConstraint") or "us-east-1")


def _put_local(path: Path, body: bytes | Path) -> None:
    """Write under a temporary name in the same directory, then rename: readers never see half a file."""
    data = body.read_bytes() if isinstance(body, Path) else body
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise StorageError(
            f"cannot write {path}: {exc.strerror or exc}; check the directory's permissions"
        ) from exc


def s3_endpoint() -> str:
    """The S3 endpoint the environment names, or "" for AWS itself."""
    return next((os.environ[name].strip() for name in ENDPOINT_ENVS if os.environ.get(name, "").strip()), "")


def s3_client() -> Any:
    """A boto3 S3 client for the current environment (cached until a relevant variable changes)."""
    relevant = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(("AWS_", "MLFLOW_S3_"))))
    return _client(relevant)


@lru_cache(maxsize=4)
def _client(environment: tuple[tuple[str, str], ...]) -> Any:
    # The argument only keys the cache: boto3 reads credentials, region and retries from os.environ.
    import boto3

    env = dict(environment)
    verify = env.get("MLFLOW_S3_IGNORE_TLS", "").lower() not in ("true", "1")
    return boto3.session.Session().client("s3", endpoint_url=s3_endpoint() or None, verify=verify)


def _s3_error(exc: Exception, action: str, location: Location) -> StorageError:
    """Turn a botocore exception into one line: what failed, why, and the fix."""
    from botocore import exceptions as bce

    where = f"cannot {action} {location.uri}"
    if isinstance(exc, bce.NoCredentialsError | bce.PartialCredentialsError):
        return StorageError(f"{where}: no S3 credentials found; {CREDENTIALS_FIX}")
    if isinstance(exc, bce.EndpointConnectionError | bce.ConnectTimeoutError | bce.ReadTimeoutError):
        return StorageError(f"{where}: {exc}; {ENDPOINT_FIX}")
    if isinstance(exc, bce.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            return ObjectNotFound(
                f"{where}: bucket {location.bucket!r} does not exist; create it or fix the URI"
            )
        if code in ("NoSuchKey", "404", "NotFound") or status == 404:
            return ObjectNotFound(f"{where}: no such object; check the key")
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403") or status == 403:
            return StorageError(
                f"{where}: S3 refused the credentials ({code or status}); {CREDENTIALS_FIX} "
                "to a key with access to this bucket"
            )
        return StorageError(f"{where}: S3 error {code or status}: {error.get('Message', exc)}")
    if isinstance(exc, bce.BotoCoreError):
        return StorageError(f"{where}: {exc}; {ENDPOINT_FIX}")
    return StorageError(f"{where}: {type(exc).__name__}: {exc}")


def _require_bucket(client: Any, location: Location, action: str) -> None:
    """Raise the storage error for ``action`` unless the bucket exists and the credentials may see it."""
    try:
        client.head_bucket(Bucket=location.bucket)
    except Exception as exc:
        error = _s3_error(exc, action, location)
        if isinstance(error, ObjectNotFound):
            error = ObjectNotFound(
                f"cannot {action} {location.uri}: bucket {location.bucket!r} does not exist; create it or fix the URI"
            )
        raise error from exc
