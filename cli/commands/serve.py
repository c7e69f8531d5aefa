"""``mlops serve``: serve ``models:/<name>@<alias>`` from the tracking registry over KServe V2/V1.

The flags are generated from :class:`serving.config.ServerConfig`, so every server
setting has exactly one name and one description; only the workspace-dependent
defaults (request-log directory, model cache) are filled in here. The registry is
found like every other command finds it (:func:`mlops.tracking.context.resolve_tracking`:
``--tracking-uri`` > ``MLFLOW_TRACKING_URI`` > the workspace's store). Bad
configuration (an unreachable server, missing S3 credentials) is checked before
anything loads and reported in one line with exit code 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from cli.commands.options import add_feature_repo_option, feature_repo_path
from mlops.tracking.context import check_reachable, resolve_tracking
from mlops.tracking.telemetry import telemetry_off
from mlops.workspace import DEFAULT_WORKSPACE, Workspace

# Fields whose default depends on the workspace; None in the namespace means "use the workspace's".
WORKSPACE_DEFAULTS = {
    "tracking_uri": "$MLFLOW_TRACKING_URI, else the workspace's MLflow store",
    "request_log_uri": "<workspace>/request-logs",
    "model_cache_dir": "<workspace>/serving-cache",
    "model_name": "the workspace's model, when its registry holds exactly one",
    "feature_entity": "the feature repository's entity",
    "feature_max_age_s": "the feature view's TTL",
}


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from serving.config import ADMIN_TOKEN_ENV, ServerConfig

    parser = subparsers.add_parser(
        "serve",
        help="serve a registered model (KServe V2 / V1 REST, dynamic batching, hot reload)",
        description="Serve models:/<model-name>@<alias> with ONNX Runtime; follows the alias as it moves.",
    )
    for field, info in ServerConfig.model_fields.items():
        help_text = info.description or ""
        if field in WORKSPACE_DEFAULTS:
            parser.add_argument(
                _flag(field), default=None, help=f"{help_text} (default {WORKSPACE_DEFAULTS[field]})"
            )
        elif info.annotation is bool:
            parser.add_argument(
                _flag(field), action=argparse.BooleanOptionalAction, default=info.default, help=help_text
            )
        elif field in ("auth_token", "admin_token"):
            parser.add_argument(
                _flag(field), default="", help=f"{help_text} Visible in ps; prefer {_flag(field)}-file."
            )
        else:
            kind = info.annotation if info.annotation in (int, float) else str
            choices = get_args(info.annotation) if get_origin(info.annotation) is Literal else None
            parser.add_argument(
                _flag(field),
                type=kind,
                default=info.default,
                choices=choices,
                help=f"{help_text} (default %(default)s)",
            )
    parser.add_argument(
        "--auth-token-file", type=Path, default=None, help="read the bearer token from this file"
    )
    parser.add_argument(
        "--admin-token-file",
        type=Path,
        default=None,
        help=f"read the rollout admin route's token from this file (else ${ADMIN_TOKEN_ENV})",
    )
    parser.add_argument("--no-request-log", action="store_true", help="do not log requests")
    add_feature_repo_option(
        parser, role="the feature repository --features reads (entity, TTL, features) and serves"
    )
    parser.set_defaults(handler=serve_command)


def server_config(args: argparse.Namespace, workspace: Workspace, tracking_uri: str = "") -> Any:
    """The :class:`ServerConfig` the flags describe (validation errors are ValueErrors).

    ``tracking_uri`` is the resolved store, used when ``--tracking-uri`` is not given.
    """
    from serving.config import ADMIN_TOKEN_ENV, ServerConfig

    values = {field: getattr(args, field) for field in ServerConfig.model_fields}
    if values["tracking_uri"] is None:
        values["tracking_uri"] = tracking_uri or resolve_tracking(workspace).tracking_uri
    if values["model_name"] is None:
        from cli.model_choice import workspace_model

        default = ServerConfig.model_fields["model_name"].default
        values["model_name"] = workspace_model(None, values["tracking_uri"], "--model-name", fallback=default)
    if values["model_cache_dir"] is None:
        values["model_cache_dir"] = str(workspace.root / "serving-cache")
    if values["feature_entity"] is None:
        values["feature_entity"] = ""
    if values["feature_max_age_s"] is None:
        values["feature_max_age_s"] = 0.0
    if args.no_request_log:
        values["request_log_uri"] = ""
    elif values["request_log_uri"] is None:
        values["request_log_uri"] = str(workspace.root / "request-logs")
    values["auth_token"] = _token(values["auth_token"], args.auth_token_file, "--auth-token")
    values["admin_token"] = _token(
        values["admin_token"], args.admin_token_file, "--admin-token"
    ) or os.environ.get(ADMIN_TOKEN_ENV, "")
    return ServerConfig(**values)


def _token(given: str, path: Path | None, flag: str) -> str:
    """A token from its flag or from the file its ``-file`` flag names (not both)."""
    if path is None:
        return given
    if given:
        raise ValueError(f"pass either {flag} or {flag}-file, not both")
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise ValueError(f"{flag}-file {path}: {exc.strerror}") from exc


def serve_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops import storage
    from serving.server import serve

    resolved = resolve_tracking(workspace, tracking_uri=args.tracking_uri or "")
    if resolved.workspace_store and not workspace.tracking_db.is_file():
        raise ValueError(
            f"workspace {workspace.root} has no MLflow store ({workspace.tracking_db}); "
            "run `mlops run training` first, or pass --workspace / --tracking-uri or set MLFLOW_TRACKING_URI"
        )
    if args.model_name is not None:  # without a name, choosing the model has already asked the server
        check_reachable(resolved.tracking_uri)
    from mlops.governance.signing import workspace_defaults

    with ExitStack() as stack:
        check = _feature_store(args, workspace, stack) if args.features else None
        config = server_config(args, workspace, resolved.tracking_uri)
        if config.request_log_uri:
            storage.check_access(config.request_log_uri)  # fail now, not on the first flush minutes later
        print("\n".join(["Serving with:", *resolved.describe()[:1]]), flush=True)
        with workspace_defaults(workspace.root, sign=False):
            serve(config, check)
    return 0


def _feature_store(args: argparse.Namespace, workspace: Workspace, stack: ExitStack) -> Callable[[Any], None]:
    """``--features SERVICE``: the repository's entity and TTL fill the flags left unset, ``feast serve`` over
    it is started for the server's lifetime (on ``stack``) unless ``--feature-server`` names a running one,
    and the returned check refuses a model whose input features the service lacks.

    The feature server is a control-plane piece: started and stopped here, outside the serving process's core,
    which only receives its address."""
    from mlops.features import environment
    from mlops.features.config import FeastSettings
    from mlops.features.environment import FeastError
    from mlops.features.online import FeatureServer
    from mlops.features.repository import read_repository

    service = args.features
    path = feature_repo_path(args.feature_repo, workspace)
    try:
        repo = read_repository(path)
    except FeastError as exc:
        raise ValueError(f"--features {service}: {exc}") from exc
    if repo.service != service:
        raise ValueError(
            f"--features {service!r}: the feature repository {path} declares service {repo.service!r}"
        )
    if args.feature_entity is None:
        args.feature_entity = repo.entity
    if args.feature_max_age_s is None:
        args.feature_max_age_s = repo.ttl.total_seconds()
    if not args.feature_server:
        settings = FeastSettings()
        try:
            server = FeatureServer(
                environment.find(settings), path, settings, path / "data" / "feast-serve.log"
            )
            stack.enter_context(server)
        except FeastError as exc:
            raise ValueError(f"--features {service}: {exc}") from exc
        args.feature_server = server.address
    print(
        f"Features: service {service!r} of {path} from http://{args.feature_server} "
        f"(entity {args.feature_entity!r}, max age {float(args.feature_max_age_s):.0f} s)",
        flush=True,
    )

    def check(model: Any) -> None:
        missing = [name for name in model.spec.names if name not in repo.features]
        if missing:
            raise ValueError(
                f"feature service {service!r} lacks the model's input feature(s) {missing} (it has "
                f"{list(repo.features)}); serve a service that holds them all, or retrain on its features"
            )

    return check


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cli.commands.serve [--workspace DIR] [serve flags]``: the same command, standalone."""
    telemetry_off()  # as `mlops` does (cli.main): before MLflow is imported
    parser = argparse.ArgumentParser(prog="mlops")
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    subparsers = parser.add_subparsers(dest="command")
    add_parser(subparsers)
    args = parser.parse_args(_with_command(argv))
    try:
        return serve_command(args, Workspace(args.workspace))
    except ValueError as exc:
        print(f"mlops serve: error: {exc}", file=sys.stderr)
        return 2


def _with_command(argv: Sequence[str] | None) -> list[str]:
    """Insert the ``serve`` subcommand after the global ``--workspace`` option."""
    args = list(sys.argv[1:] if argv is None else argv)
    head = args[:2] if args[:1] == ["--workspace"] else []
    return head + ["serve"] + args[len(head) :]


if __name__ == "__main__":
    sys.exit(main())
