"""S3 Object Lock and versions: what keeps an object as it is (retention, a legal hold), and deleting
the earlier versions a versioned bucket keeps readable after a rewrite or a delete."""

from __future__ import annotations

from dataclasses import dataclass

from mlops.storage import s3
from mlops.storage.location import parse


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
    with s3.failing_as("read", location):
        head = s3.s3_client().head_object(Bucket=location.bucket, Key=location.key)
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
    client = s3.s3_client()
    with s3.failing_as("list the versions of", location):
        pages = client.get_paginator("list_object_versions").paginate(
            Bucket=location.bucket, Prefix=location.key
        )
        entries = [
            item
            for page in pages
            for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            if item["Key"] == location.key
        ]
    refused = []
    for item in entries:
        if keep_current and item.get("IsLatest") and "ETag" in item:
            continue
        try:
            client.delete_object(Bucket=location.bucket, Key=location.key, VersionId=item["VersionId"])
        except Exception:  # noqa: BLE001 - a locked version: named to the caller, never silently kept
            refused.append(f"{uri}?versionId={item['VersionId']}")
    return refused
