"""Before training: can this model's champion score this run's data? If not, stop now, naming the columns.

Without this check a second dataset trained under an existing model's name trains, registers a
version and only then fails at evaluate-model, leaving a stray version behind.
"""

from __future__ import annotations

import tempfile
from typing import TYPE_CHECKING

from mlops.data.dataset import DatasetError
from mlops.vocabulary import CHAMPION, LEAK_COLUMNS_TAG

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
        versions = store.search_versions(f"name = '{model_name}'")
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


def flagged_columns(store: TrackingStore, model_name: str, version: str) -> tuple[str, ...]:
    """The columns the leakage gate found likely leaking in ``version`` (its ``mlops.gate.leakage.columns``)."""
    tags = store.version_tags(model_name, version)
    return tuple(c for c in tags.get(LEAK_COLUMNS_TAG, "").split(",") if c)


def left_out(spec: FeatureSpec, schema: DatasetSchema, flagged: tuple[str, ...]) -> list[str] | None:
    """The compared version's inputs this data leaves out on purpose, when they are all it lacks: each in
    the schema's ``ignored_columns`` or among the ``flagged`` (found leaking), the label and every other
    column's type the same. None when something else keeps it from scoring the data."""
    from mlops.model.input_contract import contract_problems

    dropped = [name for name in spec.names if name not in schema.columns]
    purposeful = set(schema.ignored_columns) | set(flagged)
    if not dropped or any(name not in purposeful for name in dropped):
        return None
    declared = set(schema.columns)
    kept = spec.model_copy(
        update={
            "numeric": tuple(n for n in spec.numeric if n in declared),
            "medians": tuple(m for n, m in zip(spec.numeric, spec.medians, strict=True) if n in declared),
            "means": tuple(m for n, m in zip(spec.numeric, spec.means, strict=True) if n in declared),
            "stds": tuple(m for n, m in zip(spec.numeric, spec.stds, strict=True) if n in declared),
            "categorical": tuple(n for n in spec.categorical if n in declared),
            "vocabularies": tuple(
                v for n, v in zip(spec.categorical, spec.vocabularies, strict=True) if n in declared
            ),
        }
    )
    return dropped if not contract_problems(kept, schema) else None


def check_champion_contract(store: TrackingStore, model_name: str, schema: DatasetSchema) -> str | None:
    """Raise :class:`DatasetError` when ``model_name``'s champion (else its latest version) cannot score
    data declared by ``schema``; that version when it can, None for a new model.

    A champion that uses columns this data leaves out on purpose (ignored, or found leaking by the
    leakage gate) is not a reason to refuse: an honest retrain without the leaks must be able to replace
    a champion that had them. Its version is returned and the run goes on; evaluate-model then cannot
    score that champion, and the new model is judged on its own merits (printed here, and in the gate's reason).
    """
    from mlops.model.input_contract import contract_problems

    found = champion_spec(store, model_name)
    if found is None:
        return None
    version, role, spec = found
    problems = contract_problems(spec, schema)
    if not problems:
        return version
    flagged = flagged_columns(store, model_name, version)
    dropped = left_out(spec, schema, flagged)
    if dropped is not None:
        why = [f"{c} (found leaking)" if c in flagged else f"{c} (ignored_columns)" for c in dropped]
        print(
            f"the {role} of {model_name!r} (version {version}) uses column(s) this data leaves out on purpose: "
            f"{', '.join(why)}. It cannot score this data, so this model is judged on its own merits (the AUC "
            f"floor, the leakage and validation gates), not against version {version}, and replaces it if it passes."
        )
        return version
    raise DatasetError(
        f"the {role} of {model_name!r} (version {version}) cannot score this data: "
        + "; ".join(problems)
        + ". This data trains a different model: give it its own name (model_name in the schema file, "
        "or mlops data init --model-name NEW). If the columns it lacks were left out on purpose (a leak), "
        "list them in the schema file's ignored_columns: a retrain without them is then judged on its own "
        "merits. Nothing was trained."
    )
