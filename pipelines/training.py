"""The training pipeline: prepare → validate → train → evaluate → export → register → gate → promote.

Every parameter has a default and a description, because operators start runs
from the KFP UI form. The same compiled YAML runs under ``kfp.local`` and on a
cluster; only parameter values (tracking URI, artifact root) differ.
"""

from typing import List  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl

from components.evaluate.component import evaluate_model
from components.export_onnx.component import export_onnx_model
from components.model_validation.component import validate_model
from components.model_validation.config import SAMPLE_DIRECTIONAL_TESTS, SAMPLE_INVARIANCE_TESTS
from components.promotion_gate.component import combine_gates, metrics_gate, promote_to_champion
from components.register.component import register_model
from components.train.component import train_model
from components.tune.component import fixed_hyperparameters
from mlops.sample_data import SAMPLE_SCHEMA
from pipelines.stages import tracking_arguments, validated_dataset
from pipelines.tuning import tuning_stage

PIPELINE_NAME = "training"
_INVARIANCE_TESTS = [test.model_dump() for test in SAMPLE_INVARIANCE_TESTS]
_DIRECTIONAL_TESTS = [test.model_dump() for test in SAMPLE_DIRECTIONAL_TESTS]


@dsl.pipeline(
    name=PIPELINE_NAME,
    description="Validate data, train, evaluate, export to ONNX, register and gate a tabular classifier.",
)
def training_pipeline(
    data_uri: str = "",
    sample_rows: int = 5000,
    sample_seed: int = 0,
    label_column: str = SAMPLE_SCHEMA.label,
    numeric_features: List[str] = list(SAMPLE_SCHEMA.numeric_features),  # noqa: B006, UP006
    categorical_features: List[str] = list(SAMPLE_SCHEMA.categorical_features),  # noqa: B006, UP006
    protected_attributes: List[str] = list(SAMPLE_SCHEMA.protected_attributes),  # noqa: B006, UP006
    expectation_suite: str = "",
    model_name: str = "credit-default",
    epochs: int = 20,
    batch_size: int = 256,
    learning_rate: float = 0.001,
    weight_decay: float = 0.0001,
    hidden_units: List[int] = [128, 64],  # noqa: B006, UP006
    dropout: float = 0.1,
    patience: int = 4,
    seed: int = 0,
    nproc: int = 1,
    precision: str = "auto",
    checkpoint_dir: str = "",
    tune_trials: int = 0,
    tune_workers: int = 2,
    tune_max_minutes: float = 60.0,
    tune_study_name: str = "credit-default",
    tune_study_storage: str = "",
    tune_search_space_file: str = "",
    tune_search_space: dict = {},  # noqa: B006
    tune_pruner: str = "median",
    onnx_tolerance: float = 0.0001,
    auc_floor: float = 0.7,
    max_auc_regression: float = 0.01,
    decision_threshold: float = 0.5,
    max_demographic_parity_difference: float = 0.1,
    min_demographic_parity_ratio: float = 0.8,
    max_equalized_odds_difference: float = 0.1,
    min_group_size: int = 30,
    bootstrap_resamples: int = 200,
    min_attribution_rank_agreement: float = 0.6,
    invariance_tests: List[dict] = _INVARIANCE_TESTS,  # noqa: B006, UP006
    directional_tests: List[dict] = _DIRECTIONAL_TESTS,  # noqa: B006, UP006
    git_commit: str = "",
    tracking_uri: str = "",
    experiment: str = "training",
    artifact_root: str = "",
) -> str:
    """Trains a classifier and promotes it to champion when it clears the gate.

    Args:
        data_uri: CSV or Parquet file (local path or s3:// URI). Empty: generate the built-in sample dataset.
        sample_rows: Rows of the sample dataset when data_uri is empty.
        sample_seed: Seed of the sample dataset when data_uri is empty.
        label_column: Binary (0/1) label column.
        numeric_features: Numeric feature columns (NaN allowed; imputed with the training median).
        categorical_features: Categorical feature columns (unseen values map to an 'unknown' code).
        protected_attributes: Columns kept out of the model and used by fairness checks.
        expectation_suite: Path of a Great Expectations suite file. Empty: the built-in credit-default suite.
        model_name: Registered model name in the MLflow model registry.
        epochs: Maximum training epochs.
        batch_size: Global batch size (split across nproc processes).
        learning_rate: AdamW learning rate.
        weight_decay: AdamW weight decay.
        hidden_units: Width of each hidden layer of the MLP.
        dropout: Dropout after each hidden layer.
        patience: Early stopping: epochs without validation improvement before stopping.
        seed: Random seed for the split, initialisation and batching.
        nproc: Training processes (DDP with gloo on CPU, nccl on GPU); 1 = single process.
        precision: auto (bf16 on CPU where supported, fp16 on GPU), fp32, bf16 or fp16.
        checkpoint_dir: Directory for per-epoch checkpoints; a restarted task resumes from it. Empty: inside the task's output.
        tune_trials: Optuna trials before training (0 = off: train with the hyperparameters above).
        tune_workers: Parallel tuning workers sharing one study.
        tune_max_minutes: Tuning wall-time budget; no trial starts after it.
        tune_study_name: Optuna study; an existing one is resumed (trial numbers continue).
        tune_study_storage: Optuna RDB URL (PostgreSQL on a cluster). Empty: optuna.db next to a SQLite tracking store.
        tune_search_space_file: YAML/JSON search space. Empty: components/tune/search_spaces/default.yaml.
        tune_search_space: Parameter ranges replacing or extending the file's, e.g. {"dropout": {"type": "float", "low": 0, "high": 0.3}}.
        tune_pruner: median, hyperband or none; fed the per-epoch validation AUC.
        onnx_tolerance: Largest allowed absolute difference between ONNX Runtime and torch probabilities.
        auc_floor: Minimum test ROC AUC for promotion to champion.
        max_auc_regression: Largest allowed drop in test ROC AUC versus the current champion.
        decision_threshold: Score at or above which the model predicts the positive class (fairness rates).
        max_demographic_parity_difference: Fairness gate: largest allowed gap in selection rate between groups.
        min_demographic_parity_ratio: Fairness gate: smallest allowed ratio of favourable-outcome rates between groups.
        max_equalized_odds_difference: Fairness gate: largest allowed gap in TPR or FPR between groups.
        min_group_size: Groups smaller than this are reported as too small and kept out of threshold checks.
        bootstrap_resamples: Resamples for the fairness metrics' 95% intervals; 0 compares point estimates.
        min_attribution_rank_agreement: Explainability: smallest allowed rank agreement of attributions across two halves of the data.
        invariance_tests: Behavioural checks: features whose perturbation must barely move predictions.
        directional_tests: Behavioural checks: features whose increase must not lower the score.
        git_commit: Commit of the pipeline code, recorded on the model version.
        tracking_uri: MLflow tracking URI. Empty: the task environment's MLFLOW_TRACKING_URI.
        experiment: MLflow experiment for this pipeline's runs.
        artifact_root: Artifact location for a newly created MLflow experiment. Empty: the tracking server's default.

    Returns:
        The registered model version.
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
    with dsl.If(tune_trials > 0, name="tuning"):
        tuned = tuning_stage(
            dataset=validation.outputs["dataset"],
            label_column=label_column,
            numeric_features=numeric_features,
            categorical_features=categorical_features,
            study_name=tune_study_name,
            study_storage=tune_study_storage,
            max_trials=tune_trials,
            max_minutes=tune_max_minutes,
            workers=tune_workers,
            pruner=tune_pruner,
            pruner_startup_trials=2,
            pruner_warmup_epochs=1,
            sampler_seed=seed,
            search_space_file=tune_search_space_file,
            search_space=tune_search_space,
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
    with dsl.Else(name="fixed-hyperparameters"):
        fixed = fixed_hyperparameters(
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            weight_decay=weight_decay,
            hidden_units=hidden_units,
            dropout=dropout,
            patience=patience,
        )

    def chosen(name: str) -> dsl.OneOf:
        return dsl.OneOf(tuned.outputs[name], fixed.outputs[name])

    training = train_model(
        dataset=validation.outputs["dataset"],
        label_column=label_column,
        numeric_features=numeric_features,
        categorical_features=categorical_features,
        epochs=chosen("epochs"),
        batch_size=chosen("batch_size"),
        learning_rate=chosen("learning_rate"),
        weight_decay=chosen("weight_decay"),
        hidden_units=chosen("hidden_units"),
        dropout=chosen("dropout"),
        patience=chosen("patience"),
        seed=seed,
        nproc=nproc,
        precision=precision,
        checkpoint_dir=checkpoint_dir,
        **tracking,
    )
    evaluation = evaluate_model(
        model=training.outputs["model"],
        test_data=training.outputs["test_data"],
        label_column=label_column,
        model_name=model_name,
        **tracking,
    )
    export = export_onnx_model(
        model=training.outputs["model"],
        test_data=training.outputs["test_data"],
        tolerance=onnx_tolerance,
    )
    registration = register_model(
        onnx_model=export.outputs["onnx_model"],
        test_data=training.outputs["test_data"],
        model_name=model_name,
        dataset_digest=validation.outputs["dataset_digest"],
        suite_version=validation.outputs["suite_version"],
        train_run_id=training.outputs["run_id"],
        git_commit=git_commit,
        **tracking,
    )
    gate = metrics_gate(
        model_name=model_name,
        version=registration.outputs["version"],
        test_auc=evaluation.outputs["test_auc"],
        champion_auc=evaluation.outputs["champion_auc"],
        has_champion=evaluation.outputs["has_champion"],
        auc_floor=auc_floor,
        max_auc_regression=max_auc_regression,
        **tracking,
    )
    validation_gate = validate_model(
        model=training.outputs["model"],
        test_data=training.outputs["test_data"],
        label_column=label_column,
        protected_attributes=protected_attributes,
        model_name=model_name,
        version=registration.outputs["version"],
        decision_threshold=decision_threshold,
        max_demographic_parity_difference=max_demographic_parity_difference,
        min_demographic_parity_ratio=min_demographic_parity_ratio,
        max_equalized_odds_difference=max_equalized_odds_difference,
        min_group_size=min_group_size,
        bootstrap_resamples=bootstrap_resamples,
        min_attribution_rank_agreement=min_attribution_rank_agreement,
        invariance_tests=invariance_tests,
        directional_tests=directional_tests,
        **tracking,
    )
    verdict = combine_gates(
        model_name=model_name,
        version=registration.outputs["version"],
        metrics_decision=gate.outputs["Output"],
        metrics_reason=gate.outputs["reason"],
        validation_decision=validation_gate.outputs["Output"],
        validation_reason=validation_gate.outputs["reason"],
        **tracking,
    )
    # The condition uses the single return value: kfp.local cannot resolve named outputs here.
    with dsl.If(verdict.outputs["Output"] == "promote", name="gates-passed"):
        promote_to_champion(model_name=model_name, version=registration.outputs["version"], **tracking)
    return registration.outputs["version"]
