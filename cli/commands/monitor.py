"""``mlops monitor``: run the monitoring pipeline once, now, on this machine (kfp.local).

Checks the request log of ``--since`` .. ``--until`` against the champion's reference
profile and, if it drifted or its performance dropped (``--trigger``), runs the training
pipeline in this workspace (unless a retraining was triggered within the cooldown;
``--force`` overrides). Every other
monitoring setting is accepted as ``--set section.field=value`` (``mlops run monitoring
--help`` lists them by section). Exit 0 when the check ran (whatever it decided), 1 when it failed.
"""

from __future__ import annotations

import argparse

from cli.commands.options import add_model_name_option, add_set_option
from mlops.workspace import Workspace

HELP = "check the request log for drift now and retrain if it drifted (the monitoring pipeline, locally)"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("monitor", help=HELP, description=(__doc__ or "").split("\n\n", 1)[1])
    parser.add_argument(
        "--since",
        default="",
        help="window start, ISO 8601 (= window.since; default: 24 hours before --until)",
    )
    parser.add_argument("--until", default="", help="window end, ISO 8601 (= window.until; default: now)")
    add_model_name_option(parser, setting="window.model_name")
    parser.add_argument(
        "--model-version",
        dest="model_version",
        help="version to check (= window.model_version; default: champion)",
    )
    parser.add_argument(
        "--trigger",
        choices=("drift", "performance", "both"),
        help="what asks for a retraining (= drift.trigger; default both): feature/prediction drift, a performance "
        "drop (estimate or realised band below the checked version's test band), or either",
    )
    parser.add_argument(
        "--force", action="store_true", help="trigger a retraining even within the cooldown (= retrain.force)"
    )
    add_set_option(parser, "any other monitoring setting by its address (repeatable), e.g. drift.share=0.3")
    parser.set_defaults(handler=monitor_command)


FLAG_ADDRESSES = {
    "since": "window.since",
    "until": "window.until",
    "model_name": "window.model_name",
    "model_version": "window.model_version",
    "trigger": "drift.trigger",
}
"""The command's own flags and the monitoring pipeline's settings they stand for."""
FORCE = "retrain.force"


def pipeline_argv(args: argparse.Namespace) -> list[str]:
    """The ``mlops run monitoring`` arguments these flags stand for (a flag left out leaves its setting to
    ``--set``, else the pipeline's default)."""
    argv = [
        f"--{address}={getattr(args, name)}"
        for name, address in FLAG_ADDRESSES.items()
        if getattr(args, name)
    ]
    if args.force:
        argv.append(f"--{FORCE}=true")
    return argv + [f"--set={item}" for item in args.overrides]


def monitor_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.commands.run import run_command, run_option_defaults

    run = argparse.Namespace(pipeline="monitoring", arguments=pipeline_argv(args), **run_option_defaults())
    return run_command(run, workspace)
