"""KFP wrapper for :mod:`components.data_validation.core`."""

from typing import List, NamedTuple  # noqa: UP035 - KFP's signature parser needs typing.List

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def validate_data(
    data_uri: str,
    label: str,
    numeric_features: List[str],  # noqa: UP006
    categorical_features: List[str],  # noqa: UP006
    protected_attributes: List[str],  # noqa: UP006
    validation: dict,
    tracking: dict,
    dataset: Output[Dataset],
    report_html: Output[HTML],
    report_json: Output[Artifact],
) -> NamedTuple("ValidationOutputs", [("dataset_digest", str), ("suite_version", str)]):  # type: ignore[valid-type]
    """Validates the data against the expectation suite ('' = built-in); fails the run on any broken rule.

    The validated Dataset carries the schema, digest and suite version in its metadata, so later
    steps read them from the artifact instead of repeating parameters.
    """
    from collections import namedtuple
    from pathlib import Path

    from components.data_validation.config import DataValidationSettings
    from components.data_validation.core import run_validation
    from mlops.dataset import SCHEMA_METADATA_KEY, DatasetSchema
    from mlops.settings import flat, from_flat
    from mlops.tracking import TrackingContext

    dataset_schema = DatasetSchema(
        label=label,
        numeric_features=tuple(numeric_features),
        categorical_features=tuple(categorical_features),
        protected_attributes=tuple(protected_attributes),
    )
    settings = from_flat(DataValidationSettings, validation)
    digest, suite_version = run_validation(
        data_uri=data_uri,
        schema=dataset_schema,
        suite_path=settings.expectation_suite.strip() or None,
        tracking_context=TrackingContext.from_dict(tracking),
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
        }
    )
    print(f"data validation passed: {data_uri} (sha256 {digest}) against suite version {suite_version}")
    ValidationOutputs = namedtuple("ValidationOutputs", ["dataset_digest", "suite_version"])
    return ValidationOutputs(digest, suite_version)
