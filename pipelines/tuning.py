"""Hyperparameter tuning: set-up → N parallel workers sharing one Optuna study → best trial.

``tuning_stage`` is the reusable part (the training pipeline adds it behind
``tune_trials > 0``); ``tuning_pipeline`` runs it alone on validated data for
``mlops tune``. Workers are a ``dsl.ParallelFor`` over the indices the set-up
step returns, and the fan-in reads their trial counts through ``dsl.Collected``
only to wait for all of them: the results themselves live in the study.
"""

from typing import Any, List  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl

from components.tune.component import create_tuning_study, run_tuning_worker, select_best_trial
from mlops.sample_data import SAMPLE_SCHEMA
from pipelines.stages import tracking_arguments, validated_dataset

PIPELINE_NAME = "tuning"


def tuning_stage(
    *,
    dataset: Any,
    label_column: Any,
    numeric_features: Any,
    categorical_features: Any,
    study_name: Any,
    study_storage: Any,
    max_trials: Any,
    max_minutes: Any,
    workers: Any,
    pruner: Any,
    pruner_startup_trials: Any,
    pruner_warmup_epochs: Any,
    sampler_seed: Any,
    search_space_file: Any,
    search_space: Any,
    epochs: Any,
    batch_size: Any,
    learning_rate: Any,
    weight_decay: Any,
    hidden_units: Any,
    dropout: Any,
    patience: Any,
    seed: Any,
    precision: Any,
    tracking_uri: Any,
    experiment: Any,
    pipeline_run_id: Any,
    artifact_root: Any,
) -> dsl.PipelineTask:
    """Add set-up, workers and fan-in to the pipeline being defined; returns the fan-in task.

    Arguments are pipeline channels or constants, named like the components' parameters
    (``dataset`` is a Dataset artifact output, e.g. ``validation.outputs["dataset"]``).

    A plain function rather than a nested ``@dsl.pipeline``: kfp.local cannot
    resolve a ``ParallelFor`` over a task output inside a nested pipeline. Its
    outputs ``epochs``, ``batch_size``, ``learning_rate``, ``weight_decay``,
    ``hidden_units``, ``dropout``, ``patience`` feed ``train_model`` directly.
    """
    tracking = {
        "tracking_uri": tracking_uri,
        "experiment": experiment,
        "pipeline_run_id": pipeline_run_id,
        "artifact_root": artifact_root,
    }
    setup = create_tuning_study(
        study_name=study_name,
        study_storage=study_storage,
        max_trials=max_trials,
        max_minutes=max_minutes,
        workers=workers,
        pruner=pruner,
        pruner_startup_trials=pruner_startup_trials,
        pruner_warmup_epochs=pruner_warmup_epochs,
        sampler_seed=sampler_seed,
        search_space_file=search_space_file,
        search_space=search_space,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        hidden_units=hidden_units,
        dropout=dropout,
        patience=patience,
        seed=seed,
        precision=precision,
        **tracking,
    )
    setup.set_caching_options(False)  # it opens a run and stamps the deadline: never reuse it
    with dsl.ParallelFor(setup.outputs["Output"], name="tuning-workers") as worker_index:
        worker = run_tuning_worker(
            dataset=dataset,
            plan=setup.outputs["plan"],
            worker_index=worker_index,
            label_column=label_column,
            numeric_features=numeric_features,
            categorical_features=categorical_features,
            **tracking,
        )
        worker.set_caching_options(False)
    best = select_best_trial(plan=setup.outputs["plan"], trials_run=dsl.Collected(worker.output), **tracking)
    best.set_caching_options(False)
    return best


