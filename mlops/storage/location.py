"""What a storage URI names (a local path, or an S3 bucket and key) and the errors every storage call
raises: each names the URI and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class StorageError(ValueError):
    """A URI cannot be read or written; the message names the URI and how to fix it."""


class ObjectNotFound(StorageError):
    """The file or object does not exist."""


class AlreadyExists(StorageError):
    """:func:`create_bytes` found something at the URI already (another writer got there first)."""


class IntegrityError(StorageError):
    """The bytes read are not the bytes recorded: never use them."""


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
