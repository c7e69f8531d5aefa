"""The registry vocabulary: every alias, file name and ``mlops.*`` tag name in one place.

The MLflow model registry is the one source of truth for which model is which and
why (lineage, digests, gate decisions). Every layer that reads or writes those tags
names them through this module, so a tag is spelt once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

CHALLENGER = "challenger"
"""Alias of the newest registered version awaiting the gates."""
CHAMPION = "champion"
"""Alias of the version that serves; moved only by a promotion."""
ONNX_FILE = "model.onnx"
"""The file a registered model version's artifacts hold and the server loads."""

TAG_PREFIX = "mlops."
PIPELINE_RUN_ID_TAG = f"{TAG_PREFIX}pipeline_run_id"
"""Run tag tying every task's MLflow run to its pipeline run."""
TASK_TAG = f"{TAG_PREFIX}task"
"""Run tag naming the pipeline task that logged the run."""
MODEL_NAME_TAG = f"{TAG_PREFIX}model_name"
MODEL_VERSION_TAG = f"{TAG_PREFIX}model_version"
DIGEST_TAG = f"{TAG_PREFIX}onnx_sha256"
"""Version tag: SHA-256 of the registered ``model.onnx``; checked before every load."""
SIGNATURE_URI_TAG = f"{TAG_PREFIX}signature_uri"
"""Version tag: where the version's OpenSSF model-signing bundle is (``runs:/<run>/signature/model.sig``)."""
SIGNING_KEY_ID_TAG = f"{TAG_PREFIX}signing_key_id"
"""Version tag: fingerprint of the public key whose private half signed the version."""
PRECISION_TAG = f"{TAG_PREFIX}precision"
QUANTIZED_FROM_TAG = f"{TAG_PREFIX}quantized_from"
DATASET_DIGEST_TAG = f"{TAG_PREFIX}dataset_digest"
DATASET_URI_TAG = f"{TAG_PREFIX}dataset_uri"
DECISION_TAG = f"{TAG_PREFIX}decision"
"""Version tag: the overall verdict of every gate (``promote`` or ``reject``)."""
REASON_TAG = f"{TAG_PREFIX}reason"
"""Version tag: why the overall verdict is what it is."""
STATUS_TAG = f"{TAG_PREFIX}status"
"""Version tag: what the gates' evidence showed (``pass``, ``fail``, ``not_conclusive``); a promote may be not conclusive."""
UNDECIDED_TAG = f"{TAG_PREFIX}undecided"
"""Version tag: every check the gates could not decide, one a line (absent when none)."""
PROMOTED_AT_TAG = f"{TAG_PREFIX}promoted_at"
REPLACED_BY_TAG = f"{TAG_PREFIX}replaced_by"
HAS_CHAMPION_TAG = f"{TAG_PREFIX}has_champion"
PROFILE_TAG = f"{TAG_PREFIX}reference_profile"
"""Version tag: URI of the version's reference profile (``mlops.model.reference_profile``), written at registration."""
EXPLAIN_REFERENCE_TAG = f"{TAG_PREFIX}explain_reference"
"""Version tag: URI of the version's reference rows and reason texts (``explain_reference.parquet``, format in
``mlops.model.row_attribution.REFERENCE_FILE``), written at registration; what the server explains scores against."""
LAST_RETRAIN_TAG = f"{TAG_PREFIX}last_retrain_trigger"
"""Registered-model tag: UTC time of the last retraining the monitor triggered (the cooldown reads it)."""
ROLLOUT_GATE = "canary"
"""Gate name of a rollout's verdict: ``mlops.gate.canary.decision`` / ``.reason`` on the challenger."""
ROLLOUT_STAGE_TAG = f"{TAG_PREFIX}rollout.stage"
"""Version tag: where its rollout is (``shadow``, a canary percentage, ``promoted``, ``rolled_back``)."""
ROLLED_BACK_AT_TAG = f"{TAG_PREFIX}rolled_back_at"
"""Version tag: when a rollout took this version out of traffic (the reason is the canary gate's)."""
SPLIT_TAG = f"{TAG_PREFIX}split"
"""Version and train-run tag: the row split rule the model was trained with (which rows it saw)."""
ALLOWED_LEAKS_TAG = f"{TAG_PREFIX}allowed_leaks"
"""Version tag: the features its schema acknowledged as known before the outcome (``allowed_leaks``,
comma-separated): the leakage gate did not hold them against the version."""
LEAKAGE_GATE = "leakage"
"""Gate name of the leakage checks: ``mlops.gate.leakage.decision`` / ``.reason`` / ``.columns``."""
APPROVAL_STATUS_TAG = f"{TAG_PREFIX}approval.status"
"""Version tag: where a second person's sign-off stands (``pending-approval``, ``approved``, ``rejected``);
a version carrying it is never made champion without a valid approval, whatever a later run's settings say."""
PENDING_APPROVAL = "pending-approval"
APPROVED = "approved"
REJECTED = "rejected"
APPROVAL_BY_TAG = f"{TAG_PREFIX}approval.by"
"""Version tag: who approved or rejected it (the identity of the trusted approver key that signed)."""
APPROVAL_KEY_ID_TAG = f"{TAG_PREFIX}approval.key_id"
"""Version tag: fingerprint of the approver's public key (:func:`mlops.governance.signing.key_id`)."""
APPROVAL_AT_TAG = f"{TAG_PREFIX}approval.at"
"""Version tag: UTC time of the decision (``pending-approval``: when the gates asked for one)."""
APPROVAL_REASON_TAG = f"{TAG_PREFIX}approval.reason"
"""Version tag: why it was rejected (or the approver's note)."""
APPROVAL_STATEMENT_TAG = f"{TAG_PREFIX}approval.statement"
"""Version tag: the signed statement, canonical JSON (model, version, digest, signature reference, decision,
approver, key id, time, reason)."""
APPROVAL_SIGNATURE_TAG = f"{TAG_PREFIX}approval.signature"
"""Version tag: the approver's ECDSA P-256 / SHA-256 signature over the statement, base64."""
MAX_TAG_CHARS = 4000
"""Longest tag value written; longer reasons are clipped (the reports keep the full text)."""


