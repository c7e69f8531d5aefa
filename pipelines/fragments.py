"""Pipeline fragments several pipelines share.

Plain functions rather than ``@dsl.pipeline`` sub-pipelines: kfp.local cannot run a
nested pipeline's ParallelFor, so fragments are composed inline.
"""

from __future__ import annotations

from kfp.dsl.pipeline_task import PipelineTask

from components.data_validation.component import validate_data
from components.data_validation.config import DataValidationSettings
from components.model_validation.config import ValidationConfig
from components.prepare_data.component import prepare_data
from components.prepare_data.config import DataSettings
from mlops.data.dataset import DatasetSchema
from mlops.settings import SettingsError
from pipelines.signature import Parameters


def validated_dataset(parameters: Parameters) -> PipelineTask:
    """prepare-data → validate-data; downstream steps read ``.outputs["dataset"]`` (schema in its metadata).

    validate-data also takes the behavioural tests, so a test naming an unknown column fails
    before any training.
    """
    data = prepare_data(data=parameters.of(DataSettings))
    return validate_data(
        data_uri=data.outputs["data_uri"],
        is_sample=data.outputs["is_sample"],
        **parameters.unpacked(DatasetSchema),
        **parameters.of(DatasetSchema),
        validation=parameters.of(DataValidationSettings),
        **behavioural_tests(parameters),
        **parameters.tracking(),
    )


def behavioural_tests(parameters: Parameters) -> dict[str, object]:
    """The invariance/directional settings, or empty lists where the pipeline declares no model validation."""
    try:
        return parameters.unpacked(ValidationConfig)
    except SettingsError:
        return {"invariance": [], "directional": []}
