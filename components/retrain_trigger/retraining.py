"""Trigger a retraining when a drift check asks for one, unless the cooldown says not yet.

The trigger runs the platform's own command line, exactly what an operator would type:
``mlops run training`` (local runner, waits for it) or ``mlops submit`` (a run of the
uploaded training pipeline through ``kfp.Client``; credentials stay in the task's
environment). The triggered run records ``trigger`` on the version it registers, so
its lineage names the monitoring run that caused it. The cooldown's clock is a tag on
the registered model (the registry is reachable from a laptop and from a pod alike);
every decision, fired or held back, goes to the audit trail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from components.retrain_trigger.config import RetrainSettings
from mlops.registration_settings import RegistrationSettings
from mlops.tracking.context import TrackingSettings
from mlops.vocabulary import FEATURE_SOURCE_TAGS, LAST_RETRAIN_TAG, SOURCE_SETTINGS

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore

TRIGGERED = "triggered"
COOLDOWN = "cooldown"

# The training pipeline's settings the trigger sets, by address (``mlops run training --help`` lists them).
MODEL_NAME = f"{RegistrationSettings.section}.model_name"
TRIGGER = f"{RegistrationSettings.section}.trigger"
TRACKING_URI = f"{TrackingSettings.section}.tracking_uri"


class TriggerError(RuntimeError):
    """The triggered retraining could not be started (or, locally, failed); the message says where."""


@dataclass(frozen=True)
class Outcome:
    status: str
    """``triggered`` or ``cooldown``."""
    reason: str
    trigger: str
    """The text the triggered run records on its model version (``mlops.trigger``)."""


def cooldown_left(last: str | None, now: datetime, hours: float) -> timedelta | None:
    """Time left in the cooldown after a trigger at ``last`` (ISO); None when none is left."""
    if not last:
        return None
    left = datetime.fromisoformat(last) + timedelta(hours=hours) - now
    return left if left > timedelta(0) else None


def champion_source(store: TrackingStore, model_name: str) -> dict[str, str]:
    """``data.uri`` and ``validation.schema_uri`` the champion was trained with (by address; those set only).

    A model trained on the user's own table retrains on the same source (the table at that URI now,
    which the user refreshes), never on the built-in sample; a champion trained on the sample, registered
    before these were recorded, or whose training run is gone, gives none. A champion trained from the
    feature store retrains on the same entity table joined with the same service, repository and
    timestamp column (its ``mlops.features.*`` tags), so the join picks up the store's newer values.
    """
    from mlops.vocabulary import CHAMPION, PIPELINE_RUN_ID_TAG, TAG_PREFIX

    version = store.alias_version(model_name, CHAMPION)
    if version is None:
        return {}
    tags = store.version_tags(model_name, version)
    train_run, pipeline_run = tags.get(f"{TAG_PREFIX}train_run_id"), tags.get(f"{TAG_PREFIX}kfp_run_id")
    if not train_run or not pipeline_run:
        return {}
    from mlflow.exceptions import MlflowException

    try:
        experiment = store.get_run(train_run).info.experiment_id
    except MlflowException:  # the training run was deleted (or never logged here): nothing recorded to reuse
        return {}
    runs = store.find_runs(
        [experiment],
        f"tags.`{PIPELINE_RUN_ID_TAG}` = '{pipeline_run}' and tags.`mlflow.runName` = 'data_validation'",
        max_results=1,
    )
    params = runs[0].data.params if runs else {}
    source = {key: params[key] for key in SOURCE_SETTINGS if params.get(key)}
    if tags.get(FEATURE_SOURCE_TAGS["data.features.service"]):
        # Trained from the feature store: validate-data read the joined set in that run's folder; a
        # retraining joins the entity table with the service again, picking up the store's newer values.
        source.update({key: tags[tag] for key, tag in FEATURE_SOURCE_TAGS.items() if tags.get(tag)})
    return source


def command(
    settings: RetrainSettings,
    model_name: str,
    tracking_uri: str,
    trigger: str,
    source: dict[str, str] | None = None,
) -> list[str]:
    """The ``mlops`` command line that starts the retraining; every setting it passes is ``--set address=value``.

    The model and the trigger are this monitor's (``settings.overrides`` cannot replace them); locally the
    tracking URI is too, unless the overrides (training settings by address, e.g. ``{"train.epochs": "5"}``)
    name another. ``source`` (:func:`champion_source`) names the data to train on; the overrides win over it.
    """
    ours = {MODEL_NAME: model_name, TRIGGER: trigger}
    if settings.target == "local":
        if not settings.workspace:
            raise TriggerError(
                "retrain.target local needs the retrain.workspace setting (mlops monitor fills it in)"
            )
        if tracking_uri:
            ours[TRACKING_URI] = tracking_uri
        head = ["--workspace", settings.workspace, "run", "training"]
    else:
        head = ["submit", "--pipeline", settings.kfp_pipeline, "--experiment", settings.kfp_experiment]
        if settings.kfp_host:
            head += ["--host", settings.kfp_host]
    given = {k: v for k, v in settings.overrides.items() if k not in (MODEL_NAME, TRIGGER)}
    sets = {**ours, **{k: v for k, v in (source or {}).items() if k not in given}, **given}
    return [sys.executable, "-m", "cli.main", *head, *(f"--set={k}={v}" for k, v in sets.items())]


def run_command(argv: list[str]) -> str:
    print("retraining:", " ".join(argv[2:]), flush=True)
    # A KFP task runs with _KFP_RUNTIME=true, which makes kfp.dsl import only what an executor
    # needs; the mlops command line compiles and runs pipelines, so it must not inherit it.
    env = {key: value for key, value in os.environ.items() if key != "_KFP_RUNTIME"}
    result = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    print(result.stdout[-4000:], flush=True)
    if result.returncode != 0:
        # mlops prints a failed run's reasons with its summary on stdout; an early refusal goes to stderr.
        said = result.stderr.strip() or "\n".join(result.stdout.strip().splitlines()[-12:])
        raise TriggerError(f"the triggered retraining failed (exit {result.returncode}): {said[-2000:]}")
    return result.stdout


def maybe_trigger(
    settings: RetrainSettings,
    model_name: str,
    store: TrackingStore,
    check_run_id: str,
    reasons: str,
    now: datetime | None = None,
    run: object = run_command,
) -> Outcome:
    """Start a retraining of ``model_name`` (registered in ``store``) unless its cooldown runs."""
    from mlops.governance import alerts, audit

    now = now or datetime.now(UTC)
    last = store.registered_model(model_name).tags.get(LAST_RETRAIN_TAG)
    trigger = f"drift-monitor run {check_run_id}"
    left = cooldown_left(last, now, settings.cooldown_hours)
    details = {
        "reasons": reasons,
        "last_trigger": last or "",
        "cooldown_hours": settings.cooldown_hours,
        "force": settings.force,
        "target": settings.target,
    }
    links = {"mlflow_run_id": check_run_id}
    root = settings.workspace or None
    if left is not None and not settings.force:
        reason = f"cooldown: last retraining triggered at {last}, {left} left of {settings.cooldown_hours} h"
        audit.record(
            "retrain.suppressed", model_name, {**details, "why": reason}, links=links, workspace_root=root
        )
        return Outcome(COOLDOWN, reason, trigger)
    argv = command(settings, model_name, store.tracking_uri, trigger, champion_source(store, model_name))
    details["command"] = argv[3:]
    audit.record("retrain.triggered", model_name, details, links=links, workspace_root=root)
    try:
        run(argv)  # type: ignore[operator]
    except TriggerError as exc:
        audit.record(
            "retrain.failed", model_name, {**details, "error": str(exc)}, links=links, workspace_root=root
        )
        raise
    # The cooldown starts once a retraining really started: a failed start is retried by the next check.
    store.tag_model(model_name, {LAST_RETRAIN_TAG: now.isoformat()})
    alerts.send(
        "retrain_triggered", model_name, f"retraining started: {reasons}", {"target": settings.target}
    )
    return Outcome(TRIGGERED, f"retraining started: {reasons}", trigger)