def gate_tag(gate: str, field: str) -> str:
    """``mlops.gate.<gate>.<field>``: one gate's decision, reason or violation on a version."""
    return f"{TAG_PREFIX}gate.{gate}.{field}"


LEAK_COLUMNS_TAG = gate_tag(LEAKAGE_GATE, "columns")
"""Version tag: the columns the leakage gate found likely leaking (comma-separated; empty: none). A later
run that leaves them out is judged on its own merits, not against this version."""


FEATURE_TAG_PREFIX = f"{TAG_PREFIX}features."
FEATURE_SERVICE_TAG = f"{FEATURE_TAG_PREFIX}service"
"""Version tag: the feature service the training set was joined with (absent: trained on a plain table)."""
FEATURE_PROJECT_TAG = f"{FEATURE_TAG_PREFIX}project"
FEATURE_VIEW_TAG_PREFIX = f"{FEATURE_TAG_PREFIX}view."
"""Version tags ``mlops.features.view.<view>``: ``sha256:<its Feast definition's hash> ttl=<s>s features=<a,b>``."""
ENTITY_TABLE_SHA256_TAG = f"{FEATURE_TAG_PREFIX}entity_table_sha256"
ENTITY_TABLE_URI_TAG = f"{FEATURE_TAG_PREFIX}entity_table_uri"
ROWS_WITHOUT_FEATURES_TAG = f"{FEATURE_TAG_PREFIX}rows_without_features"
FEATURE_SOURCE_TAGS = {
    "data.features.service": FEATURE_SERVICE_TAG,
    "data.uri": ENTITY_TABLE_URI_TAG,
    "data.features.repo": f"{FEATURE_TAG_PREFIX}repo",
    "data.features.timestamp": f"{FEATURE_TAG_PREFIX}timestamp",
    "data.features.allow_missing": f"{FEATURE_TAG_PREFIX}allow_missing",
}
"""Setting address -> the version tag that records it: a retraining of a model trained from the feature store
joins the same service, repository and entity table again (the retrain trigger reads them back)."""


