"""The training pipeline: prepare → validate → train → evaluate → export → register → gate → promote.

Every parameter comes from a stage's typed config (``DEFAULTS``: the values are the
pipeline's defaults), with its description, because operators start runs from the
KFP UI form. The same compiled YAML runs under ``kfp.local`` and on a cluster; only
parameter values (tracking URI, artifact root) differ.
"""

from __future__ import annotations

from typing import Any

from kfp import dsl

from components.data_validation.config import DataValidationSettings
from components.evaluate.component import evaluate_model
from components.export_onnx.component import export_onnx_model
from components.export_onnx.config import ExportSettings
from components.model_validation.component import validate_model
from components.model_validation.config import ValidationConfig
from components.prepare_data.config import DataSettings
from components.promotion_gate.component import combine_gates, metrics_gate, promote_to_champion
from components.promotion_gate.core import MetricsGatePolicy
from components.register.component import register_model
from components.train.component import train_model
from components.train.config import TrainTaskSettings
from components.tune.component import fixed_train_config
from components.tune.study import TuneSettings
from mlops.registry import RegistrationSettings
from mlops.sample_data import SAMPLE_SCHEMA
from mlops.tracking import TrackingSettings
from pipelines.fragments import validated_dataset
from pipelines.signature import Parameters, settings_pipeline
from pipelines.tuning.pipeline import tuning_stage
from training.config import TrainConfig

PIPELINE_NAME = "training"
DEFAULTS = (
    DataSettings(),
    SAMPLE_SCHEMA,
    DataValidationSettings(),
    TrainConfig(),
    TrainTaskSettings(),
    TuneSettings(),
    ExportSettings(),
    RegistrationSettings(),
    MetricsGatePolicy(),
    ValidationConfig(),
    TrackingSettings(experiment=PIPELINE_NAME),
)


DESCRIPTION = "Validate data, train, evaluate, export to ONNX, register and gate a tabular classifier."


@settings_pipeline(PIPELINE_NAME, DESCRIPTION, DEFAULTS, returns=(str, "The registered model version."))
def training_pipeline(parameters: Parameters) -> Any:
    tracking = parameters.tracking()
    model_name = parameters["model_name"]
    validation = validated_dataset(parameters)
    with dsl.If(parameters["tune_trials"] > 0, name="tuning"):
        tuned = tuning_stage(parameters, validation.outputs["dataset"])
    with dsl.Else(name="fixed-hyperparameters"):
        fixed = fixed_train_config(train_config=parameters.of(TrainConfig))
    training = train_model(
        dataset=validation.outputs["dataset"],
        train_config=dsl.OneOf(tuned.outputs["train_config"], fixed.outputs["train_config"]),
        train_task=parameters.of(TrainTaskSettings),
        tracking=tracking,
    )
    model, test_data = training.outputs["model"], training.outputs["test_data"]
    evaluation = evaluate_model(model=model, test_data=test_data, model_name=model_name, tracking=tracking)
    export = export_onnx_model(model=model, test_data=test_data, export=parameters.of(ExportSettings))
    registration = register_model(
        onnx_model=export.outputs["onnx_model"],
        test_data=test_data,
        model_name=model_name,
        dataset_digest=validation.outputs["dataset_digest"],
        suite_version=validation.outputs["suite_version"],
        train_run_id=training.outputs["run_id"],
        git_commit=parameters["git_commit"],
        tracking=tracking,
    )
    version = registration.outputs["version"]
    # Every gate task and the promotion act on this version and log alike.
    on_version = {"model_name": model_name, "version": version, "tracking": tracking}
    gate = metrics_gate(
        test_auc=evaluation.outputs["test_auc"],
        champion_auc=evaluation.outputs["champion_auc"],
        has_champion=evaluation.outputs["has_champion"],
        policy=parameters.of(MetricsGatePolicy),
        **on_version,
    )
    validation_gate = validate_model(
        model=model,
        test_data=test_data,
        validation=parameters.of(ValidationConfig),
        **on_version,
    )
    verdict = combine_gates(
        metrics_decision=gate.outputs["Output"],
        metrics_reason=gate.outputs["reason"],
        validation_decision=validation_gate.outputs["Output"],
        validation_reason=validation_gate.outputs["reason"],
        **on_version,
    )
    # The condition uses the single return value: kfp.local cannot resolve named outputs here.
    with dsl.If(verdict.outputs["Output"] == "promote", name="gates-passed"):
        promote_to_champion(**on_version)
    return version
