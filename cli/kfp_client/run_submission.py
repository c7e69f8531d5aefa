"""Start a run of an uploaded pipeline version and follow it to a terminal state.

``--set section.field=value`` is typed and validated by this checkout's form of the
pipeline and placed in the version's own form (its spec as stored on the server): a
per-run setting as its plain parameter, any other inside its section's ``dict`` with the
version's defaults for the rest. A typo, a wrong type or a setting the version lacks is
refused before any experiment or run is created.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from cli.kfp_client.connection import KfpConnection
from cli.kfp_client.kfp_errors import KfpNotFoundError, RunFailedError, translate_errors
from cli.kfp_client.lookup import (
    find_pipeline,
    find_version,
    newest_version,
    pipeline_spec_of,
    version_names,
)
from cli.parameters import ParameterError

if TYPE_CHECKING:
    from pipelines.signature import PipelineForm

TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "SKIPPED", "CANCELED"})


class RunRequest(BaseModel):
    """What to run, where to file it, and with which parameter values."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pipeline: str = Field(description="Display name of the uploaded pipeline, e.g. 'training'.")
    version: str | None = Field(
        None, description="Version display name (the commit); None: the newest version."
    )
    experiment: str = Field(min_length=1, description="KFP experiment for the run; created when missing.")
    run_name: str | None = Field(
        None, description="Run display name; None: '<pipeline> <version> <UTC time>'."
    )
    overrides: tuple[str, ...] = Field(
        (), description="'section.field=value' setting assignments, as given to --set."
    )


@dataclass(frozen=True)
class StartedRun:
    run_id: str
    experiment_id: str
    pipeline_id: str
    version_id: str
    version_name: str
    arguments: dict[str, Any]
    """What the run was started with: per-run parameters and whole section dicts."""
    settings: dict[str, Any]
    """The settings given with ``--set``, by address."""


def _resolve_version(client: Any, connection: KfpConnection, request: RunRequest) -> tuple[Any, Any]:
    target, hint = connection.target, connection.auth_hint()
    with translate_errors(target, hint, f"look up pipeline {request.pipeline!r}"):
        pipeline = find_pipeline(client, request.pipeline, connection.namespace, include_shared=True)
    if pipeline is None:
        raise KfpNotFoundError(
            f"KFP at {target} has no pipeline {request.pipeline!r}; upload it first with "
            f"`mlops upload --pipeline {request.pipeline}`"
        )
    with translate_errors(target, hint, f"look up the versions of {request.pipeline!r}"):
        if request.version is None:
            version = newest_version(client, pipeline.pipeline_id)
        else:
            version = find_version(client, pipeline.pipeline_id, request.version)
        if version is None:
            known = version_names(client, pipeline.pipeline_id)
    if version is None:
        wanted = "versions" if request.version is None else f"version {request.version!r}"
        raise KfpNotFoundError(
            f"pipeline {request.pipeline!r} on {target} has no {wanted} (newest: {', '.join(known) or 'none'}); "
            "upload it with `mlops upload` or pick one with --version"
        )
    return pipeline, version


def _form_of(spec: dict[str, Any], pipeline: str) -> PipelineForm:
    """This checkout's form of the pipeline the version holds (by the name it was compiled under)."""
    from pipelines.catalog import forms

    known = forms()
    name = str((spec.get("pipelineInfo") or {}).get("name") or pipeline)
    if name not in known:
        raise ParameterError(
            f"the version holds pipeline {name!r}, which this checkout does not define "
            f"(it has {', '.join(known)}); --set needs the pipeline's settings"
        )
    return known[name]


