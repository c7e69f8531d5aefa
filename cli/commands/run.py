"""``mlops run <pipeline>``: run any of the platform's pipelines on this machine (kfp.local).

Every setting of the pipeline is a flag named by its address (``--train.epochs 5``, the
same as ``--set train.epochs=5``; ``mlops run training --help`` lists them by section with
defaults and descriptions); the command fills in only what the local machine decides: the
tracking configuration, absolute paths of the files settings name, the code commit
(:mod:`cli.code_origin`), and the workspace and its request log.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.workspace import Workspace
from pipelines.catalog import PIPELINE_NAMES

RUNNERS = ("subprocess", "docker")
"""kfp.local's runners a local run can use (``--runner``)."""

REQUEST_LOG_DIR = "request-logs"
"""Where ``mlops serve`` logs requests in a workspace, and where a local monitoring run reads them."""

# The settings a local run fills in when the user leaves them unset (by address).
TRACKING_URI = "tracking.tracking_uri"
ARTIFACT_ROOT = "tracking.artifact_root"
EXPERIMENT = "tracking.experiment"
GIT_COMMIT = "registration.git_commit"
WORKSPACE = "retrain.workspace"
REQUEST_LOG = "window.request_log_uri"
DATA_URI = "data.uri"
FEATURE_SERVICE = "data.features.service"
FEATURE_REPO = "data.features.repo"

if TYPE_CHECKING:
    from cli.docker_runner import ImageInEngine
    from cli.local_run import LocalRun, PipelineFailed
    from mlops.tracking.context import ResolvedTracking


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a pipeline locally (kfp.local); `mlops run <pipeline> --help` lists its settings by section",
        description="Run a pipeline with KFP's local runner. Every setting is a flag named by its address "
        "(--train.epochs 5 = --set train.epochs=5).",
    )
    parser.add_argument("pipeline", choices=PIPELINE_NAMES, help="which pipeline to run")
    add_run_options(parser)
    parser.add_argument(
        "arguments",
        nargs=argparse.REMAINDER,
        help="the pipeline's settings (see mlops run <pipeline> --help)",
    )
    parser.set_defaults(handler=run_command)


RUN_OPTIONS_TITLE = "run options"
"""The heading ``mlops run <pipeline> --help`` lists the command's own options under (not settings)."""


def add_run_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The options of the run itself, not of the pipeline: ``mlops run --help`` and every
    ``mlops run <pipeline> --help`` list them from here (they are taken before or after the pipeline's name)."""
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
        "--runner",
        choices=RUNNERS,
        default="subprocess",
        help="where each step runs: 'subprocess' (this environment, the default) or 'docker' (the platform image "
        "in a local Docker engine, kfp.local's DockerRunner: `mlops image build && mlops image load` first)",
    )
    parser.add_argument(
        "--cold-steps",
        action="store_true",
        help="with the subprocess runner, start each step in a new interpreter instead of forking it from the "
        "run's warm process, which imports torch, MLflow and Great Expectations once for all steps",
    )


def run_option_defaults() -> dict[str, Any]:
    """The run options' defaults, by attribute name: what another command that starts a run passes for them."""
    parser = argparse.ArgumentParser(add_help=False)
    add_run_options(parser)
    return vars(parser.parse_args([]))


def parse_pipeline_arguments(name: str, argv: list[str]) -> dict[str, Any]:
    """The user's settings by address (``--set``, and flags, which win), typed; ``--help`` lists them all."""
    from cli.commands.options import SettingsHelpFormatter, add_setting_flags, flag_values
    from cli.parameters import parse_overrides, unknown_address
    from pipelines.catalog import forms

    form = forms()[name]
    parser = argparse.ArgumentParser(
        prog=f"mlops run {name}",
        usage=f"mlops run {name} [-v] [--cache] [--runner {{{','.join(RUNNERS)}}}] [--cold-steps] [--SECTION.FIELD VALUE ...] "
        "[--set SECTION.FIELD=VALUE ...]",
        description=form.description,
        epilog="Every setting has one address, section.field (nested: train.model.dropout): the same in "
        "--set, in MLflow params and on the KFP form, where the settings marked 'per run' are fields of "
        "their own and every other one sits in its section's JSON object. Unset settings keep their "
        f"defaults; {TRACKING_URI} and {ARTIFACT_ROOT} default to the resolved tracking configuration "
        "(MLFLOW_TRACKING_URI, else the workspace).",
        allow_abbrev=False,
        formatter_class=SettingsHelpFormatter,
    )
    add_run_options(
        parser.add_argument_group(
            RUN_OPTIONS_TITLE,
            "how this run runs (before or after the pipeline's name; not pipeline settings)",
        )
    )
    add_setting_flags(parser, form)
    namespace, unknown = parser.parse_known_args(argv)
    if unknown:
        flag = next((arg for arg in unknown if arg.startswith("--")), None)
        if flag is None:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        raise unknown_address(form, flag.removeprefix("--").split("=", 1)[0].replace("-", "_"))
    return {**parse_overrides(form, namespace.overrides), **flag_values(namespace, form)}


