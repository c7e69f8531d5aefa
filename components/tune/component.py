"""KFP wrappers for :mod:`components.tune`: set-up, one worker per ``ParallelFor`` iteration, fan-in."""

from typing import List, NamedTuple  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import Artifact, Dataset, Input, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def create_tuning_study(
    study_name: str,
    study_storage: str,
    max_trials: int,
    max_minutes: float,
    workers: int,
    pruner: str,
    pruner_startup_trials: int,
    pruner_warmup_epochs: int,
    sampler_seed: int,
    search_space_file: str,
    search_space: dict,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
    hidden_units: List[int],  # noqa: UP006
    dropout: float,
    patience: int,
    seed: int,
    precision: str,
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
    plan: Output[Artifact],
) -> List[int]:  # noqa: UP006
    """Validates the search space and storage, creates or resumes the study; returns the worker indices.

    The single return value (not a named output) is what ParallelFor loops over: kfp.local cannot
    loop over a named output.
    """
    from pathlib import Path

    from components.tune.core import prepare_study
    from components.tune.study import TuneSettings, resolve_storage
    from mlops.tracking import TrackingContext
    from training.config import TrainConfig

    settings = TuneSettings(
        study_name=study_name,
        max_trials=max_trials,
        max_minutes=max_minutes,
        workers=workers,
        pruner=pruner,  # type: ignore[arg-type]  # validated by pydantic
        pruner_startup_trials=pruner_startup_trials,
        pruner_warmup_epochs=pruner_warmup_epochs,
        sampler_seed=sampler_seed,
    )
    base = TrainConfig.model_validate(
        {
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "weight_decay": weight_decay,
            "model": {"hidden_units": tuple(hidden_units), "dropout": dropout},
            "patience": patience,
            "seed": seed,
            "precision": precision,
        }
    )
    tuning_plan = prepare_study(
        settings=settings,
        base=base,
        storage_url=resolve_storage(study_storage, tracking_uri),
        tracking=TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
        space_file=search_space_file,
        space_overrides=search_space,
    )
    tuning_plan.save(Path(plan.path))
    plan.metadata.update(
        {
            "study_name": study_name,
            "trials_before": tuning_plan.trials_before,
            "parent_run_id": tuning_plan.parent_run_id,
        }
    )
    return list(range(tuning_plan.worker_count))


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def run_tuning_worker(
    dataset: Input[Dataset],
    plan: Input[Artifact],
    worker_index: int,
    label_column: str,
    numeric_features: List[str],  # noqa: UP006
    categorical_features: List[str],  # noqa: UP006
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
) -> int:
    """Runs this worker's share of trials against the shared study; returns how many it ran."""
    from pathlib import Path

    from components.tune.core import run_worker
    from components.tune.study import TuningPlan
    from mlops.dataset import DatasetSchema, load_table
    from mlops.tracking import TrackingContext

    frame, _ = load_table(dataset.path)
    summary = run_worker(
        plan=TuningPlan.load(Path(plan.path)),
        worker_index=int(worker_index),  # a ParallelFor item may arrive as a float under kfp.local
        frame=frame,
        schema=DatasetSchema(
            label=label_column,
            numeric_features=tuple(numeric_features),
            categorical_features=tuple(categorical_features),
        ),
        tracking=TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
    )
    return summary.trials


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def select_best_trial(
    plan: Input[Artifact],
    trials_run: List[int],  # noqa: UP006
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
) -> NamedTuple(  # type: ignore[valid-type]
    "BestHyperparameters",
    [
        ("epochs", int),
        ("batch_size", int),
        ("learning_rate", float),
        ("weight_decay", float),
        ("hidden_units", List[int]),  # noqa: UP006
        ("dropout", float),
        ("patience", int),
        ("best_val_auc", float),
        ("best_trial", int),
    ],
):
    """Picks the study's best trial, logs it and the plots to the parent run; outputs its hyperparameters."""
    from collections import namedtuple
    from pathlib import Path

    from components.tune.best import select_best
    from components.tune.study import TuningPlan
    from mlops.tracking import TrackingContext

    best = select_best(
        TuningPlan.load(Path(plan.path)),
        TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
    )
    print(f"{int(sum(trials_run))} trials this run; best trial {best.number}: val AUC {best.value:.4f}")
    config = best.config
    BestHyperparameters = namedtuple(
        "BestHyperparameters",
        [
            "epochs",
            "batch_size",
            "learning_rate",
            "weight_decay",
            "hidden_units",
            "dropout",
            "patience",
            "best_val_auc",
            "best_trial",
        ],
    )
    return BestHyperparameters(
        config.epochs,
        config.batch_size,
        config.learning_rate,
        config.weight_decay,
        list(config.model.hidden_units),
        config.model.dropout,
        config.patience,
        best.value,
        best.number,
    )


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def fixed_hyperparameters(
    epochs: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
    hidden_units: List[int],  # noqa: UP006
    dropout: float,
    patience: int,
) -> NamedTuple(  # type: ignore[valid-type]
    "FixedHyperparameters",
    [
        ("epochs", int),
        ("batch_size", int),
        ("learning_rate", float),
        ("weight_decay", float),
        ("hidden_units", List[int]),  # noqa: UP006
        ("dropout", float),
        ("patience", int),
    ],
):
    """Passes the pipeline's own hyperparameters on when tuning is off (the dsl.Else branch).

    With it, ``train_model`` takes ``dsl.OneOf`` of two parameter outputs; a OneOf of the two
    branches' artifacts (two ``train_model`` tasks) would not run under kfp.local.
    """
    from collections import namedtuple

    FixedHyperparameters = namedtuple(
        "FixedHyperparameters",
        ["epochs", "batch_size", "learning_rate", "weight_decay", "hidden_units", "dropout", "patience"],
    )
    return FixedHyperparameters(
        epochs, batch_size, learning_rate, weight_decay, [int(w) for w in hidden_units], dropout, patience
    )
