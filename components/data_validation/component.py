"""KFP wrapper for :mod:`components.data_validation.data_validation`."""

from typing import List, NamedTuple  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def validate_data(
    data_uri: str,
    is_sample: bool,
    label: str,
    positive_label: str,
    negative_label: str,
    favourable_class: str,
    numeric_features: List[str],  # noqa: UP006
    categorical_features: List[str],  # noqa: UP006
    protected_attributes: List[str],  # noqa: UP006
    ignored_columns: List[str],  # noqa: UP006
    missing_values: List[str],  # noqa: UP006
    validation: dict,
    invariance: List[dict],  # noqa: UP006
    directional: List[dict],  # noqa: UP006
    tracking: dict,
    pipeline_run_id: str,
    dataset: Output[Dataset],
    report_html: Output[HTML],
    report_json: Output[Artifact],
) -> NamedTuple("ValidationOutputs", [("dataset_digest", str), ("suite_version", str)]):  # type: ignore[valid-type]
    """Validates the data against its declaration (schema file, or the parameters; the built-in
    suite on the sample only); fails the run on any broken rule or unknown column.

    The validated Dataset carries the schema, behavioural tests, digest and suite version in its
    metadata, so later steps read them from the artifact instead of repeating parameters.
    """
    from collections import namedtuple
    from pathlib import Path

    from components.data_validation.config import DataValidationSettings
    from components.data_validation.data_validation import run_validation
    from components.data_validation.declaration import BEHAVIOURAL_METADATA_KEY, resolve
    from mlops.data.behaviour import DirectionalTest, InvarianceTest
    from mlops.data.dataset import SCHEMA_METADATA_KEY, DatasetSchema
    from mlops.settings import flat, from_flat
    from mlops.tracking.context import TrackingContext

    parameters = DatasetSchema.model_validate(
        dict(
            label=label,
            positive_label=positive_label,
            negative_label=negative_label,
            favourable_class=favourable_class,
            numeric_features=tuple(numeric_features),
            categorical_features=tuple(categorical_features),
            protected_attributes=tuple(protected_attributes),
            ignored_columns=tuple(ignored_columns),
            missing_values=tuple(missing_values),
        )
    )
    declaration = resolve(
        parameters,
        from_flat(DataValidationSettings, validation),
        sample=is_sample,
        invariance=[InvarianceTest.model_validate(t) for t in invariance],
        directional=[DirectionalTest.model_validate(t) for t in directional],
    )
    dataset_schema = declaration.schema
    digest, suite_version = run_validation(
        data_uri=data_uri,
        schema=dataset_schema,
        suite_path=declaration.suite_uri,
        tracking_context=TrackingContext.from_dict(tracking, pipeline_run_id),
        dataset_out_path=Path(dataset.path),
        html_path=Path(report_html.path),
        json_path=Path(report_json.path),
    )
    dataset.metadata.update(
        {
            "sha256": digest,
            "suite_version": suite_version,
            "format": "parquet",
            SCHEMA_METADATA_KEY: flat(dataset_schema),
            BEHAVIOURAL_METADATA_KEY: declaration.behavioural_metadata(),
        }
    )
    print(f"data validation passed: {data_uri} (sha256 {digest}) against suite version {suite_version}")
    ValidationOutputs = namedtuple("ValidationOutputs", ["dataset_digest", "suite_version"])
    return ValidationOutputs(digest, suite_version)
