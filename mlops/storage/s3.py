"""The S3 client, built from the environment only (``MLFLOW_S3_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` or a profile/role, the variables MLflow's own S3 artifact
store reads), and botocore's failures turned into one-line :class:`~mlops.storage.location.StorageError` errors
that name the URI and the fix."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from mlops.storage.location import Location, ObjectNotFound, StorageError

ENDPOINT_ENVS = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")
"""Checked in this order, as MLflow does; unset means AWS itself."""
CREDENTIALS_FIX = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run with an IAM role)"
ENDPOINT_FIX = "check MLFLOW_S3_ENDPOINT_URL / AWS_ENDPOINT_URL and that the S3 service is up"


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


def s3_error(exc: Exception, action: str, location: Location) -> StorageError:
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


@contextmanager
def failing_as(action: str, location: Location) -> Iterator[None]:
    """Whatever the S3 calls inside raise (botocore raises many types) as the :class:`StorageError` that
    :func:`s3_error` sorts it into: what failed, why, and the fix."""
    try:
        yield
    except Exception as exc:
        raise s3_error(exc, action, location) from exc


def require_bucket(client: Any, location: Location, action: str) -> None:
    """Raise the storage error for ``action`` unless the bucket exists and the credentials may see it."""
    try:
        client.head_bucket(Bucket=location.bucket)
    except Exception as exc:
        error = s3_error(exc, action, location)
        if isinstance(error, ObjectNotFound):
            error = ObjectNotFound(
                f"cannot {action} {location.uri}: bucket {location.bucket!r} does not exist; create it or fix the URI"
            )
        raise error from exc


def bucket_region(bucket: str) -> str:
    """The region a bucket lives in (``us-east-1`` when S3 reports none), cached per endpoint and bucket."""
    return _bucket_region(s3_endpoint(), bucket)


@lru_cache(maxsize=64)
def _bucket_region(endpoint: str, bucket: str) -> str:
    location = Location(f"s3://{bucket}", bucket=bucket)
    try:
        answer = s3_client().get_bucket_location(Bucket=bucket)
    except Exception as exc:
        raise s3_error(exc, "check the region of", location) from exc
    return str(answer.get("LocationConstraint") or "us-east-1")


def describe_error(exc: Exception, action: str, uri: str) -> StorageError:
    """The one-line :class:`StorageError` for a failure some other library hit on ``uri`` (e.g. MLflow's S3 store)."""
    return s3_error(exc, action, Location(uri, bucket=uri.removeprefix("s3://").partition("/")[0]))
