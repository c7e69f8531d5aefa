"""The shared Optuna study: its storage, sampler and pruner, and the plan every worker follows.

Workers never talk to each other: they share one study through Optuna's RDB
storage (a SQLite file next to the MLflow store locally, PostgreSQL on a
cluster), and each reads the same :class:`TuningPlan` the set-up step wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from components.tune.config import TuneSettings
from components.tune.space import SearchSpace
from mlops.settings import SETTINGS_CONFIG
from training.config import TrainConfig

if TYPE_CHECKING:
    import optuna

SQLITE_TIMEOUT_SECONDS = 30
"""How long a worker waits for another worker's SQLite write lock before failing."""
STUDY_FILE = "optuna.db"


class StudyStorageError(ValueError):
    """The study storage URL is missing, malformed or cannot be reached."""


class TuningPlan(BaseModel):
    """Everything a worker and the fan-in step need, written once by the set-up step."""

    model_config = SETTINGS_CONFIG

    settings: TuneSettings
    """Budget, parallelism and pruning."""
    storage: str
    """Resolved RDB storage URL of the study."""
    space: SearchSpace
    """Validated search space."""
    base: TrainConfig
    """Training settings for everything the space does not vary."""
    deadline: float
    """Unix time after which no worker starts a trial."""
    parent_run_id: str
    """MLflow run every trial's run is nested under."""
    trials_before: int = Field(ge=0)
    """Trials the study held before this run (resume)."""

    @property
    def worker_count(self) -> int:
        return min(self.settings.workers, self.settings.trials)

    def quota(self, worker_index: int) -> int:
        """This worker's share of ``max_trials``: exact in total, without a race on a shared counter."""
        if not 0 <= worker_index < self.worker_count:
            raise ValueError(f"worker_index {worker_index} is outside 0..{self.worker_count - 1}")
        share, extra = divmod(self.settings.trials, self.worker_count)
        return share + (1 if worker_index < extra else 0)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, path: Path) -> TuningPlan:
        return cls.model_validate(json.loads(path.read_text()))


def resolve_storage(study_storage: str, tracking_uri: str) -> str:
    """An explicit URL wins; else a SQLite file next to a SQLite MLflow store (the local workspace)."""
    if study_storage.strip():
        return study_storage.strip()
    if tracking_uri.startswith("sqlite:///"):
        return f"sqlite:///{Path(tracking_uri.removeprefix('sqlite:///')).parent / STUDY_FILE}"
    raise StudyStorageError(
        f"study_storage is empty and tracking_uri {tracking_uri!r} is not a SQLite file to keep the study "
        "next to; pass study_storage, e.g. postgresql+psycopg2://optuna@db:5432/optuna"
    )


def redact(url: str) -> str:
    """The URL without its password, for logs and MLflow params."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """Connect (creating Optuna's tables if needed); fail with the redacted URL if that is impossible."""
    import optuna

    if url.startswith("sqlite:///"):
        folder = Path(url.removeprefix("sqlite:///")).parent
        if not folder.is_dir():
            raise StudyStorageError(
                f"study storage {url} is unreachable: folder {folder} does not exist; create it or "
                "pass another study_storage"
            )
        engine_kwargs: dict[str, object] = {"connect_args": {"timeout": SQLITE_TIMEOUT_SECONDS}}
    else:
        engine_kwargs = {"pool_pre_ping": True}
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    except Exception as exc:  # driver errors differ per backend; all mean the same to the user
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StudyStorageError(
            f"study storage {redact(url)} is unreachable ({type(exc).__name__}: {reason}); check the URL, "
            "that the database server is up and that its driver is installed"
        ) from exc


def make_pruner(settings: TuneSettings, epochs: int) -> optuna.pruners.BasePruner:
    import optuna

    if settings.pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=settings.pruner_startup_trials,
            n_warmup_steps=settings.pruner_warmup_epochs + 1,  # Optuna steps are our 1-based epochs
        )
    if settings.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs)
    return optuna.pruners.NopPruner()


def open_study(plan: TuningPlan, worker_index: int = 0) -> optuna.Study:
    """The shared study with this worker's sampler: seeds differ per worker and per resumed run.

    Equal seeds would make parallel workers (and a resumed run's first random
    trials) propose exactly the points already tried.
    """
    import optuna

    sampler = optuna.samplers.TPESampler(
        seed=plan.settings.sampler_seed + 1000 * plan.trials_before + worker_index,
        n_startup_trials=plan.settings.sampler_startup_trials,
        constant_liar=True,
    )
    return optuna.load_study(
        study_name=plan.settings.study_name,
        storage=open_storage(plan.storage),
        sampler=sampler,
        pruner=make_pruner(plan.settings, plan.base.epochs),
    )
