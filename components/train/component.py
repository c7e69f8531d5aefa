"""KFP wrapper for :mod:`components.train.training_task`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Metrics, Model, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def train_model(
    dataset: Input[Dataset],
    train_config: dict,
    train_task: dict,
    model_name: str,
    tracking: dict,
    pipeline_run_id: str,
    model: Output[Model],
    test_data: Output[Dataset],
    metrics: Output[Metrics],
) -> NamedTuple("TrainOutputs", [("run_id", str), ("val_auc", float)]):  # type: ignore[valid-type]
    """Trains the tabular classifier (DDP when nproc > 1); outputs the best-epoch model and the test split.

    ``train_config`` is the ``train`` section (:class:`~training.config.TrainConfig`: the pipeline's
    or the best tuning trial's) and ``train_task`` that section (the task's own pod resources are
    per-run settings the pipeline applies to this task); the schema comes from the validated dataset's metadata and travels on
    with ``test_data``. Before anything trains, ``model_name``'s champion must be able to score this data.
    """
    import json
    from collections import namedtuple
    from pathlib import Path

    from components.train.champion_check import check_champion_contract
    from components.train.config import TrainTaskSettings
    from components.train.training_task import launcher_for, resolve_checkpoint_dir, run_training
    from mlops.data.dataset import SCHEMA_METADATA_KEY, schema_from_metadata
    from mlops.model.row_attribution import REASONS_DATASET_KEY
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore
    from training.config import TrainConfig

    schema = schema_from_metadata(dataset.metadata, "train-model's dataset")
    task = from_section(TrainTaskSettings, train_task)
    config = from_section(TrainConfig, train_config)
    model_dir = Path(model.path)
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    check_champion_contract(store, model_name, schema)
    outcome = run_training(
        dataset_path=dataset.path,
        schema=schema,
        config=config,
        store=store,
        model_dir=model_dir,
        test_data_path=Path(test_data.path),
        checkpoint_dir=resolve_checkpoint_dir(task.checkpoint_dir, model_dir),
        launcher=launcher_for(task, config.nproc),
    )
    model.metadata.update(
        {"framework": "pytorch", "mlflow_run_id": outcome.run_id, "best_epoch": outcome.best_epoch}
    )
    # the declaration travels on with the test split
    for key in (SCHEMA_METADATA_KEY, "behavioural", REASONS_DATASET_KEY):
        if key in dataset.metadata:
            test_data.metadata[key] = dataset.metadata[key]
    test_data.metadata["split"] = outcome.split_rule  # registered with the version (mlops.split)
    metrics.log_metric("val_auc", outcome.val_auc)
    metrics.log_metric("val_loss", outcome.val_loss)
    metrics.log_metric("epochs_run", outcome.epochs_run)
    metrics.log_metric("samples_per_second", outcome.samples_per_second)
    # The figures also as the artifact's file: kfp.local's --cache treats an output artifact whose file
    # is missing as deleted, so without it train-model would never be a cache hit.
    Path(metrics.path).write_text(json.dumps(metrics.metadata, indent=2, sort_keys=True))
    TrainOutputs = namedtuple("TrainOutputs", ["run_id", "val_auc"])
    return TrainOutputs(outcome.run_id, outcome.val_auc)
