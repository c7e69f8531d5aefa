"""``mlops runs``: the pipeline runs in the workspace; ``mlops runs show ID`` summarises one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mlops.workspace import Workspace

if TYPE_CHECKING:
    from cli.console.record import RunRecord


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="list the pipeline runs in the workspace; `mlops runs show ID` summarises one",
        description="Pipeline runs started with `mlops run`, newest first (from <run>/mlops-run.json).",
    )
    parser.add_argument("action", nargs="?", choices=("list", "show"), default="list")
    parser.add_argument(
        "run_id", nargs="?", default="", help="with show: the run's id (a unique prefix will do)"
    )
    parser.add_argument("--limit", type=int, default=20, help="list at most this many runs (default 20)")
    parser.set_defaults(handler=runs_command)


def runs_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.console.record import all_runs

    runs = all_runs(workspace.pipeline_root)
    if args.action == "show":
        print("\n".join(show_lines(find_run(runs, args.run_id), workspace)))
        return 0
    if not runs:
        print(f"No pipeline runs in {workspace.pipeline_root}; start one with `mlops run training`.")
        return 0
    print("\n".join(list_lines(runs[: args.limit])))
    if len(runs) > args.limit:
        print(f"({len(runs) - args.limit} older runs not shown; --limit N shows more)")
    return 0


def find_run(runs: list[RunRecord], run_id: str) -> RunRecord:
    if not run_id:
        raise ValueError("mlops runs show needs a run id; `mlops runs` lists them")
    matches = [r for r in runs if r.id == run_id] or [r for r in runs if r.id.startswith(run_id)]
    if len(matches) != 1:
        found = "no run" if not matches else f"{len(matches)} runs"
        raise ValueError(f"{found} with id {run_id!r} in this workspace; `mlops runs` lists the ids")
    return matches[0]


def _undecided_count(run: RunRecord) -> str:
    count = len([u for u in run.facts.get("undecided", "").splitlines() if u.strip()])
    return f", {count} undecided" if count else ""


def list_lines(runs: list[RunRecord]) -> list[str]:
    from cli.console.display import duration
    from mlops.gates import status_word

    header = f"{'ID':<38} {'STARTED':<19} {'STATUS':<9} {'DURATION':>8}  {'MODEL':<22} DECISION"
    lines = [header]
    for run in runs:
        decision = run.facts.get("decision", "") or (
            f"failed at {run.failed_step}" if run.failed_step else ""
        )
        if run.facts.get("status") and run.facts.get("decision"):
            decision += f" ({status_word(run.facts['status'])}{_undecided_count(run)})"
        model = run.facts.get("model", "") or run.facts.get("best validation AUC", "")
        took = duration(run.seconds) if run.seconds else "-"
        lines.append(
            f"{run.id:<38} {run.started:<19} {run.status:<9} {took:>8}  {model:<22} {decision}".rstrip()
        )
    return lines


def show_lines(run: RunRecord, workspace: Workspace) -> list[str]:
    from cli.console.display import Step, duration
    from cli.summaries.run_outline import reason_lines, row

    took = f" in {duration(run.seconds)}" if run.seconds else ""
    lines = [f"Run {run.id} ({run.pipeline}): {run.status}{took}, started {run.started}."]
    lines += [Step(**step).line() for step in run.steps]
    from mlops.gates import status_word

    facts = dict(run.facts)
    undecided = [u for u in facts.pop("undecided", "").splitlines() if u.strip()]
    if "status" in facts:
        facts["status"] = status_word(facts["status"])
    lines += [row(name, value) for name, value in facts.items()]
    if undecided:
        lines.append(row("not conclusive", f"{len(undecided)} check(s) the test rows could not decide:"))
        lines += reason_lines(undecided, "the model report")
    if run.failed_step:
        lines.append(row("failed step", run.failed_step))
    if run.reasons:
        lines.append(row("reasons" if not run.failed_step else "reason", ""))
        lines += reason_lines(run.reasons)
    lines.append(row("pipeline run", workspace.pipeline_root / run.id))
    if run.log_dir:
        lines.append(row("step logs", f"{run.log_dir}/<step>.log"))
    return lines
