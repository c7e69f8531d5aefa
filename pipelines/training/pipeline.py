"""The training pipeline: prepare → validate → train → evaluate → export → register → gate → promote.

With ``rollout.canary`` on, a version that passed the gates is rolled out (shadow, canary steps)
on a running server instead of being promoted at once (``components/canary``).

Every setting comes from a stage's typed config (``DEFAULTS``: the values are the pipeline's
defaults), with its description, because operators start runs from the KFP UI form: the
settings changed per run (``PER_RUN``) are plain parameters, every other one sits in its
section's ``dict`` parameter. The same compiled YAML runs under ``kfp.local`` and on a cluster;
only parameter values (tracking URI, artifact root) differ.
"""

from __future__ import annotations

from typing import Any

from kfp import dsl

from components.canary.component import canary_rollout
from components.canary.config import CanarySettings
from components.data_validation.config import DataValidationSettings
from components.evaluate.component import evaluate_model
from components.export_onnx.component import export_onnx_model
from components.export_onnx.config import ExportSettings
from components.model_validation.component import validate_model
from components.model_validation.config import ValidationConfig
from components.prepare_data.config import DataSettings
from components.promotion_gate.component import combine_gates, metrics_gate, promote_to_champion
from components.promotion_gate.config import MetricsGatePolicy
from components.register.component import register_model
from components.train.component import train_model
from components.train.config import TrainTaskSettings
from components.tune.component import fixed_train_config
from components.tune.config import TuneSettings
from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.registration_settings import RegistrationSettings
from mlops.tracking.context import TrackingSettings
from pipelines.fragments import prepared_and_validated
from pipelines.signature import Parameters, PipelineForm
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
    CanarySettings(),
    TrackingSettings(experiment=PIPELINE_NAME),
)
PER_RUN = (
    "data.uri",
    "registration.model_name",
    "tune.trials",
    "rollout.canary",
    "train_task.cpu_request",
    "train_task.memory_request",
    "train_task.accelerator_type",
    "train_task.accelerator_limit",
)
"""The settings a person changes per run, and those the pipeline itself reads (the tuning and canary
conditions, the train task's own pod resources): plain parameters of the form. 8 of them and 12
section dicts keep the form at 20 fields."""

DESCRIPTION = "Validate data, train, evaluate, export to ONNX, register and gate a tabular classifier."
FORM = PipelineForm(
    PIPELINE_NAME, DESCRIPTION, DEFAULTS, per_run=PER_RUN, returns=(str, "The registered model version.")
)


@FORM.pipeline
def training_pipeline(parameters: Parameters) -> Any:
    tracking = parameters.tracking()
    model_name = parameters.per_run("registration.model_name")
    prepared, validation = prepared_and_validated(parameters)
    with dsl.If(parameters.per_run("tune.trials") > 0, name="tuning"):
        tuned = tuning_stage(parameters, validation.outputs["dataset"])
    with dsl.Else(name="fixed-hyperparameters"):
        fixed = fixed_train_config(train=parameters.section("train"))
    training = train_model(
        dataset=validation.outputs["dataset"],
        train_config=dsl.OneOf(tuned.outputs["train_config"], fixed.outputs["train_config"]),
        train_task=parameters.section("train_task"),
        model_name=model_name,
        **tracking,
    )
    # The task's own pod: the ranks run in it with launcher=local; it only submits and waits otherwise.
    training.set_cpu_request(parameters.per_run("train_task.cpu_request")).set_memory_request(
        parameters.per_run("train_task.memory_request")
    )
    training.set_accelerator_type(parameters.per_run("train_task.accelerator_type"))
    training.set_accelerator_limit(parameters.per_run("train_task.accelerator_limit"))
    model, test_data = training.outputs["model"], training.outputs["test_data"]
    evaluation = evaluate_model(model=model, test_data=test_data, model_name=model_name, **tracking)
    # It scores the registry's current champion, state outside its inputs: a cached answer would compare
    # with a champion that may have changed since. Downstream steps stay cached when its answer is unchanged.
    evaluation.set_caching_options(False)
    export = export_onnx_model(model=model, test_data=test_data, export=parameters.section("export"))
    registration = register_model(
        onnx_model=export.outputs["onnx_model"],
        test_data=test_data,
        registration=parameters.section("registration"),
        registration_model_name=model_name,
        dataset_digest=validation.outputs["dataset_digest"],
        suite_version=validation.outputs["suite_version"],
        train_run_id=training.outputs["run_id"],
        feature_lineage=prepared.outputs["feature_lineage"],
        **tracking,
    )
    version = registration.outputs["version"]
    # Every gate task and the promotion act on this version and log alike.
    on_version = {"model_name": model_name, "version": version, **tracking}
    gate = metrics_gate(
        test_auc=evaluation.outputs["test_auc"],
        champion_auc=evaluation.outputs["champion_auc"],
        has_champion=evaluation.outputs["has_champion"],
        evaluation=evaluation.outputs["metrics"],
        model=model,
        test_data=test_data,
        comparison_auc=evaluation.outputs["comparison_auc"],
        top_feature=evaluation.outputs["top_feature"],
        top_feature_auc=evaluation.outputs["top_feature_auc"],
        gate=parameters.section("gate"),
        **on_version,
    )
    validation_gate = validate_model(
        model=model,
        test_data=test_data,
        model_validation=parameters.section("model_validation"),
        **on_version,
    )
    verdict = combine_gates(
        metrics_decision=gate.outputs["Output"],
        metrics_reason=gate.outputs["reason"],
        validation_decision=validation_gate.outputs["Output"],
        validation_reason=validation_gate.outputs["reason"],
        validation_verdict=validation_gate.outputs["verdict"],
        gate=parameters.section("gate"),
        **on_version,
    )
    # The condition uses the single return value: kfp.local cannot resolve named outputs here.
    with dsl.If(verdict.outputs["Output"] == "promote", name="gates-passed"):
        canary = parameters.per_run("rollout.canary")
        with dsl.If(canary == True, name="canary"):  # noqa: E712 - a KFP condition, not a test
            canary_rollout(rollout=parameters.section("rollout"), rollout_canary=canary, **on_version)
        with dsl.Else(name="direct-promotion"):
            # An act on registry state that may have moved since: never reused from the cache (promoting
            # the version that already is champion is a no-op, so a re-run records nothing twice).
            promote_to_champion(gate=parameters.section("gate"), **on_version).set_caching_options(False)
    return version
