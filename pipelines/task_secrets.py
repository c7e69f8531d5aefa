"""The Kubernetes Secrets each compiled task gets, the KFP way (``kfp-kubernetes``, KFP's Kubernetes extension).

On a real KFP the tasks run as pods the pipeline author does not write, so credentials reach them
only through the compiled YAML's Kubernetes platform config: the register task gets the signing
key Secret mounted as files (and ``MLOPS_SIGNING_KEY`` pointing at the private key, signing being
required by default, set from the pod's own annotation so that only a cluster run sees it), and every task that talks to the tracking server or the artifact store
(those taking the ``tracking`` section, and prepare-data, which reads ``data.uri``) gets the S3
credentials (and, when configured, the tracking token) as ``secretKeyRef`` environment. Names and
keys are :class:`TaskSecrets`' (defaults: the Secrets ``infra/k8s/README.md`` asks each team
namespace to hold). ``kfp.local`` ignores the platform config: local runs keep the caller's
environment and workspace keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from kfp.dsl.pipeline_task import PipelineTask
from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG

REGISTER_COMPONENT = "register-model"
DATA_COMPONENT = "prepare-data"
SIGNING_KEY_ANNOTATION = "mlops.platform/signing-key"
"""Pod annotation of the register task holding the private key's path (read back as MLOPS_SIGNING_KEY)."""


class TaskSecrets(BaseModel):
    """Which Secrets (and keys) the compiled tasks mount; they must exist in the namespace the run's pods use."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "task_secrets"

    signing_secret: str = Field(default="mlops-signing", pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    """Secret holding the model-signing private key; mounted into the register task only."""
    signing_key_item: str = Field(default="signing.key", min_length=1)
    """Key of signing_secret whose value is the private key (PEM); MLOPS_SIGNING_KEY points at it."""
    signing_mount_path: str = Field(default="/var/run/secrets/mlops-signing", pattern=r"^/[^:]*$")
    """Folder the signing Secret is mounted at in the register task's pod."""
    credentials_secret: str = Field(default="mlops-tracking", pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    """Secret holding the S3 credentials (and the tracking token) of the tasks that use the stores."""
    access_key_item: str = Field(default="aws-access-key-id", min_length=1)
    """Key of credentials_secret given to tasks as AWS_ACCESS_KEY_ID."""
    secret_key_item: str = Field(default="aws-secret-access-key", min_length=1)
    """Key of credentials_secret given to tasks as AWS_SECRET_ACCESS_KEY."""
    tracking_token_item: str = Field(default="")
    """Key of credentials_secret given to tasks as MLFLOW_TRACKING_TOKEN. Empty: the tracking server needs no token."""
    credentials_optional: bool = Field(default=True)
    """Start tasks even when credentials_secret is absent (S3 reached through the node's or pod's IAM role)."""

    def signing_key_path(self) -> str:
        return f"{self.signing_mount_path.rstrip('/')}/{self.signing_key_item}"

    def credential_env(self) -> dict[str, str]:
        """Secret key -> environment variable of the store credentials."""
        env = {self.access_key_item: "AWS_ACCESS_KEY_ID", self.secret_key_item: "AWS_SECRET_ACCESS_KEY"}
        if self.tracking_token_item:
            env[self.tracking_token_item] = "MLFLOW_TRACKING_TOKEN"
        return env


def needs_credentials(task: PipelineTask) -> bool:
    """Tasks that read or write the tracking server or the artifact store."""
    inputs = task.component_spec.inputs or {}
    return "tracking" in inputs or task.component_spec.name == DATA_COMPONENT


def mount_task_secrets(tasks: Iterable[PipelineTask], secrets: TaskSecrets) -> None:
    """Add the Secrets to the tasks' Kubernetes platform config (what ``kfp-kubernetes`` compiles)."""
    from kfp import kubernetes

    for task in tasks:
        if needs_credentials(task):
            kubernetes.use_secret_as_env(
                task,
                secret_name=secrets.credentials_secret,
                secret_key_to_env=secrets.credential_env(),
                optional=secrets.credentials_optional,
            )
        if task.component_spec.name == REGISTER_COMPONENT:
            kubernetes.use_secret_as_volume(
                task, secret_name=secrets.signing_secret, mount_path=secrets.signing_mount_path
            )
            # MLOPS_SIGNING_KEY through the pod's own annotation (downward API): platform config only, so a
            # kfp.local run, which applies a task's plain env but no platform config, keeps the workspace key.
            kubernetes.add_pod_annotation(task, SIGNING_KEY_ANNOTATION, secrets.signing_key_path())
            kubernetes.use_field_path_as_env(
                task,
                env_name="MLOPS_SIGNING_KEY",
                field_path=f"metadata.annotations['{SIGNING_KEY_ANNOTATION}']",
            )