def local_arguments(
    name: str, given: dict[str, Any], workspace: Workspace
) -> tuple[dict[str, Any], ResolvedTracking]:
    """Every parameter's value for a local run, and the tracking configuration resolved once.

    Under the user's settings (by address): the tracking URI and artifact root (explicit >
    environment > workspace), settings that name files made absolute and checked, the git
    commit, the workspace and its request log where the pipeline has those settings. Every
    stage's config is validated before anything runs.
    """
    from cli.code_origin import code_commit
    from cli.commands.options import resolve_files
    from cli.model_choice import model_settings
    from cli.parameters import checked_arguments
    from mlops.tracking.context import resolve_tracking
    from pipelines.catalog import forms

    form = forms()[name]
    known = {setting.address for setting in form.settings}
    tracking = resolve_tracking(
        workspace,
        tracking_uri=str(given.get(TRACKING_URI, "")),
        artifact_root=str(given.get(ARTIFACT_ROOT, "")),
        experiment=str(given.get(EXPERIMENT, form.setting(EXPERIMENT).default)),
    )
    local: dict[str, Any] = {TRACKING_URI: tracking.tracking_uri, ARTIFACT_ROOT: tracking.artifact_root}
    local.update(resolve_files(given, {setting.address for setting in form.settings if setting.names_a_file}))
    if GIT_COMMIT in known and not given.get(GIT_COMMIT):
        local[GIT_COMMIT] = code_commit()  # the platform's checkout, wherever the command was started
    if WORKSPACE in known and not given.get(WORKSPACE):
        local[WORKSPACE] = str(workspace.root)
    if REQUEST_LOG in known and not given.get(REQUEST_LOG):
        local[REQUEST_LOG] = str(workspace.root / REQUEST_LOG_DIR)
    if FEATURE_REPO in known and str(given.get(FEATURE_SERVICE, "")).strip():
        if not str(given.get(DATA_URI, "")).strip():
            from components.prepare_data.config import no_entity_table

            raise ValueError(no_entity_table(str(given[FEATURE_SERVICE])))
        local[FEATURE_REPO] = feature_repo(str(given.get(FEATURE_REPO, "")), workspace)
    local.update(model_settings(known, {**given, **local}, tracking.tracking_uri))
    return checked_arguments(form, {**given, **local}), tracking


def feature_repo(given: str, workspace: Workspace) -> str:
    """The feature repository a run joins its entity table in: the given folder made absolute (tasks run
    elsewhere), else the workspace's ``features/`` (where ``mlops features init`` writes it); checked here,
    before anything runs."""
    from cli.commands.options import feature_repo_path
    from mlops.features.repository import STORE_FILE

    repo = feature_repo_path(given, workspace)
    if not (repo / STORE_FILE).is_file():
        raise ValueError(
            f"{FEATURE_REPO}: {repo} is not a feature repository (no {STORE_FILE}); write one with "
            "`mlops features init` (then apply and materialize), or name yours with --data.features.repo"
        )
    return str(repo)


def run_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.local_run import PipelineFailed, run_locally
    from cli.step_cache import forget_entries_of_another_store, note_store
    from cli.summaries import summaries
    from cli.summaries.run_outline import print_failure, print_start
    from mlops.governance.signing import workspace_defaults
    from pipelines.catalog import forms, pipelines

    rest = list(args.arguments)  # the command's own flags may also follow the pipeline's name
    verbose = take_flag(rest, "-v", "--verbose") or args.verbose
    use_cache = take_flag(rest, "--cache") or args.cache
    cold_steps = take_flag(rest, "--cold-steps") or args.cold_steps
    runner_name = take_option(rest, "--runner", RUNNERS) or args.runner
    given = parse_pipeline_arguments(args.pipeline, rest)
    arguments, tracking = local_arguments(args.pipeline, given, workspace)
    tracking.check()  # an unreachable server or a mismatched experiment fails here, before any step
    settings = forms()[args.pipeline].values(arguments)  # by address, for the cache key and the summary
    cache = step_cache(args.pipeline, settings, workspace) if use_cache else None
    if cache is not None and (
        emptied := forget_entries_of_another_store(cache, tracking.tracking_uri, tracking.artifact_root)
    ):
        print(f"step cache {cache}: {emptied}", flush=True)
    try:
        with workspace_defaults(workspace.create().root, sign=True):
            runner, image = (
                docker_step_runner(args.pipeline, settings, workspace, tracking)
                if runner_name == "docker"
                else (None, None)
            )
            print_start(args.pipeline, workspace, tracking)
            if image is not None:
                print_image(image)
            # The warm process starts first: its imports overlap the tracking server's start.
            with (
                warm_process(pipelines()[args.pipeline], workspace, runner_name, cold_steps),
                served_tracking(tracking, workspace, runner_name),
            ):
                result = run_locally(
                    pipelines()[args.pipeline],
                    arguments,
                    workspace,
                    verbose=verbose,
                    cache_root=cache,
                    runner=runner,
                    warm=False,  # started above
                )
                # Inside the block: a summary reads the registry through the run's tracking server.
                facts = summaries()[args.pipeline](workspace, settings, result)
    except PipelineFailed as failure:
        print_failure(failure, workspace)
        save_record(args.pipeline, failure.run, "failed", failure=failure)
        return 1
    finally:
        if cache is not None:
            note_store(cache, tracking.tracking_uri, tracking.artifact_root)
    save_record(args.pipeline, result, "succeeded", facts=facts)
    return 0


