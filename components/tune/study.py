"""The shared Optuna study: its storage, sampler and pruner, and the plan every worker follows.

Workers never talk to each other: they share one study through Optuna's RDB
storage (a SQLite file next to the MLflow store locally, PostgreSQL on a
cluster), and each reads the same :class:`TuningPlan` the set-up step wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from components.tune.space import SearchSpace
from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG
from training.config import TrainConfig

if TYPE_CHECKING:
    import optuna

SQLITE_TIMEOUT_SECONDS = 30
"""How long a worker waits for another worker's SQLite write lock before failing."""
STUDY_FILE = "optuna.db"


class StudyStorageError(ValueError):
    """The study storage URL is missing, malformed or cannot be reached."""


class TuneSettings(BaseModel):
    """How much to search and how: budget, parallelism, pruning."""

    model_config = SETTINGS_CONFIG

    tune_trials: int = Field(default=0, ge=0, le=10_000)
    """Optuna trials this run adds to the study (training pipeline: 0 = off, train with the hyperparameters given)."""
    tune_study_name: str = Field(
        default="credit-default", min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
    )
    """Optuna study name; a second run with the same name resumes the stored trials."""
    tune_max_minutes: float = Field(default=60.0, gt=0)
    """Tuning wall-time budget from set-up; no trial starts after it."""
    tune_workers: int = Field(default=2, ge=1, le=64)
    """Parallel workers sharing the study."""
    tune_pruner: Literal["median", "hyperband", "none"] = Field(default="median")
    """Stops trials whose per-epoch validation AUC falls behind."""
    tune_pruner_startup_trials: int = Field(default=2, ge=0)
    """Median pruner: trials that finish before any pruning."""
    tune_pruner_warmup_epochs: int = Field(default=1, ge=0)
    """Median pruner: epochs of every trial that are never pruned."""
    tune_sampler_seed: int = Field(default=0, ge=0)
    """Seed of the TPE sampler (offset per worker)."""
    tune_sampler_startup_trials: int = Field(default=10, ge=1)
    """TPE: random trials before the model-based search starts."""
    tune_study_storage: str = Field(default="")
    """Optuna RDB URL (PostgreSQL on a cluster). Empty: optuna.db next to a SQLite tracking store."""
    tune_search_space_file: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """YAML/JSON search space. Empty: components/tune/search_spaces/default.yaml."""
    tune_search_space: dict[str, Any] = Field(default_factory=dict)
    """Parameter ranges replacing or extending the file's, e.g. {"dropout": {"type": "float", "low": 0, "high": 0.3}}."""


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
        return min(self.settings.tune_workers, self.settings.tune_trials)

    def quota(self, worker_index: int) -> int:
        """This worker's share of ``max_trials``: exact in total, without a race on a shared counter."""
        if not 0 <= worker_index < self.worker_count:
            raise ValueError(f"worker_index {worker_index} is outside 0..{self.worker_count - 1}")
        share, extra = divmod(self.settings.tune_trials, self.worker_count)
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

    if settings.tune_pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=settings.tune_pruner_startup_trials,
            n_warmup_steps=settings.tune_pruner_warmup_epochs + 1,  # Optuna steps are our 1-based epochs
        )
    if settings.tune_pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=epochs)
    return optuna.pruners.NopPruner()


def open_study(plan: TuningPlan, worker_index: int = 0) -> optuna.Study:
    """The shared study with this worker's sampler: seeds differ per worker and per resumed run.

    Equal seeds would make parallel workers (and a resumed run's first random
    trials) propose exactly the points already tried.
    """
    import optuna

    sampler = optuna.samplers.TPESampler(
        seed=plan.settings.tune_sampler_seed + 1000 * plan.trials_before + worker_index,
        n_startup_trials=plan.settings.tune_sampler_startup_trials,
        constant_liar=True,
    )
    return optuna.load_study(
        study_name=plan.settings.tune_study_name,
        storage=open_storage(plan.storage),
        sampler=sampler,
        pruner=make_pruner(plan.settings, plan.base.epochs),
    )