@dsl.pipeline(name=PIPELINE_NAME, description="Validate data, then tune the classifier's hyperparameters.")
def tuning_pipeline(
    data_uri: str = "",
    sample_rows: int = 5000,
    sample_seed: int = 0,
    label_column: str = SAMPLE_SCHEMA.label,
    numeric_features: List[str] = list(SAMPLE_SCHEMA.numeric_features),  # noqa: B006, UP006
    categorical_features: List[str] = list(SAMPLE_SCHEMA.categorical_features),  # noqa: B006, UP006
    protected_attributes: List[str] = list(SAMPLE_SCHEMA.protected_attributes),  # noqa: B006, UP006
    expectation_suite: str = "",
    study_name: str = "credit-default",
    study_storage: str = "",
    tune_trials: int = 8,
    tune_workers: int = 2,
    tune_max_minutes: float = 60.0,
    pruner: str = "median",
    pruner_startup_trials: int = 2,
    pruner_warmup_epochs: int = 1,
    sampler_seed: int = 0,
    search_space_file: str = "",
    search_space: dict = {},  # noqa: B006
    epochs: int = 20,
    batch_size: int = 256,
    learning_rate: float = 0.001,
    weight_decay: float = 0.0001,
    hidden_units: List[int] = [128, 64],  # noqa: B006, UP006
    dropout: float = 0.1,
    patience: int = 4,
    seed: int = 0,
    precision: str = "auto",
    tracking_uri: str = "",
    experiment: str = "tuning",
    artifact_root: str = "",
) -> float:
    """Searches hyperparameters with Optuna; every trial is an MLflow child run of the tuning run.

    Args:
        data_uri: CSV or Parquet file (local path or s3:// URI). Empty: generate the built-in sample dataset.
        sample_rows: Rows of the sample dataset when data_uri is empty.
        sample_seed: Seed of the sample dataset when data_uri is empty.
        label_column: Binary (0/1) label column.
        numeric_features: Numeric feature columns.
        categorical_features: Categorical feature columns.
        protected_attributes: Columns kept out of the model (checked by data validation).
        expectation_suite: Path of a Great Expectations suite file. Empty: the built-in suite.
        study_name: Optuna study; a run with an existing name resumes it (trial numbers continue).
        study_storage: Optuna RDB URL shared by the workers (PostgreSQL on a cluster). Empty: optuna.db next to a SQLite tracking store.
        tune_trials: New trials this run adds to the study.
        tune_workers: Parallel workers (ParallelFor iterations) sharing the study.
        tune_max_minutes: Wall-time budget; no trial starts after it (whichever of trials/time comes first).
        pruner: median, hyperband or none; fed the per-epoch validation AUC.
        pruner_startup_trials: Median pruner: completed trials before pruning starts.
        pruner_warmup_epochs: Median pruner: first epochs of each trial that are never pruned.
        sampler_seed: Seed of the TPE sampler (offset per worker and per resumed run).
        search_space_file: YAML/JSON search space. Empty: components/tune/search_spaces/default.yaml.
        search_space: Parameter ranges that replace or extend the file's, e.g. {"dropout": {"type": "float", "low": 0, "high": 0.3}}.
        epochs: Maximum epochs per trial (and base value when not tuned).
        batch_size: Base batch size when not tuned.
        learning_rate: Base learning rate when not tuned.
        weight_decay: Base weight decay when not tuned.
        hidden_units: Base hidden layer widths when not tuned.
        dropout: Base dropout when not tuned.
        patience: Early-stopping patience inside each trial.
        seed: Seed of the data split and initialisation, the same for every trial.
        precision: auto, fp32, bf16 or fp16.
        tracking_uri: MLflow tracking URI. Empty: the task environment's MLFLOW_TRACKING_URI.
        experiment: MLflow experiment of the tuning run and its trials.
        artifact_root: Artifact location for a newly created MLflow experiment.

    Returns:
        The best validation ROC AUC in the study.
    """
    tracking = tracking_arguments(tracking_uri, experiment, artifact_root)
    validation = validated_dataset(
        data_uri=data_uri,
        sample_rows=sample_rows,
        sample_seed=sample_seed,
        label_column=label_column,
        numeric_features=numeric_features,
        categorical_features=categorical_features,
        protected_attributes=protected_attributes,
        expectation_suite=expectation_suite,
        tracking=tracking,
    )
    tuned = tuning_stage(
        dataset=validation.outputs["dataset"],
        label_column=label_column,
        numeric_features=numeric_features,
        categorical_features=categorical_features,
        study_name=study_name,
        study_storage=study_storage,
        max_trials=tune_trials,
        max_minutes=tune_max_minutes,
        workers=tune_workers,
        pruner=pruner,
        pruner_startup_trials=pruner_startup_trials,
        pruner_warmup_epochs=pruner_warmup_epochs,
        sampler_seed=sampler_seed,
        search_space_file=search_space_file,
        search_space=search_space,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        hidden_units=hidden_units,
        dropout=dropout,
        patience=patience,
        seed=seed,
        precision=precision,
        **tracking,
    )
    return tuned.outputs["best_val_auc"]