def warm_process(pipeline: Any, workspace: Workspace, runner_name: str, cold_steps: bool) -> Any:
    """The run's warm process (:mod:`cli.warm_steps`) for subprocess steps, unless ``--cold-steps``."""
    from contextlib import nullcontext

    from cli.warm_steps.step_runner import warm_steps

    if cold_steps or runner_name != "subprocess":
        return nullcontext()
    return warm_steps(pipeline, workspace)


@contextmanager
def served_tracking(tracking: ResolvedTracking, workspace: Workspace, runner_name: str) -> Iterator[None]:
    """Serve the workspace's tracking store with one ``mlflow server`` for the run
    (:mod:`mlops.tracking.served`): its recording tasks talk to it over REST instead of each opening
    the store (~3 s a task).

    Only the workspace's own SQLite store, and only for subprocess steps: Docker steps keep opening the
    mounted store directly (their environment is fixed when the runner is built, before this). The server
    starts beside the first steps (tasks wait for it); on a fresh workspace the run first waits until the
    server has created the store's tables, so that no step creates them at the same time. It stops when
    the run ends, fails or is interrupted. ``MLOPS_SERVE_TRACKING=0`` turns it off (every task opens the
    store itself: the baseline ``benchmarks/bench_task_startup.py`` measures the server against).
    """
    from mlops.tracking.served import SERVE_ENV, serve_store

    if not tracking.workspace_store or runner_name != "subprocess" or os.environ.get(SERVE_ENV, "1") == "0":
        yield
        return

    log = workspace.pipeline_root / f".mlflow-server-{os.getpid()}.log"
    fresh = not workspace.tracking_db.is_file()
    with serve_store(tracking.tracking_uri, tracking.artifact_root, log) as served:
        if fresh:
            served.wait_until_schema_ready()
        yield


def docker_step_runner(
    name: str, settings: dict[str, Any], workspace: Workspace, tracking: ResolvedTracking
) -> tuple[Any, ImageInEngine]:
    """kfp.local's DockerRunner with the workspace, the tracking store and every file a setting names mounted."""
    from cli.docker_runner import docker_runner, local_store_paths
    from pipelines.catalog import forms

    named = [
        str(settings[s.address]) for s in forms()[name].settings if s.names_a_file and settings.get(s.address)
    ]
    return docker_runner(workspace, named, local_store_paths(tracking.tracking_uri, tracking.artifact_root))


def print_image(image: ImageInEngine) -> None:
    from cli.summaries.run_outline import row
    from mlops.images import PLATFORM_IMAGE

    print(row("steps run in", f"{PLATFORM_IMAGE} (image {image.id}, {image.build_tag}; Docker)"), flush=True)


def take_option(argv: list[str], name: str, choices: tuple[str, ...]) -> str | None:
    """Remove ``name VALUE`` / ``name=VALUE`` from ``argv``; the last value (checked against ``choices``)."""
    value = None
    kept: list[str] = []
    items = iter(argv)
    for arg in items:
        if arg == name:
            value = next(items, "")
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            kept.append(arg)
            continue
        if value not in choices:
            raise ValueError(f"{name} {value!r}: choose one of {', '.join(choices)}")
    argv[:] = kept
    return value


def take_flag(argv: list[str], *names: str) -> bool:
    """Remove every occurrence of the flag ``names`` from ``argv``; whether there was one."""
    found = [arg for arg in argv if arg in names]
    argv[:] = [arg for arg in argv if arg not in names]
    return bool(found)


def step_cache(name: str, settings: dict[str, Any], workspace: Workspace) -> Path:
    """The cache folder for this code and the contents of the files ``settings`` (by address) name, and of
    the feature repository a run joins its entity table in (see :mod:`cli.step_cache`)."""
    from cli.step_cache import cache_root
    from pipelines.catalog import forms

    named = {setting.address for setting in forms()[name].settings if setting.names_a_file}
    if settings.get(FEATURE_SERVICE):  # the join reads the feature repository: its contents are an input
        named.add(FEATURE_REPO)
    return cache_root(workspace.pipeline_root, settings, named)


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
