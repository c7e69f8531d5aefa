"""Pipeline fragments several pipelines share.

Plain functions rather than ``@dsl.pipeline`` sub-pipelines: kfp.local cannot run a
nested pipeline's ParallelFor, so fragments are composed inline.
"""

from __future__ import annotations

from kfp.dsl.pipeline_task import PipelineTask

from components.data_validation.component import validate_data
from components.prepare_data.component import prepare_data
from pipelines.signature import Parameters


def validated_dataset(parameters: Parameters) -> PipelineTask:
    """prepare-data → validate-data; downstream steps read ``.outputs["dataset"]`` (schema in its metadata).

    validate-data also takes the ``model_validation`` section whole (its behavioural tests), so a
    test naming an unknown column fails before any training; a pipeline without that section
    passes an empty one.
    """
    return prepared_and_validated(parameters)[1]


def prepared_and_validated(parameters: Parameters) -> tuple[PipelineTask, PipelineTask]:
    """:func:`validated_dataset` and the prepare-data task before it, whose ``feature_lineage`` output (the
    feature store's record of a training set built from it) registration turns into version tags."""
    data = prepare_data(data=parameters.section("data"), data_uri=parameters.per_run("data.uri"))
    validation = validate_data(
        data_uri=data.outputs["data_uri"],
        is_sample=data.outputs["is_sample"],
        schema=parameters.section("schema"),
        validation=parameters.section("validation"),
        model_validation=(
            parameters.section("model_validation") if parameters.has_section("model_validation") else {}
        ),
        **parameters.tracking(),
    )
    return data, validation
