"""KFP wrapper for :mod:`components.train.core`."""

from typing import List, NamedTuple  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import Dataset, Input, Metrics, Model, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def train_model(
    dataset: Input[Dataset],
    label_column: str,
    numeric_features: List[str],  # noqa: UP006
    categorical_features: List[str],  # noqa: UP006
    epochs: int,
    batch_size: int,
    learning_rate: float,
    weight_decay: float,
    hidden_units: List[int],  # noqa: UP006
    dropout: float,
    patience: int,
    seed: int,
    nproc: int,
    precision: str,
    checkpoint_dir: str,
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
    model: Output[Model],
    test_data: Output[Dataset],
    metrics: Output[Metrics],
) -> NamedTuple("TrainOutputs", [("run_id", str), ("val_auc", float)]):  # type: ignore[valid-type]
    """Trains the tabular classifier (DDP when nproc > 1); outputs the best-epoch model and the test split."""
    from collections import namedtuple
    from pathlib import Path

    from components.train.core import resolve_checkpoint_dir, run_training
    from mlops.dataset import DatasetSchema
    from mlops.tracking import TrackingContext
    from training.config import TrainConfig
    from training.model import ModelConfig

    # model_validate: pipeline strings such as precision are checked against the allowed values here.
    config = TrainConfig.model_validate(
        {
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "weight_decay": weight_decay,
            "model": ModelConfig(hidden_units=tuple(hidden_units), dropout=dropout),
            "patience": patience,
            "seed": seed,
            "nproc": nproc,
            "precision": precision,
        }
    )
    schema = DatasetSchema(
        label=label_column,
        numeric_features=tuple(numeric_features),
        categorical_features=tuple(categorical_features),
    )
    model_dir = Path(model.path)
    outcome = run_training(
        dataset_path=dataset.path,
        schema=schema,
        config=config,
        tracking_context=TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root),
        model_dir=model_dir,
        test_data_path=Path(test_data.path),
        checkpoint_dir=resolve_checkpoint_dir(checkpoint_dir, model_dir),
    )
    model.metadata.update(
        {"framework": "pytorch", "mlflow_run_id": outcome.run_id, "best_epoch": outcome.best_epoch}
    )
    metrics.log_metric("val_auc", outcome.val_auc)
    metrics.log_metric("val_loss", outcome.val_loss)
    metrics.log_metric("epochs_run", outcome.epochs_run)
    metrics.log_metric("samples_per_second", outcome.samples_per_second)
    TrainOutputs = namedtuple("TrainOutputs", ["run_id", "val_auc"])
    return TrainOutputs(outcome.run_id, outcome.val_auc)