def typed_arguments(
    spec: dict[str, Any], overrides: tuple[str, ...], pipeline: str = ""
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``--set address=value`` assignments typed (address → value), and the run's arguments for them
    in the version's own form (parameter → value).

    Addresses and types come from this checkout's form of the pipeline, and the values are
    validated by its stage configs; a per-run setting becomes its plain parameter, any other
    setting its whole section's ``dict`` parameter: the version's default for that section
    (as stored on the server) with the given values on top, since a section argument
    replaces the section's default whole. A setting the version does not have is refused:
    upload the current checkout first. ParameterError names any bad assignment.
    """
    from cli.parameters import checked_arguments, parse_overrides

    if not overrides:
        return {}, {}
    form = _form_of(spec, pipeline)
    values = parse_overrides(form, overrides)
    checked_arguments(form, values)
    inputs = ((spec.get("root") or {}).get("inputDefinitions") or {}).get("parameters") or {}
    version = str((spec.get("pipelineInfo") or {}).get("name") or pipeline)
    arguments: dict[str, Any] = {}
    for address, value in values.items():
        setting = form.setting(address)
        parameter = setting.form_name if setting.per_run else setting.section
        if parameter not in inputs:
            raise ParameterError(
                f"--set {address}: the uploaded version of {version!r} has no parameter {parameter!r}; "
                "upload this checkout (mlops upload) to run with it"
            )
        if setting.per_run:
            arguments[parameter] = _jsonable(value)
            continue
        section = arguments.setdefault(parameter, copy.deepcopy(inputs[parameter].get("defaultValue") or {}))
        target = section
        for part in setting.path[:-1]:
            target = target.setdefault(part, {})
        if setting.path[-1] not in target:
            raise ParameterError(
                f"--set {address}: the uploaded version of {version!r} has no setting {address!r} in its "
                f"{parameter!r} section; upload this checkout (mlops upload) to run with it"
            )
        target[setting.path[-1]] = _jsonable(value)
    return values, arguments


def _jsonable(value: Any) -> Any:
    return [_jsonable(item) for item in value] if isinstance(value, tuple | list) else value


def start_run(client: Any, connection: KfpConnection, request: RunRequest) -> StartedRun:
    pipeline, version = _resolve_version(client, connection, request)
    settings, arguments = typed_arguments(pipeline_spec_of(version), request.overrides, request.pipeline)
    target, hint = connection.target, connection.auth_hint()
    with translate_errors(target, hint, f"get or create experiment {request.experiment!r}"):
        experiment = client.create_experiment(request.experiment, namespace=connection.namespace)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    run_name = request.run_name or f"{request.pipeline} {version.display_name} {stamp}"
    with translate_errors(target, hint, f"start a run of {request.pipeline!r} {version.display_name!r}"):
        run = client.run_pipeline(
            experiment_id=experiment.experiment_id,
            job_name=run_name,
            params=arguments,
            pipeline_id=pipeline.pipeline_id,
            version_id=version.pipeline_version_id,
        )
    return StartedRun(
        run_id=run.run_id,
        experiment_id=experiment.experiment_id,
        pipeline_id=pipeline.pipeline_id,
        version_id=version.pipeline_version_id,
        version_name=version.display_name,
        arguments=arguments,
        settings=settings,
    )


def _state(obj: Any) -> str:
    return str(obj.state or "RUNTIME_STATE_UNSPECIFIED")


def wait_for_run(
    client: Any,
    connection: KfpConnection,
    run_id: str,
    timeout_s: float,
    poll_s: float,
    echo: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """Poll the run, echo each change of the run's or a task's state, return it once terminal.

    Raises RunFailedError when it ends other than SUCCEEDED or is still going after
    ``timeout_s`` (the run itself keeps going on the cluster).
    """
    started = clock()
    seen: dict[str, str] = {}
    while True:
        with translate_errors(connection.target, connection.auth_hint(), f"get the state of run {run_id}"):
            run = client.get_run(run_id)
        elapsed = clock() - started
        state = _state(run)
        if seen.get("") != state:
            echo(f"[{elapsed:7.1f}s] run {state}")
            seen[""] = state
        details = run.run_details.task_details if run.run_details else None
        for task in details or []:
            name = task.display_name or task.task_id
            if name and seen.get(name) != _state(task):
                seen[name] = _state(task)
                echo(f"[{elapsed:7.1f}s]   {name}: {seen[name]}")
        if state in TERMINAL_STATES:
            if state != "SUCCEEDED":
                failed = sorted(name for name, s in seen.items() if name and s == "FAILED")
                reason = run.error.message if run.error and run.error.message else "no error message from KFP"
                where = f"; failed step(s): {', '.join(failed)}" if failed else ""
                raise RunFailedError(f"run {run_id} ended {state}{where}: {reason}", run_id, state)
            return run
        if elapsed > timeout_s:
            raise RunFailedError(
                f"run {run_id} is still {state} after {timeout_s:g}s; it keeps running on the cluster "
                "(raise --timeout to wait longer)",
                run_id,
                state,
            )
        sleep(poll_s)
