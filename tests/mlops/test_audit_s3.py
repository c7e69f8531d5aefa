"""The audit trail on a real S3 (Ceph RGW): one object per record, S3 Object Lock where the bucket has it."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from mlops.governance import audit
from mlops.storage import s3 as s3_store
from tests.services.plugin import S3Service


@pytest.fixture
def s3(rgw: S3Service, monkeypatch: pytest.MonkeyPatch) -> S3Service:
    for name, value in rgw.env.items():
        monkeypatch.setenv(name, value)
    s3_store._bucket_region.cache_clear()
    return rgw


def test_locked_trail_refuses_deletion_and_verify_names_an_overwritten_record(
    s3: S3Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = s3.client()
    client.create_bucket(Bucket="audit-locked", ObjectLockEnabledForBucket=True)
    client.put_object_lock_configuration(
        Bucket="audit-locked",
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}},
        },
    )
    monkeypatch.setenv(audit.AUDIT_URI_ENV, "s3://audit-locked/trail")
    for n in (1, 2, 3):
        audit.record("alias.moved", f"m/{n}", {"to": str(n)})
    result = audit.verify()
    assert result.intact and result.records == 3
    assert result.protection == "S3 Object Lock COMPLIANCE for 1 day(s) on bucket 'audit-locked'"
    head = client.head_object(Bucket="audit-locked", Key="trail/0000000002.json")
    assert head["ServerSideEncryption"] == "aws:kms" and head["ObjectLockMode"] == "COMPLIANCE"

    with pytest.raises(ClientError, match="forbidden by object lock"):
        client.delete_object(Bucket="audit-locked", Key="trail/0000000002.json", VersionId=head["VersionId"])
    edited = json.loads(client.get_object(Bucket="audit-locked", Key="trail/0000000002.json")["Body"].read())
    edited["details"]["to"] = "9"
    client.put_object(Bucket="audit-locked", Key="trail/0000000002.json", Body=json.dumps(edited).encode())
    (problem,) = audit.verify().problems
    assert problem.startswith("record 2 (object 0000000002.json: alias.moved m/2") and "was edited" in problem
    # The locked original version is still there for the investigation.
    versions = client.list_object_versions(Bucket="audit-locked", Prefix="trail/0000000002.json")["Versions"]
    assert len(versions) == 2


def test_unlocked_bucket_is_reported_and_a_deleted_record_named(
    s3: S3Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(audit.AUDIT_URI_ENV, f"s3://{s3.bucket}/audit-open")
    for n in (1, 2, 3):
        audit.record("gate.decided", f"m/{n}")
    s3.client().delete_object(Bucket=s3.bucket, Key="audit-open/0000000002.json")
    result = audit.verify()
    assert result.protection.startswith(f"no S3 Object Lock on bucket '{s3.bucket}'")
    (problem,) = result.problems
    assert problem.startswith("record(s) 2 before record 3 (object 0000000003.json")
