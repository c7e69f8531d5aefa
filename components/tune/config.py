"""How much to search and how: the ``tune`` section (budget, parallelism, pruning, search space)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from mlops.settings import LOCAL_FILE, SETTINGS_CONFIG
from mlops.vocabulary import NAME_PATTERN

OBJECTIVES = ("val_auc", "fairness_gap")
"""What a study can optimise: validation AUC (maximised) and the fairness gap (minimised)."""


class TuneSettings(BaseModel):
    """How much to search and how: budget, parallelism, pruning."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "tune"

    trials: int = Field(default=0, ge=0, le=10_000)
    """Optuna trials this run adds to the study (training pipeline: 0 = off, train with the hyperparameters given)."""
    study_name: str = Field(default="credit-default", min_length=1, pattern=NAME_PATTERN)
    """Optuna study name; a second run with the same name resumes the stored trials."""
    max_minutes: float = Field(default=60.0, gt=0)
    """Tuning wall-time budget from set-up; no trial starts after it."""
    workers: int = Field(default=2, ge=1, le=64)
    """Parallel workers sharing the study."""
    pruner: Literal["median", "hyperband", "none"] = Field(default="median")
    """Stops trials whose per-epoch validation AUC falls behind."""
    pruner_startup_trials: int = Field(default=2, ge=0)
    """Median pruner: trials that finish before any pruning."""
    pruner_warmup_epochs: int = Field(default=1, ge=0)
    """Median pruner: epochs of every trial that are never pruned."""
    sampler_seed: int = Field(default=0, ge=0)
    """Seed of the TPE sampler (offset per worker)."""
    sampler_startup_trials: int = Field(default=10, ge=1)
    """TPE: random trials before the model-based search starts."""
    study_storage: str = Field(default="")
    """Optuna RDB URL (PostgreSQL on a cluster). Empty: optuna.db next to a SQLite tracking store."""
    search_space_file: str = Field(default="", json_schema_extra=LOCAL_FILE)
    """YAML/JSON search space. Empty: components/tune/search_spaces/default.yaml."""
    search_space: dict[str, Any] = Field(default_factory=dict)
    """Parameter ranges replacing or extending the file's, e.g. {"dropout": {"type": "float", "low": 0, "high": 0.3}}."""
    # --- fairness-aware tuning: the study can trade AUC for a smaller fairness gap ---
    objectives: tuple[str, ...] = Field(default=("val_auc",), min_length=1)
    """What the study optimises: val_auc alone (maximised), or with fairness_gap (minimised: the largest demographic-parity or equalized-odds difference over the protected attributes, on the validation split) as a multi-objective study (Pareto front)."""
    max_fairness_gap: float = Field(default=0.1, ge=0.0, le=1.0)
    """The declared selection rule's limit: from the Pareto front, the trial handed to training is the highest val_auc whose fairness_gap is at most this (the fairness gate's default limits are 0.1)."""

    @field_validator("objectives")
    @classmethod
    def _auc_first(cls, objectives: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(objectives) - set(OBJECTIVES))
        if unknown:
            raise ValueError(f"objectives {unknown} unknown; choose from {list(OBJECTIVES)}")
        if objectives[0] != "val_auc" or len(set(objectives)) != len(objectives):
            raise ValueError(
                f"objectives {list(objectives)}: list val_auc first, each objective once, e.g. [val_auc, fairness_gap]"
            )
        return objectives

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1
