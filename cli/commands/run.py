"""``mlops run <pipeline>``: run any of the platform's pipelines on this machine (kfp.local).

The pipeline's own parameters are the command's flags (``mlops run training --help``
lists them with defaults and descriptions); the command fills in only what the
local machine decides: the tracking configuration, the absolute data path and the
git commit.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.workspace import Workspace
from pipelines.catalog import PIPELINE_NAMES

REQUEST_LOG_DIR = "request-logs"
"""Where ``mlops serve`` logs requests in a workspace, and where a local monitoring run reads them."""

if TYPE_CHECKING:
    from cli.local_run import LocalRun, PipelineFailed
    from mlops.settings import Leaf
    from mlops.tracking.context import ResolvedTracking


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a pipeline locally (kfp.local); `mlops run <pipeline> --help` lists its parameters",
        description="Run a pipeline with KFP's local runner. Every pipeline parameter is a flag.",
    )
    parser.add_argument("pipeline", choices=PIPELINE_NAMES, help="which pipeline to run")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="stream every step's raw output too (it is always kept in <run>/logs/<step>.log)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="reuse the outputs of steps whose inputs, code and named files did not change since an earlier "
        "--cache run (kfp.local's step cache)",
    )
    parser.add_argument(
        "arguments",
        nargs=argparse.REMAINDER,
        help="the pipeline's parameters (see mlops run <pipeline> --help)",
    )
    parser.set_defaults(handler=run_command)


def git_commit(cwd: Path) -> str:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def parse_pipeline_arguments(name: str, argv: list[str]) -> dict[str, Any]:
    """The user's parameter values (flags, then ``--set``), typed; ``--help`` prints them all and exits."""
    from cli.commands.options import add_parameter_flags, flag_values
    from cli.parameters import parse_overrides
    from pipelines.catalog import pipelines

    pipeline = pipelines()[name]
    parser = argparse.ArgumentParser(
        prog=f"mlops run {name}",
        usage=f"mlops run {name} [--PARAMETER VALUE ...] [--set PARAMETER=VALUE ...]",
        description=pipeline.description,
        epilog="Unset parameters keep their defaults; tracking_uri and artifact_root default to the "
        "resolved tracking configuration (MLFLOW_TRACKING_URI, else the workspace).",
    )
    add_parameter_flags(parser, pipeline)
    namespace = parser.parse_args(argv)
    return {**parse_overrides(pipeline, namespace.overrides), **flag_values(namespace, pipeline)}


def local_arguments(
    name: str, given: dict[str, Any], workspace: Workspace
) -> tuple[dict[str, Any], ResolvedTracking]:
    """Every parameter's value for a local run, and the tracking configuration resolved once.

    Under the user's values: the tracking URI and artifact root (explicit > environment >
    workspace), settings that name files made absolute and checked, the git commit.
    """
    from cli.commands.options import resolve_files
    from cli.parameters import merged_arguments
    from mlops.settings import iter_settings
    from mlops.tracking.context import resolve_tracking
    from pipelines.catalog import defaults, pipelines

    pipeline = pipelines()[name]
    known = pipeline.component_spec.inputs
    unset = {param: spec.default for param, spec in known.items()}
    tracking = resolve_tracking(
        workspace,
        tracking_uri=str(given.get("tracking_uri", "")),
        artifact_root=str(given.get("artifact_root", "")),
        experiment=str(given.get("experiment", unset["experiment"])),
    )
    base: dict[str, Any] = {"tracking_uri": tracking.tracking_uri, "artifact_root": tracking.artifact_root}
    configs = defaults()[name]
    settings = [leaf for _, leaf in iter_settings(*(type(instance) for instance in configs))]
    base.update(resolve_files(given, {leaf.name for leaf in settings if leaf.names_a_file}))
    if "git_commit" in known and not given.get("git_commit"):
        base["git_commit"] = git_commit(Path.cwd())
    if "workspace" in known and not given.get("workspace"):
        base["workspace"] = str(workspace.root)
    if "request_log_uri" in known and not given.get("request_log_uri"):
        base["request_log_uri"] = str(workspace.root / REQUEST_LOG_DIR)
    overrides = {k: v for k, v in given.items() if k not in base}
    arguments = {**unset, **merged_arguments(pipeline, base, overrides)}
    check_packable_text(arguments, settings)
    check_settings(arguments, configs)
    return arguments, tracking


