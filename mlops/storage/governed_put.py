"""The one write path: every byte any caller stores passes :func:`put`, the single place where storage
policy applies (:mod:`mlops.storage_policy`). On S3 the bucket's region is checked against the allowed
regions before any byte is sent, server-side encryption is requested and then read back, and the SHA-256
of the bytes is stored as object metadata (``x-amz-meta-sha256``); a local file appears atomically
(:func:`put_local`). MLflow's own S3 uploads get the same policy (:func:`govern_mlflow_artifacts`)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from mlops.storage import s3
from mlops.storage.location import Location, StorageError, parse

SHA256_METADATA = "sha256"
"""Object metadata key (``x-amz-meta-sha256``) holding the SHA-256 of the bytes written."""


def put(location: Location, body: bytes | Path, extra: dict[str, Any] | None = None) -> str:
    """The one write path: every byte any caller stores passes here; returns the bytes' SHA-256.

    On S3: region check (before any byte is sent), encryption requested, SHA-256 stored as
    metadata, and the encryption the store reports read back (an object stored without
    it is deleted and the write refused). ``extra`` adds put arguments (e.g. Object Lock).
    """
    digest = sha256_of(body)
    if location.path is not None:
        put_local(location.path, body)
        return digest
    from mlops.storage_policy import PolicyError, StoragePolicy

    policy = StoragePolicy.from_env()
    client = s3.s3_client()
    if policy.s3_allowed_regions:
        policy.check_region(location.bucket, s3.bucket_region(location.bucket))
    arguments: dict[str, Any] = {
        **policy.put_arguments(),
        "Metadata": {SHA256_METADATA: digest},
        **(extra or {}),
    }
    with s3.failing_as("write", location):
        if isinstance(body, Path):
            client.upload_file(str(body), location.bucket, location.key, ExtraArgs=arguments)
        else:
            client.put_object(Bucket=location.bucket, Key=location.key, Body=body, **arguments)
        problem = policy.check_applied(client.head_object(Bucket=location.bucket, Key=location.key))
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
        policy.check_region(bucket, s3.bucket_region(bucket))
    arguments = policy.put_arguments()
    if arguments and not os.environ.get(MLFLOW_UPLOAD_ARGS_ENV):
        os.environ[MLFLOW_UPLOAD_ARGS_ENV] = json.dumps(arguments)


def sha256_of(body: bytes | Path) -> str:
    if not isinstance(body, Path):
        return hashlib.sha256(body).hexdigest()
    digest = hashlib.sha256()
    with body.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def put_local(path: Path, body: bytes | Path) -> None:
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
