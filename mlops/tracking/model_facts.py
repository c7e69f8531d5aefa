"""Everything the platform recorded about one registered version, read through the one MLflow seam.

The model card and the evidence pack (``mlops card``, ``mlops evidence``) are built from
:class:`~mlops.governance.version_facts.ModelFacts`: the version and its tags, the MLflow runs
of the pipeline run that produced it (their parameters, metrics and JSON/HTML reports:
data validation, evaluation, every gate), its reference profile and its audit records.
Reading goes through :class:`~mlops.tracking.store.TrackingStore` only; nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.governance.audit import AuditEvent
from mlops.governance.version_facts import ModelFacts, RunFacts
from mlops.vocabulary import PIPELINE_RUN_ID_TAG, TAG_PREFIX, TASK_TAG

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore

REPORT_SUFFIXES = (".json", ".html")
"""Artifacts collected from the pipeline run's task runs: reports, never models or data."""
SKIPPED_FOLDERS = ("model", "onnx", "checkpoints", "signature")
"""Artifact folders holding models, weights or the model's own signature (collected separately)."""
MAX_REPORT_BYTES = 20 << 20


class FactsError(ValueError):
    """The model or alias does not resolve; the message names it and the registry."""


def resolve_alias(store: TrackingStore, reference: str) -> tuple[str, str, str]:
    """``name@alias`` -> (name, alias, version); a :class:`FactsError` says what does not resolve."""
    from mlflow.exceptions import MlflowException

    name, _, alias = str(reference).partition("@")
    if not name or not alias:
        raise FactsError(f"{reference!r}: write <model-name>@<alias>, e.g. credit-default@champion")
    try:
        version = store._client.get_model_version_by_alias(name, alias)
    except MlflowException as exc:
        raise FactsError(
            f"{name}@{alias} does not resolve in {store.tracking_uri}: {exc.message}. "
            "List the aliases with `mlops history MODEL` or train one with `mlops run training`"
        ) from exc
    return name, alias, str(version.version)


def collect(
    store: TrackingStore, name: str, alias: str, version: str, events: list[AuditEvent], reports_dir: Path
) -> ModelFacts:
    """The facts of ``name`` version ``version``; every report artifact is downloaded under ``reports_dir``
    (``<task>/<artifact path>``) and the JSON ones are parsed into the facts."""
    from mlflow.exceptions import MlflowException

    client = store._client
    mv = client.get_model_version(name, version)
    tags = dict(mv.tags)
    pipeline_run = tags.get(f"{TAG_PREFIX}kfp_run_id", "")
    runs: list[RunFacts] = []
    if pipeline_run:
        experiments = [e.experiment_id for e in client.search_experiments()]
        found = client.search_runs(
            experiments,
            f"tags.`{PIPELINE_RUN_ID_TAG}` = '{pipeline_run}'",
            order_by=["attributes.start_time ASC"],
        )
        for run in found:
            task = run.data.tags.get(TASK_TAG, run.info.run_name or run.info.run_id)
            files = _download_reports(store, run.info.run_id, reports_dir / task)
            reports = {}
            for path in files:
                if path.suffix in (".json", ""):
                    try:
                        reports[path.relative_to(reports_dir / task).as_posix()] = json.loads(
                            path.read_text()
                        )
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        continue
            runs.append(
                RunFacts(
                    task=task,
                    run_id=run.info.run_id,
                    status=run.info.status,
                    params=dict(run.data.params),
                    metrics=dict(run.data.metrics),
                    tags={k: v for k, v in run.data.tags.items() if k.startswith(TAG_PREFIX)},
                    reports=reports,
                    report_files=[p.relative_to(reports_dir).as_posix() for p in files],
                )
            )
    try:
        profile = store.reference_profile(name, version).model_dump(mode="json")
    except (ValueError, MlflowException):
        profile = {}
    aliases = [a for a, v in client.get_registered_model(name).aliases.items() if str(v) == version]
    return ModelFacts(
        name=name,
        alias=alias,
        version=version,
        aliases=sorted(aliases),
        created_at=_iso(mv.creation_timestamp),
        description=mv.description or "",
        tags=tags,
        runs=runs,
        profile=profile,
        events=[e for e in events if _concerns(e, name, version, tags)],
        model_events=[e for e in events if e.subject.startswith(f"{name}/")],
        tracking_uri=store.tracking_uri,
    )


def download_signature(store: TrackingStore, tags: dict[str, str], dst: Path) -> Path | None:
    """The version's OpenSSF model-signing bundle (``mlops.signature_uri``) into ``dst``; None if unsigned."""
    from mlops.vocabulary import SIGNATURE_URI_TAG

    uri = tags.get(SIGNATURE_URI_TAG, "")
    if not uri:
        return None
    dst.mkdir(parents=True, exist_ok=True)
    return store.download(uri, dst)


def _download_reports(store: TrackingStore, run_id: str, dst: Path) -> list[Path]:
    client = store._client
    out: list[Path] = []
    pending = [""]
    while pending:
        folder = pending.pop()
        for item in client.list_artifacts(run_id, folder or None):
            if item.is_dir:
                if item.path.split("/")[-1] not in SKIPPED_FOLDERS:
                    pending.append(item.path)
            elif _is_report(item.path) and (item.file_size or 0) <= MAX_REPORT_BYTES:
                target = dst / Path(item.path).parent  # MLflow writes the file itself into the folder given
                target.mkdir(parents=True, exist_ok=True)
                out.append(Path(client.download_artifacts(run_id, item.path, str(target))))
    return sorted(out)


def _is_report(path: str) -> bool:
    """A JSON or HTML report; a gate's KFP output file keeps its extension-less name (``gate/report``)."""
    suffix = Path(path).suffix
    return suffix in REPORT_SUFFIXES or (not suffix and "/" in path)


def _concerns(event: AuditEvent, name: str, version: str, tags: dict[str, str]) -> bool:
    """The version's own records and the validation of the data it was trained on."""
    from mlops.vocabulary import DATASET_DIGEST_TAG

    if event.subject == f"{name}/{version}":
        return True
    digest = tags.get(DATASET_DIGEST_TAG, "")
    return bool(digest) and event.action == "data.validated" and event.details.get("dataset_digest") == digest


def _iso(millis: Any) -> str:
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(int(millis) / 1000, UTC).isoformat()
    except (TypeError, ValueError):
        return ""
