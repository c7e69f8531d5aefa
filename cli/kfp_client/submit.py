"""Start a run of an uploaded pipeline version and follow it to a terminal state.

``--set`` values are typed against the parameters of the version that will run (its
spec as stored on the server), so a typo or a wrong type is refused before any
experiment or run is created.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from cli.kfp_client.connection import KfpConnection
from cli.kfp_client.errors import KfpNotFoundError, RunFailedError, translate_errors
from cli.kfp_client.lookup import (
    find_pipeline,
    find_version,
    newest_version,
    pipeline_spec_of,
    version_names,
)

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
        (), description="'key=value' parameter assignments, as given to --set."
    )


@dataclass(frozen=True)
class StartedRun:
    run_id: str
    experiment_id: str
    pipeline_id: str
    version_id: str
    version_name: str
    arguments: dict[str, Any]


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


def _list_type(default: Any) -> str:
    """The element type a LIST parameter's default shows, in the signature spelling parse_overrides reads.

    The IR keeps no element type and stores every number as a double, so the default is
    the only evidence; integral numbers count as int (``[128.0, 64.0]`` is ``[128, 64]``).
    A JSON list value (``--set x='[0.5, 1]'``) is taken as given whatever is inferred here.
    """
    items = default if isinstance(default, list) else []
    if items and all(isinstance(v, str) for v in items):
        return "typing.List[str]"
    if items and all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
        return "typing.List[int]" if all(float(v).is_integer() for v in items) else "typing.List[float]"
    return "List"


def typed_arguments(spec: dict[str, Any], overrides: tuple[str, ...]) -> dict[str, Any]:
    """``--set`` values typed by the spec's root parameters; ParameterError names any bad one."""
    from kfp import components

    from cli.parameters import parse_overrides

    component = components.load_component_from_text(yaml.safe_dump(spec))
    inputs = component.component_spec.inputs or {}
    for name, definition in inputs.items():
        if definition.type == "List":
            inputs[name] = dataclasses.replace(definition, type=_list_type(definition.default))
    return parse_overrides(component, overrides)


def start_run(client: Any, connection: KfpConnection, request: RunRequest) -> StartedRun:
    pipeline, version = _resolve_version(client, connection, request)
    arguments = typed_arguments(pipeline_spec_of(version), request.overrides)
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
