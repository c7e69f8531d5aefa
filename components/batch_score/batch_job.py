"""What the three steps of a batch scoring job share: the plan, a shard's counts, the verified model.

A job is planned (:mod:`components.batch_score.batch_plan`: model, files, shards), each shard is scored
chunk by chunk (:mod:`components.batch_score.batch_shard`) and the job is finished
(:mod:`components.batch_score.batch_finish`). ``mlops score`` runs the three in one process; the
``batch_scoring`` pipeline runs the plan, one task per shard (``dsl.ParallelFor``) and the finish. The
plan resolves ``NAME@ALIAS`` once, so every shard scores with the same version even if the alias moves
mid-job; every shard fetches that version through :class:`serving.model_source.RegisteredModelSource`, which
checks its digest and its signature before ONNX Runtime sees the bytes (the server's loader).

A job is resumable: a chunk whose manifest agrees with the job and the input is skipped
(:mod:`components.batch_score.chunk_writer`). Only a finished job writes ``_job.json``
and a ``batch.scored`` audit record; a refused or failed one records nothing as done.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.batch_score.chunk_reader import BatchInputError, InputFile, Opened
from components.batch_score.config import ScoreSettings

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore
    from serving.model_source import ModelArtifact

SHOWN_BAD_VALUES = 10


class ModelRefused(ValueError):
    """The model cannot be used for this job (alias unresolved, digest or signature wrong); nothing was scored."""


@dataclass
class BatchPlan:
    """What every task of one job agrees on."""

    job_id: str
    model_name: str
    alias: str
    version: str
    onnx_sha256: str
    settings: dict[str, Any]
    """The ``score`` section, as validated."""
    files: list[dict[str, Any]]
    shards: list[list[int]]
    """Per shard, the indices of its files."""
    key: str
    """:func:`chunk_writer.job_key` of the settings that decide the output."""
    started: str

    @property
    def score(self) -> ScoreSettings:
        return ScoreSettings.model_validate(self.settings)

    def inputs(self) -> list[InputFile]:
        return [InputFile(**f) for f in self.files]

    @property
    def total_rows(self) -> int | None:
        rows = [f["rows"] for f in self.files]
        return None if any(r < 0 for r in rows) else sum(rows)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> BatchPlan:
        return cls(**json.loads(path.read_text()))


@dataclass
class ShardResult:
    """What one shard did; the finish step adds them up."""

    rows_read: int = 0
    rows_scored: int = 0
    rows_bad: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    file_digests: dict[str, str] = field(default_factory=dict)
    """Partition → SHA-256 of the input file's bytes."""
    bad_examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ShardResult:
        return cls(**json.loads(text))


def fetch_model(store: TrackingStore, model_name: str, version: str, cache_dir: Path) -> ModelArtifact:
    """The verified local copy of ``version`` (digest and signature checked), or :class:`ModelRefused`."""
    from mlops.governance.signing import SignatureError
    from serving.model_source import RegisteredModelSource, RegistryError

    registry = RegisteredModelSource(store, model_name, cache_dir)
    try:
        return registry.fetch(version)
    except (SignatureError, RegistryError) as exc:
        raise ModelRefused(
            f"batch scoring refused {model_name} version {version}, nothing was scored: {exc}"
        ) from exc


def check_columns(opened: Opened, features: tuple[str, ...], settings: ScoreSettings) -> list[str]:
    """The columns to read from this file; an error naming what the file lacks and what it has."""
    present = set(opened.columns)
    wanted = [
        *features,
        *([settings.id_column] if settings.id_column else []),
        *settings.pass_through_columns,
    ]
    absent = [c for c in wanted if c not in present]
    if absent:
        role = {c: "feature" for c in features} | {settings.id_column: "score.id_column"}
        named = ", ".join(f"{c!r} ({role.get(c, 'score.pass_through_columns')})" for c in absent)
        raise BatchInputError(
            f"input {opened.file.uri} lacks column(s) {named}; it has {sorted(present)}. Score files that hold "
            "the model's features (other columns are dropped), or fix score.id_column / score.pass_through_columns"
        )
    return list(dict.fromkeys(wanted))
