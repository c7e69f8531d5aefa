"""The plan step of a batch scoring job: resolve the alias once, verify the version, check the input, split it into shards."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from components.batch_score import chunk_writer as out
from components.batch_score.batch_job import BatchPlan, ModelRefused, check_columns, fetch_model
from components.batch_score.chunk_reader import BatchInputError, InputFile, list_inputs, open_input
from components.batch_score.config import ScoreSettings
from mlops import storage
from mlops.settings import section_values

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore
    from serving.model_source import ModelArtifact


def resolve_version(store: TrackingStore, model_name: str, alias: str, cache_dir: Path) -> str:
    from serving.model_source import RegisteredModelSource, RegistryError

    try:
        return RegisteredModelSource(store, model_name, cache_dir).version_for(alias)
    except RegistryError as exc:
        raise ModelRefused(str(exc)) from exc


def plan_job(settings: ScoreSettings, store: TrackingStore, cache_dir: Path) -> BatchPlan:
    """Resolve the alias, verify the version, list and check the input, split it into shards."""
    return plan_with_model(settings, store, cache_dir)[0]


def plan_with_model(
    settings: ScoreSettings, store: TrackingStore, cache_dir: Path
) -> tuple[BatchPlan, ModelArtifact]:
    """:func:`plan_job`, and the version it verified: a shard in the same process scores with it
    (``score_shard(..., artifact=)``) instead of fetching and verifying it a second time."""
    if not settings.output_uri:
        raise BatchInputError("no output given: set --out (score.output_uri) to a folder or an s3:// prefix")
    data_root = settings.data_uri.rstrip("/") + "/"
    if (settings.output_uri.rstrip("/") + "/").startswith(data_root):
        raise BatchInputError(
            f"the output {settings.output_uri} is inside the input {settings.data_uri}; a re-run would score "
            "its own output. Write the scores elsewhere"
        )
    files = list_inputs(settings.data_uri)
    version = resolve_version(store, settings.model_name, settings.alias, cache_dir)
    artifact = fetch_model(store, settings.model_name, version, cache_dir)
    from mlops.model.onnx_model import OnnxScorer

    spec = OnnxScorer.load(artifact.path).spec
    if settings.explain and artifact.reference_path is None:
        raise ModelRefused(
            f"{settings.model_name} version {version} has no reference rows to explain its scores against (no "
            "explain_reference.parquet: registered before reasons existed, or with 0 reference rows); re-register "
            "it (mlops run training) to store them, or score without --explain; nothing was scored"
        )
    for file in files:  # local headers are cheap to read: refuse a bad input before anything is written
        if storage.parse(file.uri).path is not None:
            check_columns(open_input(file), spec.names, settings)
    values = section_values(settings)
    decisive = {
        k: v
        for k, v in values.items()
        # on_bad_rows is not: a chunk written under refuse is what skip_rows writes (batch_shard._Job._valid)
        if k not in ("data_uri", "output_uri", "shards", "intra_op_threads", "on_bad_rows")
    }
    key = out.job_key({**decisive, "version": version, "onnx_sha256": artifact.sha256})
    storage.delete(out.join(settings.output_uri, out.JOB_FILE))  # this run is not done until it says so
    plan = BatchPlan(
        job_id=uuid.uuid4().hex[:12],
        model_name=settings.model_name,
        alias=settings.alias,
        version=version,
        onnx_sha256=artifact.sha256,
        settings=values,
        files=[f.as_dict() for f in files],
        shards=split_shards(files, settings.shards),
        key=key,
        started=datetime.now(UTC).isoformat(),
    )
    return plan, artifact


def split_shards(files: list[InputFile], shards: int) -> list[list[int]]:
    """Files to at most ``shards`` groups of about equal size (largest first, to the lightest group)."""
    count = max(1, min(shards, len(files)))
    groups: list[list[int]] = [[] for _ in range(count)]
    weights = [0] * count
    for index in sorted(range(len(files)), key=lambda i: -max(files[i].rows, 1)):
        lightest = weights.index(min(weights))
        groups[lightest].append(index)
        weights[lightest] += max(files[index].rows, 1)
    return [sorted(g) for g in groups]