def _setting_text(value: Any) -> str:
    """A setting's value as ``--set`` reads it back (``true``, not ``True``)."""
    return value if isinstance(value, str) else json.dumps(value)


def feature_lineage_tags(record: Mapping[str, Any]) -> dict[str, str]:
    """The version tags of a training set's feature-store lineage record
    (``mlops.features.training_set``'s ``<out>.features.json``, with prepare-data's ``source``: the
    repository, timestamp column and allow_missing it joined with); ``{}`` for an empty record."""
    if not record:
        return {}
    tags = {
        FEATURE_SERVICE_TAG: str(record["feature_service"]),
        FEATURE_PROJECT_TAG: str(record.get("project", "")),
        ENTITY_TABLE_SHA256_TAG: str(record["entity_table"]["sha256"]),
        ENTITY_TABLE_URI_TAG: clip(str(record["entity_table"]["uri"])),
        ROWS_WITHOUT_FEATURES_TAG: str(record.get("rows_without_features", 0)),
        **{
            FEATURE_SOURCE_TAGS[f"data.features.{key}"]: clip(_setting_text(record["source"][key]))
            for key in ("repo", "timestamp", "allow_missing")
            if key in record.get("source", {})
        },
    }
    for view, spec in sorted(record.get("feature_views", {}).items()):
        tags[f"{FEATURE_VIEW_TAG_PREFIX}{view}"] = clip(
            f"sha256:{spec['definition_sha256']} ttl={spec.get('ttl_seconds', 0)}s "
            f"features={','.join(spec.get('features', []))}"
        )
    return tags


def clip(text: str) -> str:
    """A tag value no longer than :data:`MAX_TAG_CHARS`."""
    return text if len(text) <= MAX_TAG_CHARS else text[: MAX_TAG_CHARS - 1] + "…"


@dataclass(frozen=True)
class Lineage:
    """Where a model version came from; each field becomes a ``mlops.<field>`` version tag."""

    kfp_run_id: str
    """KFP pipeline run id (the local runner's run id under the embedded default)."""
    git_commit: str
    """Commit of the pipeline code; empty when not run from a git checkout."""
    dataset_digest: str
    """SHA-256 of the training data file's bytes."""
    suite_version: str
    """Version of the expectation suite the data passed."""
    package_version: str
    """Version of the mlops package that trained the model."""
    train_run_id: str
    """MLflow run id of the training task."""
    trigger: str = ""
    """Why the run was started: empty for a manual run, else the monitoring decision that triggered it."""
    split: str = ""
    """How the training rows were chosen (a JSON split rule): evaluate-model excludes a champion's training rows with it."""

    def tags(self) -> dict[str, str]:
        return {f"{TAG_PREFIX}{k}": v for k, v in asdict(self).items()}

    @classmethod
    def tag_names(cls) -> tuple[str, ...]:
        return tuple(f"{TAG_PREFIX}{name}" for name in cls.__dataclass_fields__)


NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""What a registered model's name (also its request-log folder) and an Optuna study's name may be."""


# --- the model-validation gate's report, read back by the drift monitor (bias and attribution drift) ---
VALIDATION_RUN_TAG = f"{TAG_PREFIX}model_validation.run_id"
"""Version tag naming the gate's MLflow run (components.model_validation writes it)."""
VALIDATION_REPORT_FILE = "model_validation/report.json"
"""The gate's JSON report in that run: per-group fairness figures and permutation importances."""

# --- what a retraining reads from the champion's own training run ---
DATA_URI_SETTING = "data.uri"
"""Address of the table a run trains on (``components.prepare_data.config.DataSettings.uri``)."""
SCHEMA_URI_SETTING = "validation.schema_uri"
"""Address of the schema file it was checked against (``DataValidationSettings.schema_uri``)."""
SOURCE_SETTINGS = (DATA_URI_SETTING, SCHEMA_URI_SETTING)
"""Logged by validate-data, read back by the retrain trigger: one spelling for both (components may not
import each other); ``tests/pipelines/test_source_settings.py`` checks each names a real setting."""
