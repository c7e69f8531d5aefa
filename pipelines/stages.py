"""Pipeline fragments shared by several pipelines (plain functions: kfp.local cannot run nested pipelines'
ParallelFor, so fragments are composed inline rather than as ``@dsl.pipeline`` sub-pipelines)."""

from __future__ import annotations

from typing import Any

from kfp import dsl
from kfp.dsl.pipeline_task import PipelineTask

from components.data_validation.component import validate_data
from components.prepare_data.component import prepare_data


def tracking_arguments(tracking_uri: Any, experiment: Any, artifact_root: Any) -> dict[str, Any]:
    """The four tracking parameters every logging component takes; the run id comes from KFP."""
    return {
        "tracking_uri": tracking_uri,
        "experiment": experiment,
        "pipeline_run_id": dsl.PIPELINE_JOB_ID_PLACEHOLDER,
        "artifact_root": artifact_root,
    }


def validated_dataset(
    *,
    data_uri: Any,
    sample_rows: Any,
    sample_seed: Any,
    label_column: Any,
    numeric_features: Any,
    categorical_features: Any,
    protected_attributes: Any,
    expectation_suite: Any,
    tracking: dict[str, Any],
) -> PipelineTask:
    """prepare-data → validate-data; downstream steps read ``.outputs["dataset"]``."""
    data = prepare_data(data_uri=data_uri, sample_rows=sample_rows, sample_seed=sample_seed)
    return validate_data(
        data_uri=data.outputs["Output"],
        label_column=label_column,
        numeric_features=numeric_features,
        categorical_features=categorical_features,
        protected_attributes=protected_attributes,
        expectation_suite=expectation_suite,
        **tracking,
    )
