"""Hyperparameter tuning: set-up → N parallel workers sharing one Optuna study → best trial.

``tuning_stage`` is the reusable part (the training pipeline adds it behind
``tune.trials > 0``); ``tuning_pipeline`` runs it alone on validated data for
``mlops run tuning``. Workers are a ``dsl.ParallelFor`` over the indices the set-up
step returns, and the fan-in reads their trial counts through ``dsl.Collected``
only to wait for all of them: the results themselves live in the study.
"""

from __future__ import annotations

from typing import Any

from kfp import dsl

from components.data_validation.config import DataValidationSettings
from components.prepare_data.config import DataSettings
from components.tune.component import create_tuning_study, run_tuning_worker, select_best_trial
from components.tune.config import TuneSettings
from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.tracking.context import TrackingSettings
from pipelines.fragments import validated_dataset
from pipelines.signature import Parameters, PipelineForm
from training.config import TrainConfig

PIPELINE_NAME = "tuning"
DEFAULTS = (
    DataSettings(),
    SAMPLE_SCHEMA,
    DataValidationSettings(),
    TuneSettings(trials=8),  # run alone, tuning is the point: 0 trials would be an error
    TrainConfig(),
    TrackingSettings(experiment=PIPELINE_NAME),
)
PER_RUN = ("data.uri", "tune.trials")
"""The settings a person changes per run: plain parameters of the form; the rest ride in their sections."""


def tuning_stage(parameters: Parameters, dataset: Any) -> dsl.PipelineTask:
    """Add set-up, workers and fan-in to the pipeline being defined; returns the fan-in task.

    ``dataset`` is a validated Dataset output (its metadata carries the schema). The
    fan-in's ``train_config`` output is the best trial's full training settings. A plain
    function rather than a nested ``@dsl.pipeline``: kfp.local cannot resolve a
    ``ParallelFor`` over a task output inside a nested pipeline.
    """
    tracking = parameters.tracking()
    setup = create_tuning_study(
        train=parameters.section("train"),
        tune=parameters.section("tune"),
        tune_trials=parameters.per_run("tune.trials"),
        **tracking,
    )
    setup.set_caching_options(False)  # it opens a run and stamps the deadline: never reuse it
    with dsl.ParallelFor(setup.outputs["Output"], name="tuning-workers") as worker_index:
        worker = run_tuning_worker(
            dataset=dataset, plan=setup.outputs["plan"], worker_index=worker_index, **tracking
        )
        worker.set_caching_options(False)
    best = select_best_trial(plan=setup.outputs["plan"], trials_run=dsl.Collected(worker.output), **tracking)
    best.set_caching_options(False)
    return best


DESCRIPTION = "Validate data, then tune the classifier's hyperparameters."
FORM = PipelineForm(
    PIPELINE_NAME,
    DESCRIPTION,
    DEFAULTS,
    per_run=PER_RUN,
    returns=(float, "The best validation ROC AUC in the study."),
)


@FORM.pipeline
def tuning_pipeline(parameters: Parameters) -> Any:
    validation = validated_dataset(parameters)
    best = tuning_stage(parameters, validation.outputs["dataset"])
    return best.outputs["best_val_auc"]
