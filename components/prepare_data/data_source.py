"""Resolve the pipeline's input data: the user's file, the built-in sample, or a training set built from the
feature store.

An empty ``data.uri`` means "generate the sample dataset", so the pipeline runs
from the KFP UI with its defaults and ``mlops run training`` needs no data. With
``data.features.service`` set, ``data.uri`` is an entity table (ids, event times, labels)
and the training set is its point-in-time join with that feature service
(:func:`mlops.features.training_set.build_training_set`, run in Feast's own venv); its
lineage record (service, views and their definition hashes, the entity table's digest)
goes on to registration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from components.prepare_data.config import DataSettings, no_entity_table
from mlops.data.sample_data import generate


@dataclass(frozen=True)
class PreparedData:
    uri: str
    """What the validation step reads."""
    source: str
    """``sample``, ``file`` or ``features``."""
    feature_lineage: str = ""
    """The feature store's lineage record as JSON (``features`` only)."""


def resolve_data(settings: DataSettings, sample_out: Path) -> str:
    """Return the URI the validation step should read; the sample is written as Parquet."""
    return prepare(settings, sample_out).uri


def prepare(settings: DataSettings, out: Path) -> PreparedData:
    """The data the validation step reads; the sample or the feature store's training set is written to
    ``out`` (Parquet)."""
    uri = settings.uri.strip()
    if settings.features.service.strip():
        return from_feature_store(settings, out)
    if uri:
        check_exists(uri, "data.uri")
        return PreparedData(uri, "file")
    out.parent.mkdir(parents=True, exist_ok=True)
    generate(settings.sample).to_parquet(out, index=False)
    return PreparedData(str(out), "sample")


def check_exists(uri: str, address: str) -> None:
    if not uri.startswith("s3://") and not Path(uri.removeprefix("file://")).is_file():
        raise FileNotFoundError(
            f"{address} {uri!r} is not an existing file; pass a CSV/Parquet path or an s3:// URI"
        )


def from_feature_store(settings: DataSettings, out: Path) -> PreparedData:
    """The entity table joined point-in-time with the service.

    Feast must be set up where the step runs (``mlops features setup``); the platform image has no Feast
    venv, so on a cluster this fails naming that command. An empty ``data.features.repo`` is filled in with
    the workspace's ``features/`` when a local run starts; a task cannot know a workspace, so it refuses one.
    """
    from mlops.features import environment
    from mlops.features.config import FeastSettings
    from mlops.features.training_set import build_training_set

    source = settings.features
    if not settings.uri.strip():
        raise ValueError(no_entity_table(source.service))
    repo = source.repo.strip()
    if not repo:
        raise ValueError(
            "data.features.repo is empty and this task has no workspace to find features/ in; "
            "name the feature repository (a folder with feature_store.yaml) in data.features.repo"
        )
    check_exists(settings.uri.strip(), "data.uri (the entity table)")
    feast = FeastSettings()
    built = build_training_set(
        environment.find(feast),
        Path(repo),
        feast,
        service=source.service.strip(),
        entities_uri=settings.uri.strip(),
        out=out,
        timestamp=source.timestamp,
        allow_missing=source.allow_missing,
    )
    joined_with = {"repo": repo, "timestamp": source.timestamp, "allow_missing": source.allow_missing}
    record = {**built.record, "source": joined_with}
    return PreparedData(str(built.out), "features", json.dumps(record, sort_keys=True))
