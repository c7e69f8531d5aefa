"""The storage policy's decisions in-process, each at its edge: which encryption arguments a write
sends, which regions are refused, and which ``head_object`` answers count as the encryption applied.

The end-to-end tests on a real Ceph RGW are in ``test_storage_policy.py``; these need no server, so
mutation testing can run them once per mutant (``benchmarks/mutation_targets.txt``).
"""

from __future__ import annotations

import pytest

from mlops.storage_policy import PolicyError, StoragePolicy

KEY_ARN = "arn:aws:kms:eu-central-1:111122223333:key/k1"


def test_kms_key_id_is_sent_only_with_kms_and_only_when_set() -> None:
    assert StoragePolicy(s3_sse="aws:kms", s3_sse_kms_key_id="k1").put_arguments() == {
        "ServerSideEncryption": "aws:kms",
        "SSEKMSKeyId": "k1",
    }
    # aws:kms without a key id: the store's default key, so no SSEKMSKeyId argument at all.
    assert StoragePolicy(s3_sse="aws:kms").put_arguments() == {"ServerSideEncryption": "aws:kms"}
    # A key id left in the environment does not leak into an SSE-S3 write (boto3 would refuse the pair).
    assert StoragePolicy(s3_sse="AES256", s3_sse_kms_key_id="k1").put_arguments() == {
        "ServerSideEncryption": "AES256"
    }
    assert StoragePolicy(s3_sse="none", s3_sse_kms_key_id="k1").put_arguments() == {}


def test_no_allowed_regions_allows_every_region() -> None:
    policy = StoragePolicy()
    for region in ("us-east-1", "eu-central-1", "default", ""):
        policy.check_region("b", region)  # nothing raised


def test_a_refused_region_names_bucket_region_setting_and_every_allowed_region() -> None:
    policy = StoragePolicy(s3_allowed_regions=("eu-central-1", "eu-west-1"))
    policy.check_region("b", "eu-west-1")
    with pytest.raises(PolicyError) as refused:
        policy.check_region("rows", "us-east-1")
    assert str(refused.value) == (
        "refusing to write to bucket 'rows': it is in region 'us-east-1', which "
        "MLOPS_S3_ALLOWED_REGIONS (eu-central-1,eu-west-1) does not allow; "
        "write to a bucket in an allowed region or change the setting"
    )


def test_allowed_regions_from_the_environment_are_trimmed_and_empty_parts_dropped() -> None:
    policy = StoragePolicy.from_env({"MLOPS_S3_ALLOWED_REGIONS": " eu-west-1 ,, eu-central-1, "})
    assert policy.s3_allowed_regions == ("eu-west-1", "eu-central-1")


def test_requested_encryption_reported_back_is_accepted() -> None:
    assert StoragePolicy(s3_sse="AES256").check_applied({"ServerSideEncryption": "AES256"}) == ""
    assert StoragePolicy(s3_sse="aws:kms").check_applied({"ServerSideEncryption": "aws:kms"}) == ""


def test_missing_or_other_encryption_is_named() -> None:
    assert StoragePolicy(s3_sse="AES256").check_applied({}) == (
        "the store reports encryption None, not the requested 'AES256'"
    )
    assert StoragePolicy(s3_sse="aws:kms").check_applied({"ServerSideEncryption": "AES256"}) == (
        "the store reports encryption 'AES256', not the requested 'aws:kms'"
    )


def test_nothing_is_checked_without_encryption_or_with_verification_off() -> None:
    assert StoragePolicy(s3_sse="none").check_applied({}) == ""
    assert StoragePolicy(s3_sse="none").check_applied({"ServerSideEncryption": "AES256"}) == ""
    assert StoragePolicy(s3_sse="AES256", s3_verify_encryption=False).check_applied({}) == ""
    assert StoragePolicy.from_env({"MLOPS_S3_VERIFY_ENCRYPTION": "false"}).check_applied({}) == ""


def test_the_kms_key_is_compared_by_its_id_at_the_end_of_the_reported_arn() -> None:
    policy = StoragePolicy(s3_sse="aws:kms", s3_sse_kms_key_id="k1")
    assert policy.check_applied({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": KEY_ARN}) == ""
    assert policy.check_applied({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k1"}) == ""
    other = "arn:aws:kms:eu-central-1:111122223333:key/k2"
    assert policy.check_applied({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": other}) == (
        f"the store used KMS key {other!r}, not 'k1'"
    )
    # A key id that only starts the ARN is not the key (the id is the ARN's last part).
    assert policy.check_applied({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k1-other"}) != ""


def test_the_kms_key_is_not_compared_when_either_side_does_not_name_one() -> None:
    reported_other = {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "arn:aws:kms:r:1:key/k2"}
    # No key configured: the store's default key, whatever it is called.
    assert StoragePolicy(s3_sse="aws:kms").check_applied(reported_other) == ""
    # The store does not report a key: only the encryption itself can be checked.
    assert (
        StoragePolicy(s3_sse="aws:kms", s3_sse_kms_key_id="k1").check_applied(
            {"ServerSideEncryption": "aws:kms"}
        )
        == ""
    )
    # SSE-S3 requested: a key id left in the environment is not compared.
    reported_s3 = {"ServerSideEncryption": "AES256", "SSEKMSKeyId": "k2"}
    assert StoragePolicy(s3_sse="AES256", s3_sse_kms_key_id="k1").check_applied(reported_s3) == ""
