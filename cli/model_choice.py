"""Which registered model a command means when the user names none.

A workspace holds one model per dataset (the schema file's ``model_name``, written by
``mlops data init``). A command that takes a model name (serve, rollout, quantize,
feedback, monitor, score …) uses the workspace's model when the registry holds exactly
one; with none or several it stops and lists them with the flag to pass, never picking
one by chance. ``mlops run training --schema FILE`` registers under the file's
``model_name``; an explicit ``registration.model_name`` that disagrees is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA_URI = "validation.schema_uri"
REGISTRATION_MODEL = "registration.model_name"
STUDY_NAME = "tune.study_name"
WINDOW_MODEL = "window.model_name"
SCORE_MODEL = "score.model"


class ModelChoiceError(ValueError):
    """No single model can be assumed; the message lists the known ones and the flag that names one."""


def registered_models(tracking_uri: str) -> list[str]:
    """Every registered model's name in the store at ``tracking_uri``, sorted; none for a SQLite store
    that does not exist yet (never created by asking)."""
    from mlops.tracking.context import check_reachable
    from mlops.tracking.store import TrackingStore
    from mlops.workspace import workspace_of

    check_reachable(tracking_uri)  # in seconds, not MLflow's minutes of retries against a server that is down
    folder = workspace_of(tracking_uri)
    if folder is not None and not Path(tracking_uri.removeprefix("sqlite:///")).expanduser().is_file():
        return []
    return TrackingStore.from_uri(tracking_uri).registered_model_names()


def choose(known: list[str], flag: str, where: str, usage: str = "") -> str:
    """The one model in ``known``; else a :class:`ModelChoiceError` that says what to pass.

    ``usage``: for a command that takes the model as an argument rather than a flag, the command line
    with ``{name}`` where the name goes (``mlops lineage {name}@champion``); the error then shows that
    line, filled in, for the user to paste.
    """
    if len(known) == 1:
        return known[0]
    if not known:
        how = f"or name one: {usage.format(name='NAME')}" if usage else f"or pass {flag} NAME"
        raise ModelChoiceError(
            f"no registered model in {where}; train one first (mlops data init --data FILE --label COL, then "
            f"mlops run training --data FILE --schema FILE.schema.yaml), {how}"
        )
    which = f", e.g. {usage.format(name=known[0])}" if usage else f" with {flag} NAME, e.g. {flag} {known[0]}"
    raise ModelChoiceError(f"{where} holds {len(known)} models ({', '.join(known)}); say which{which}")


def workspace_model(
    given: str | None, tracking_uri: str, flag: str = "--model-name", fallback: str = "", usage: str = ""
) -> str:
    """``given`` when the user named a model, else the store's only registered model (or a clear error).

    ``fallback``: the name to go on with when the registry holds no model at all, for a command whose
    own check then says what is missing (``mlops serve``: no store, no version). ``usage``: as for
    :func:`choose`.
    """
    if given:
        return given
    from mlops.tracking.store import redact_uri

    known = registered_models(tracking_uri)
    if not known and fallback:
        return fallback
    return choose(known, flag, f"the model registry {redact_uri(tracking_uri)}", usage)


def schema_model_name(schema_uri: str) -> str:
    """The ``model_name`` a schema file declares ('' when it declares none)."""
    from mlops.data.schema_file import load_schema_file

    return load_schema_file(schema_uri).model_name


def model_settings(known: set[str], given: Mapping[str, Any], tracking_uri: str) -> dict[str, Any]:
    """The model-name settings a local run fills in (by address), from the schema file or the workspace.

    - ``registration.model_name`` (and the tuning study's name) from the schema file's ``model_name``;
      a different explicit value is refused, never silently kept or overridden.
    - ``window.model_name`` (monitoring) and ``score.model`` (batch scoring, ``NAME@ALIAS``) from the
      registry when it holds one model; several, or none, is an error naming them.
    """
    filled: dict[str, Any] = {}
    schema_uri = str(given.get(SCHEMA_URI, "") or "")
    names_model = REGISTRATION_MODEL in known or STUDY_NAME in known
    declared = schema_model_name(schema_uri) if schema_uri and names_model else ""
    if declared:
        explicit = given.get(REGISTRATION_MODEL)
        if explicit and explicit != declared:
            raise ModelChoiceError(
                f"--set {REGISTRATION_MODEL}={explicit} disagrees with model_name {declared!r} in the schema "
                f"file {schema_uri}; a dataset trains one model: drop the setting, or edit model_name in the "
                "file (a new name starts a new model)"
            )
        if REGISTRATION_MODEL in known:
            filled[REGISTRATION_MODEL] = declared
        if STUDY_NAME in known and not given.get(STUDY_NAME):
            filled[STUDY_NAME] = declared
    if WINDOW_MODEL in known and not given.get(WINDOW_MODEL):
        filled[WINDOW_MODEL] = workspace_model(None, tracking_uri, "--model-name")
    if SCORE_MODEL in known and not given.get(SCORE_MODEL):
        filled[SCORE_MODEL] = workspace_model(None, tracking_uri, "--model") + "@champion"
    return filled
