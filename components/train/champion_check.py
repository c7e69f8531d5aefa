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


def champion_spec(store: TrackingStore, model_name: str) -> tuple[str, FeatureSpec] | None:
    """The champion's version and input contract (from its verified ONNX file); None without a champion."""
    from mlops.model.onnx_model import OnnxScorer

    version = store.alias_version(model_name, CHAMPION)
    if version is None:
        return None
    with tempfile.TemporaryDirectory(prefix="champion-contract-") as tmp:
        local = store.download_version(model_name, version, tmp)
        store.verify_version(model_name, version, local)
        files = sorted(local.rglob("*.onnx"))
        if not files:
            return None  # evaluate-model reports a champion without an ONNX file
        preferred = next((f for f in files if f.name == "model.onnx"), files[0])
        return version, OnnxScorer.load(preferred).spec


def check_champion_contract(store: TrackingStore, model_name: str, schema: DatasetSchema) -> str | None:
    """Raise :class:`DatasetError` when ``model_name``'s champion cannot score data declared by ``schema``;
    the champion's version when it can, None when there is none."""
    from mlops.model.input_contract import contract_problems

    found = champion_spec(store, model_name)
    if found is None:
        return None
    version, spec = found
    problems = contract_problems(spec, schema)
    if problems:
        raise DatasetError(
            f"the champion of {model_name!r} (version {version}) cannot score this data: "
            + "; ".join(problems)
            + ". This data trains a different model: give it its own name (model_name in the schema file, "
            "or mlops data init --model-name NEW), or declare the columns the champion uses. Nothing was trained."
        )
    return version
