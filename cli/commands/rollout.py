"""``mlops rollout``: move a challenger towards champion through shadow and canary steps, or undo it.

``start`` runs a rollout in the foreground (analysis every ``--bake-interval-s``) until it
promotes or rolls back; ``status`` shows where the latest one is; ``promote`` and
``rollback`` end it by hand; ``resume`` picks up a running rollout whose controller died (``start``
refuses while one is running, so traffic is never left split with nobody watching); ``history`` answers which version served, with what traffic,
when. The rollout settings are :class:`delivery.rollout.config.RolloutConfig`'s fields, one
flag each. Every step is recorded in the audit trail (``mlops.governance.audit``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.commands.options import add_model_name_option
from mlops.workspace import Workspace

HELP = "progressive delivery: shadow, canary steps, automatic promotion or rollback"


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rollout", help=HELP, description=__doc__.split("\n\n", 1)[1])
    actions = parser.add_subparsers(dest="rollout_action", required=True)
    start = actions.add_parser("start", help="start a rollout and run it until it promotes or rolls back")
    _target_flags(start)
    start.add_argument(
        "--challenger", default=None, help="version to roll out (default: the challenger alias)"
    )
    start.add_argument(
        "--replay",
        default="",
        help="labelled or unlabelled table (CSV/Parquet, path or s3://) replayed through the endpoint during "
        "each interval, for a rollout without live traffic",
    )
    start.add_argument(
        "--quality-log",
        default="",
        help="request-log root the server writes (default <workspace>/request-logs): its rows and the labels "
        "sent with mlops feedback feed the always-valid quality test (rollout.quality_*); 'off': no quality test",
    )
    _config_flags(start)
    _approval_flags(start)
    resume = actions.add_parser(
        "resume", help="resume the model's running rollout from its saved state (after its controller died)"
    )
    _target_flags(resume)
    resume.add_argument("--replay", default="", help="as for start: a table replayed during each interval")
    for name, text in (
        ("status", "where the latest rollout of the model is"),
        ("promote", "promote the rollout's challenger now (alias moves, 100 %% traffic)"),
        ("rollback", "roll the rollout's challenger back now (0 %% traffic, challenger alias removed)"),
        ("history", "which version served, with what traffic, when"),
    ):
        action = actions.add_parser(name, help=text)
        _target_flags(action)
        if name in ("promote", "rollback"):
            action.add_argument("--reason", default=f"manual {name} by an operator", help="recorded with it")
        if name == "promote":
            _approval_flags(action)
    parser.set_defaults(handler=rollout_command)


def _target_flags(parser: argparse.ArgumentParser) -> None:
    add_model_name_option(parser)
    parser.add_argument(
        "--tracking-uri", default=None, help="MLflow store (default: as mlops serve finds it)"
    )
    parser.add_argument(
        "--server-url", default="http://127.0.0.1:8080", help="the mlops serve to drive (default %(default)s)"
    )
    parser.add_argument("--auth-token-file", type=Path, default=None, help="bearer token of the server")
    parser.add_argument(
        "--admin-token-file",
        type=Path,
        default=None,
        help="the server's rollout admin token (default $MLOPS_SERVING_ADMIN_TOKEN; see mlops serve --help)",
    )


def _approval_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--require-approval",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="refuse a challenger without a valid second person's approval (gate.require_approval; a version "
        "put under approval always needs one)",
    )
    parser.add_argument(
        "--approvers",
        type=Path,
        default=None,
        help="folder of trusted approvers' public keys (default $MLOPS_APPROVERS, else <workspace>/approvers)",
    )


def _check_approval(args: argparse.Namespace, workspace: Workspace, registry: Any, version: str) -> None:
    """Refuse, naming what is missing, a challenger that needs an approval and has no valid one."""
    from mlops.governance.approvers import trusted_approvers
    from mlops.tracking.approval_registry import check
    from mlops.vocabulary import APPROVAL_STATUS_TAG, APPROVED

    status = registry.store.version_tags(registry.model_name, version).get(APPROVAL_STATUS_TAG)
    # the trusted keys are read only when there is a signature to verify
    approvers = trusted_approvers(args.approvers, workspace.root) if status == APPROVED else None
    check(registry.store, registry.model_name, version, args.require_approval, approvers)


def _config_flags(parser: argparse.ArgumentParser) -> None:
    from delivery.rollout.config import RolloutConfig

    for field, info in RolloutConfig.model_fields.items():
        # argparse formats help with %: a literal one in a description ("5 % step") must be doubled
        text = " ".join((info.description or "").split()).replace("%", "%%")
        if info.annotation is bool:
            parser.add_argument(
                _flag(field), action=argparse.BooleanOptionalAction, default=info.default, help=text
            )
        elif field == "canary_steps":
            steps = ",".join(str(step) for step in info.default)
            parser.add_argument(_flag(field), default=steps, help=f"{text} (default %(default)s)")
        else:
            kind: type = int if info.annotation is int else float if info.annotation is float else str
            parser.add_argument(
                _flag(field), type=kind, default=info.default, help=f"{text} (default %(default)s)"
            )


def rollout_config(args: argparse.Namespace) -> Any:
    from delivery.rollout.config import RolloutConfig

    values = {field: getattr(args, field) for field in RolloutConfig.model_fields}
    try:
        values["canary_steps"] = tuple(int(step) for step in str(values["canary_steps"]).split(","))
    except ValueError as exc:
        raise ValueError(f"--canary-steps {args.canary_steps!r}: give percentages like 5,25,50,100") from exc
    return RolloutConfig(**values)


def rollout_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from delivery.targets.base import DeploymentError

    try:
        return _act(args, workspace)
    except DeploymentError as exc:  # an unreachable server, a refused plan: one line, exit code 2
        raise ValueError(str(exc)) from exc


def _act(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.model_choice import workspace_model
    from mlops.tracking.context import resolve_tracking

    if args.rollout_action == "start":
        rollout_config(args)  # a bad setting is refused before anything is looked up
    if args.model_name is None:
        tracking_uri = resolve_tracking(workspace, tracking_uri=args.tracking_uri or "").tracking_uri
        args.model_name = workspace_model(None, tracking_uri)
    if args.rollout_action == "history":
        return _history(args, workspace)
    from delivery.rollout.state import StateStore

    store = StateStore(workspace.root)
    if args.rollout_action == "status":
        state = store.load(args.model_name)
        _print_state(state)
        return 0
    controller = _controller(args, workspace, store)
    if args.rollout_action == "start":
        _refuse_a_second_rollout(store, args.model_name)
        return _start(args, workspace, controller)
    state = store.load(args.model_name)
    if args.rollout_action == "resume":
        return _drive(controller, controller.resume(state), _replayer(args))
    if state.done:
        raise ValueError(
            f"the rollout of version {state.challenger} already ended ({state.phase}: {state.reason})"
        )
    if args.rollout_action == "promote":
        _check_approval(args, workspace, controller.registry, state.challenger)
    act = controller.promote if args.rollout_action == "promote" else controller.rollback
    _print_state(act(state, args.reason))
    return 0


def _controller(args: argparse.Namespace, workspace: Workspace, store: Any) -> Any:
    from delivery.rollout.controller import RolloutController
    from delivery.rollout.registry_writes import RolloutRegistry
    from delivery.targets.local import LocalServerTarget
    from mlops.tracking.context import resolve_tracking

    tracking = resolve_tracking(workspace, tracking_uri=args.tracking_uri or "").store
    target = LocalServerTarget(
        args.server_url, tracking, args.model_name, auth_token=_token(args), admin_token=_admin_token(args)
    )
    return RolloutController(target, RolloutRegistry(tracking, args.model_name), workspace.root, store)


def _token(args: argparse.Namespace) -> str:
    if args.auth_token_file is None:
        return ""
    try:
        return str(args.auth_token_file.read_text().strip())
    except OSError as exc:
        raise ValueError(f"--auth-token-file {args.auth_token_file}: {exc.strerror}") from exc


def _refuse_a_second_rollout(store: Any, model_name: str) -> None:
    """A saved rollout still running means its controller died mid-way: traffic may be split with
    nobody watching it; it is resumed or rolled back, never silently replaced."""
    if not store.path(model_name).is_file():
        return
    state = store.load(model_name)
    if not state.done:
        raise ValueError(
            f"a rollout of {model_name} version {state.challenger} is still running at stage {state.stage_name} "
            f"(saved {state.updated_at}) with no controller: run `mlops rollout resume --model-name {model_name}` "
            f"or `mlops rollout rollback --model-name {model_name}` first"
        )


def _replayer(args: argparse.Namespace) -> Any:
    if not args.replay:
        return None
    from delivery.rollout.replay import Replayer
    from mlops.data.dataset import load_table

    frame, _ = load_table(args.replay)
    # The replayer keeps only the model's features (label and other columns may stay in the file).
    return Replayer(args.server_url, args.model_name, frame.to_dict("records"), _token(args))


def _admin_token(args: argparse.Namespace) -> str:
    import os

    from serving.config import ADMIN_TOKEN_ENV

    if args.admin_token_file is None:
        return os.environ.get(ADMIN_TOKEN_ENV, "")
    try:
        return str(args.admin_token_file.read_text().strip())
    except OSError as exc:
        raise ValueError(f"--admin-token-file {args.admin_token_file}: {exc.strerror}") from exc


def _start(args: argparse.Namespace, workspace: Workspace, controller: Any) -> int:
    config = rollout_config(args)
    replay = _replayer(args)
    _check_approval(args, workspace, controller.registry, controller.registry.pair(args.challenger)[1])
    state = controller.start(config, args.challenger)
    if args.quality_log != "off":  # quality judged on the request log and feedback labels as they arrive
        from delivery.rollout.quality_feed import for_rollout

        log_root = args.quality_log or str(workspace.root / "request-logs")
        controller.quality = for_rollout(config, log_root, state, controller.registry.store)
    print(
        f"rollout of {state.model_name} version {state.challenger} against champion {state.champion} on "
        f"{state.target}: stages {', '.join(config.stages)}",
        flush=True,
    )
    return _drive(controller, state, replay)


def _drive(controller: Any, state: Any, replay: Any) -> int:
    """Bake, analyse and act until the rollout ends; the state is saved after every interval."""
    import time

    stage = state.stage_name
    while not state.done:
        (replay or time.sleep)(state.config.bake_interval_s)
        state = controller.tick(state)
        print(f"  [{stage}] interval {state.intervals}: {state.reason}", flush=True)
        stage = state.stage_name
    _print_state(state)
    return 0 if state.phase == "promoted" else 1


def _print_state(state: Any) -> None:
    where = "" if state.done else f" at stage {state.stage_name}"
    print(
        f"{state.model_name}: version {state.challenger} vs champion {state.champion} — {state.phase}{where} "
        f"({state.intervals} intervals, {state.failures} failed, {state.waiting} waiting); {state.reason}"
    )


def _history(args: argparse.Namespace, workspace: Workspace) -> int:
    from delivery.rollout.history import history

    rows = history(args.model_name, workspace.root)
    if not rows:
        print(f"no rollout of {args.model_name} recorded in the audit trail")
        return 0
    print(f"{'at':32} {'event':12} {'stage':7} traffic")
    for row in rows:
        traffic = ", ".join(f"v{version} {percent} %" for version, percent in row.traffic.items())
        shadow = f" + v{row.shadow} shadow" if row.shadow else ""
        print(f"{row.at:32} {row.action:12} {row.stage:7} {traffic}{shadow}  {row.reason[:80]}".rstrip())
    return 0
