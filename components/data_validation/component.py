"""KFP wrapper for :mod:`components.data_validation.suite_validation`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def validate_data(
    data_uri: str,
    is_sample: bool,
    schema: dict,
    validation: dict,
    model_validation: dict,
    tracking: dict,
    pipeline_run_id: str,
    dataset: Output[Dataset],
    report_html: Output[HTML],
    report_json: Output[Artifact],
) -> NamedTuple("ValidationOutputs", [("dataset_digest", str), ("suite_version", str)]):  # type: ignore[valid-type]
    """Validates the data against its declaration (the schema file ``validation.schema_uri``, else the
    ``schema`` section; the built-in suite on the sample only); fails the run on any broken rule or
    unknown column.

    ``model_validation`` is that section whole (``{}`` in a pipeline without it): its behavioural
    tests are checked against the data's columns here, before any training.

    The validated Dataset carries the schema, behavioural tests, digest and suite version in its
    metadata, so later steps read them from the artifact instead of repeating parameters.
    """
    from collections import namedtuple
    from pathlib import Path

    from components.data_validation.config import DataValidationSettings
    from components.data_validation.declaration import BEHAVIOURAL_METADATA_KEY, resolve
    from components.data_validation.suite_validation import run_validation
    from mlops.data.behaviour import BehaviouralSuite
    from mlops.data.dataset import SCHEMA_METADATA_KEY, DatasetSchema
    from mlops.model.row_attribution import REASONS_DATASET_KEY
    from mlops.settings import from_section, from_values, section_values
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import DATA_URI_SETTING, SCHEMA_URI_SETTING

    behavioural = from_values(
        BehaviouralSuite, dict(model_validation).get("behavioural"), "model_validation.behavioural"
    )
    settings = from_section(DataValidationSettings, validation)
    declaration = resolve(
        from_section(DatasetSchema, schema),
        settings,
        sample=is_sample,
        invariance=list(behavioural.invariance),
        directional=list(behavioural.directional),
    )
    dataset_schema = declaration.schema
    digest, suite_version = run_validation(
        data_uri=data_uri,
        schema=dataset_schema,
        suite_path=declaration.suite_uri,
        store=TrackingStore.for_task(tracking, pipeline_run_id),
        dataset_out_path=Path(dataset.path),
        html_path=Path(report_html.path),
        json_path=Path(report_json.path),
        # What the run was told to read (the sample's generated file is not a source to retrain on).
        source_settings={
            DATA_URI_SETTING: "" if is_sample else data_uri,
            SCHEMA_URI_SETTING: settings.schema_uri,
        },
    )
    dataset.metadata.update(
        {
            "sha256": digest,
            "suite_version": suite_version,
            "format": "parquet",
            SCHEMA_METADATA_KEY: section_values(dataset_schema),
            BEHAVIOURAL_METADATA_KEY: declaration.behavioural_metadata(),
        }
    )
    if declaration.reasons:  # the schema file's reason texts travel with the data to the register step
        dataset.metadata[REASONS_DATASET_KEY] = declaration.reasons
    print(f"data validation passed: {data_uri} (sha256 {digest}) against suite version {suite_version}")
    ValidationOutputs = namedtuple("ValidationOutputs", ["dataset_digest", "suite_version"])
    return ValidationOutputs(digest, suite_version)