def check_settings(arguments: dict[str, Any], configs: Any) -> None:
    """Validate every stage's config from the run's values now, not in the task that would use it."""
    from pydantic import ValidationError

    from mlops.settings import from_flat, leaves

    problems = []
    for instance in configs:
        config = type(instance)
        try:
            from_flat(config, {leaf.name: arguments[leaf.name] for leaf in leaves(config)})
        except ValidationError as exc:
            for error in exc.errors():
                where = str(error["loc"][-1]) if error["loc"] else config.__name__
                problems.append(f"{where} {error.get('input')!r}: {error['msg']}")
    if problems:
        raise ValueError("invalid setting(s), nothing was run:\n  " + "\n  ".join(problems))


def check_packable_text(arguments: dict[str, Any], settings: list[Leaf]) -> None:
    """Refuse text that cannot ride inside a task's ``dict`` argument under kfp.local.

    KFP substitutes a parameter inside a dict as raw text, so a double quote or a backslash
    in such a value would corrupt the task's input: say so before anything runs.
    """
    from pipelines.signature import packable

    for leaf in settings:
        value = arguments.get(leaf.name)
        if packable(leaf) and isinstance(value, str) and ('"' in value or "\\" in value):
            raise ValueError(
                f"{leaf.name} {value!r}: a double quote or backslash cannot be passed to a task by the local "
                "runner; remove it (paths and URIs never need one)"
            )


def run_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.local_run import PipelineFailed, run_locally
    from cli.summaries import summaries
    from cli.summaries.common import print_failure, print_start
    from mlops.governance.signing import workspace_defaults
    from pipelines.catalog import pipelines

    rest = list(args.arguments)  # the command's own flags may also follow the pipeline's name
    verbose = take_flag(rest, "-v", "--verbose") or args.verbose
    use_cache = take_flag(rest, "--cache") or args.cache
    given = parse_pipeline_arguments(args.pipeline, rest)
    arguments, tracking = local_arguments(args.pipeline, given, workspace)
    tracking.check()  # an unreachable server or a mismatched experiment fails here, before any step
    print_start(args.pipeline, workspace, tracking)
    cache = step_cache(args.pipeline, arguments, workspace) if use_cache else None
    try:
        with workspace_defaults(workspace.create().root, sign=True):
            result = run_locally(
                pipelines()[args.pipeline], arguments, workspace, verbose=verbose, cache_root=cache
            )
    except PipelineFailed as failure:
        print_failure(failure, workspace)
        save_record(args.pipeline, failure.run, "failed", failure=failure)
        return 1
    facts = summaries()[args.pipeline](workspace, arguments, result)
    save_record(args.pipeline, result, "succeeded", facts=facts)
    return 0


def take_flag(argv: list[str], *names: str) -> bool:
    """Remove every occurrence of the flag ``names`` from ``argv``; whether there was one."""
    found = [arg for arg in argv if arg in names]
    argv[:] = [arg for arg in argv if arg not in names]
    return bool(found)


def step_cache(name: str, arguments: dict[str, Any], workspace: Workspace) -> Path:
    """The cache folder for this code and these files' contents (see :mod:`cli.step_cache`)."""
    from cli.step_cache import cache_root
    from mlops.settings import iter_settings
    from pipelines.catalog import defaults

    configs = defaults()[name]
    named = {leaf.name for _, leaf in iter_settings(*(type(c) for c in configs)) if leaf.names_a_file}
    return cache_root(workspace.pipeline_root, arguments, named)


def save_record(
    name: str,
    run: LocalRun,
    status: str,
    failure: PipelineFailed | None = None,
    facts: dict[str, str] | None = None,
) -> None:
    """Keep what ``mlops runs`` lists in the run's folder (nothing when the run never got one)."""
    from datetime import datetime

    from cli.console.record import RunRecord

    if run.run_dir is None:
        return
    facts = dict(facts or {})
    reasons = facts.pop("reasons", "").splitlines()
    if failure is not None:
        reasons = [failure.headline, *failure.details]
    RunRecord(
        id=run.run_dir.name,
        pipeline=name,
        started=datetime.fromtimestamp(run.started).strftime("%Y-%m-%d %H:%M:%S"),
        status=status,
        seconds=round(run.seconds, 1),
        steps=[step.as_dict() for step in run.steps],
        failed_step=failure.task if failure is not None else "",
        reasons=reasons,
        facts=facts,
        log_dir=str(run.log_dir or ""),
    ).save(run.run_dir)
