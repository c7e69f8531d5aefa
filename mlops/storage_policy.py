"""What every S3 write must satisfy: server-side encryption and data residency.

One typed settings object, read from the environment at each write (a pod gets it from
its spec, a shell from its profile), so the policy cannot be forgotten by a caller: the
storage layer applies it in :func:`mlops.storage.governed_put.put`. Each field's environment variable
is ``MLOPS_`` + the field name in capitals (``s3_sse`` ↔ ``MLOPS_S3_SSE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import field_validator

from mlops.settings import EnvSettings

SSE_S3 = "AES256"
SSE_KMS = "aws:kms"


class PolicyError(ValueError):
    """The storage policy in the environment is invalid; the message names the variable."""


class StoragePolicy(EnvSettings):
    """Encryption and residency rules applied to every object the platform writes to S3."""

    env_error = PolicyError
    env_subject = "storage policy"

    s3_sse: Literal["AES256", "aws:kms", "none"] = "AES256"
    """Server-side encryption requested on every S3 write: AES256 (SSE-S3), aws:kms (SSE-KMS) or none."""
    s3_sse_kms_key_id: str = ""
    """KMS key id for aws:kms; empty uses the store's default key."""
    s3_allowed_regions: tuple[str, ...] = ()
    """Regions a bucket may be in (comma-separated in the environment); empty allows any region."""
    s3_verify_encryption: bool = True
    """After each S3 write, read the object's encryption back and refuse (delete) an object stored unencrypted."""

    @field_validator("s3_allowed_regions", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    def put_arguments(self) -> dict[str, str]:
        """The encryption arguments of a boto3 ``put_object`` / ``upload_file`` call."""
        if self.s3_sse == "none":
            return {}
        arguments: dict[str, str] = {"ServerSideEncryption": self.s3_sse}
        if self.s3_sse == SSE_KMS and self.s3_sse_kms_key_id:
            arguments["SSEKMSKeyId"] = self.s3_sse_kms_key_id
        return arguments

    def check_region(self, bucket: str, region: str) -> None:
        """Refuse a bucket outside the allowed regions, naming the region and the setting."""
        if self.s3_allowed_regions and region not in self.s3_allowed_regions:
            raise PolicyError(
                f"refusing to write to bucket {bucket!r}: it is in region {region!r}, which "
                f"{self.env_name('s3_allowed_regions')} ({','.join(self.s3_allowed_regions)}) does not allow; "
                "write to a bucket in an allowed region or change the setting"
            )

    def check_applied(self, reported: Mapping[str, Any]) -> str:
        """'' when a ``head_object`` answer shows the requested encryption, else what is wrong."""
        if self.s3_sse == "none" or not self.s3_verify_encryption:
            return ""
        applied = reported.get("ServerSideEncryption")
        if applied != self.s3_sse:
            return f"the store reports encryption {applied!r}, not the requested {self.s3_sse!r}"
        key = reported.get("SSEKMSKeyId")
        if (
            self.s3_sse == SSE_KMS
            and self.s3_sse_kms_key_id
            and key
            and not str(key).endswith(self.s3_sse_kms_key_id)
        ):
            return f"the store used KMS key {key!r}, not {self.s3_sse_kms_key_id!r}"
        return ""
