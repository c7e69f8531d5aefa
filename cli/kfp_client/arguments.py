"""The connection flags shared by ``mlops upload`` and ``mlops submit``, and their environment fallbacks.

This is the one place that reads ``KFP_HOST``, ``KFP_TOKEN`` and ``KFP_TOKEN_FILE``:
a flag wins over the variable, and the result is a validated :class:`KfpConnection`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from cli.kfp_client.connection import KfpConnection

ENV_HOST = "KFP_HOST"
ENV_TOKEN = "KFP_TOKEN"
ENV_TOKEN_FILE = "KFP_TOKEN_FILE"
ENV_NAMESPACE = "KFP_NAMESPACE"
EXIT_KFP_ERROR = 3
"""Exit code of ``upload`` and ``submit`` when KFP cannot be reached or refuses the credentials."""


def add_remote_command(
    subparsers: argparse._SubParsersAction, name: str, help_text: str, doc: str
) -> argparse.ArgumentParser:
    """A KFP command's parser: its description is the module docstring's body, ``--pipeline`` names the
    pipeline on KFP, and the connection flags come last."""
    parser = subparsers.add_parser(name, help=help_text, description=doc.split("\n\n", 1)[1])
    parser.add_argument("--pipeline", default="training", help="pipeline name on KFP (default training)")
    return parser


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("KFP connection")
    group.add_argument(
        "--host",
        help=f"KFP API URL, e.g. https://kubeflow.example.com/pipeline (default ${ENV_HOST}; "
        "neither: find KFP through the kube config)",
    )
    group.add_argument(
        "--namespace", help=f"Kubeflow profile namespace on multi-user deployments (default ${ENV_NAMESPACE})"
    )
    group.add_argument(
        "--token", help=f"bearer token (default ${ENV_TOKEN}; prefer the variable, flags show in `ps`)"
    )
    group.add_argument(
        "--token-file",
        type=Path,
        help=f"file holding a bearer token, re-read per request (default ${ENV_TOKEN_FILE})",
    )
    group.add_argument("--kube-context", help="kube config context, when no host is given")


def connection_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> KfpConnection:
    """Flags first, then the environment; a ValueError whose message names the bad setting otherwise."""

    def pick(flag: str | None, env: str) -> str | None:
        return flag if flag else (environ.get(env) or None)

    if args.token or args.token_file:  # credentials given as flags replace any in the environment
        token, token_file = args.token, args.token_file
    else:
        token = environ.get(ENV_TOKEN) or None
        token_file = Path(environ[ENV_TOKEN_FILE]) if environ.get(ENV_TOKEN_FILE) else None
    try:
        return KfpConnection(
            host=pick(args.host, ENV_HOST),
            namespace=pick(args.namespace, ENV_NAMESPACE),
            token=token,
            token_file=token_file,
            kube_context=args.kube_context,
        )
    except ValidationError as exc:
        problems = "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())
        raise ValueError(f"KFP connection settings: {problems}") from exc
