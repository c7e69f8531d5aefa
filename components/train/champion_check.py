"""Before training: can this model's champion score this run's data? If not, stop now, naming the columns.

Without this check a second dataset trained under an existing model's name trains, registers a
version and only then fails at evaluate-model, leaving a stray version behind.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

from mlops.data.dataset import DatasetError
from mlops.vocabulary import CHAMPION

if TYPE_CHECKING:
    from mlops.data.dataset import DatasetSchema
    from mlops.data.features import FeatureSpec
    from mlops.tracking.store import TrackingStore


def compared_version(store: TrackingStore, model_name: str) -> tuple[str, str] | None:
    """The version this run will be measured against: the champion, else the latest version (a model
    whose versions were all rejected is still one model); None for a new model."""
    from mlflow.exceptions import MlflowException

    version = store.alias_version(model_name, CHAMPION)
    if version is not None:
        return version, "champion"
    try:
        versions = store.client.search_model_versions(f"name = '{model_name}'")
    except MlflowException:
        return None
    numbers = sorted((int(v.version) for v in versions), reverse=True)
    return (str(numbers[0]), "latest version") if numbers else None


def champion_spec(store: TrackingStore, model_name: str) -> tuple[str, str, FeatureSpec] | None:
    """The compared version, what it is, and its input contract (from its verified ONNX file); None when
    the model has no version yet."""
    from mlops.model.onnx_model import OnnxScorer, onnx_file

    found = compared_version(store, model_name)
    if found is None:
        return None
    version, role = found
    with tempfile.TemporaryDirectory(prefix="champion-contract-") as tmp:
        local = store.download_version(model_name, version, tmp)
        store.verify_version(model_name, version, local)
        preferred = onnx_file(local)
        if preferred is None:
            return None  # evaluate-model reports a champion without an ONNX file
        return version, role, OnnxScorer.load(preferred).spec


def check_champion_contract(store: TrackingStore, model_name: str, schema: DatasetSchema) -> str | None:
    """Raise :class:`DatasetError` when ``model_name``'s champion (else its latest version) cannot score
    data declared by ``schema``; that version when it can, None for a new model."""
    from mlops.model.input_contract import contract_problems

    found = champion_spec(store, model_name)
    if found is None:
        return None
    version, role, spec = found
    problems = contract_problems(spec, schema)
    if problems:
        raise DatasetError(
            f"the {role} of {model_name!r} (version {version}) cannot score this data: "
            + "; ".join(problems)
            + ". This data trains a different model: give it its own name (model_name in the schema file, "
            "or mlops data init --model-name NEW), or declare the columns the champion uses. Nothing was trained."
        )
    return version
