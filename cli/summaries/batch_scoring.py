"""What ``mlops run batch_scoring`` prints at the end: the rows scored, the output, how to monitor it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cli.summaries.run_outline import run_lines

if TYPE_CHECKING:
    from cli.local_run import LocalRun
    from mlops.workspace import Workspace

FINISH_TASK = "finish-batch-scoring"


def print_summary(workspace: Workspace, settings: Mapping[str, Any], result: LocalRun) -> dict[str, str]:
    """The job's counts from the finish step's summary (``settings``: the run's settings by address)."""
    path = result.run_dir / FINISH_TASK / "summary" if result.run_dir else None
    if path is None or not path.is_file():
        print(
            f"\nBatch scoring finished: {result.output} row(s) scored; output {settings['score.output_uri']}."
        )
        return {"rows scored": str(result.output)}
    data = json.loads(path.read_text())
    print("\n".join(["", *summary_lines(data), *run_lines(result)]))
    return {"rows scored": str(data["rows_scored"]), "output": data["output_uri"]}


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    """The lines ``mlops score`` and ``mlops run batch_scoring`` print for a finished job (``_job.json``)."""
    lines = [
        f"Batch scoring finished: {data['rows_scored']} row(s) scored with {data['model']} "
        f"(version {data['version']}).",
        f"  {'rows':<17} {data['rows_read']} read, {data['rows_scored']} scored, {data['rows_bad']} bad",
        f"  {'chunks':<17} {data['chunks_written']} written, {data['chunks_skipped']} already done (skipped)",
        f"  {'input':<17} {data['input_uri']} {input_digest_text(data)}",
        f"  {'output':<17} {data['output_uri']}",
    ]
    if data["bad_examples"]:
        lines.append(
            f"  {'bad rows':<17} {data['output_uri'].rstrip('/')}/_bad_rows/, e.g. {data['bad_examples'][0]}"
        )
    if data["request_log_uri"]:
        lines.append(
            f"  {'monitor it':<17} mlops monitor --model-name {data['model'].split('@')[0]} "
            f"--model-version {data['version']} --since {data['started']} "
            f"--set window.request_log_uri={data['request_log_uri']}"
        )
    return lines


def input_digest_text(data: Mapping[str, Any]) -> str:
    """One file: its own SHA-256, whole (comparable with ``sha256sum``). Several: the job's digest of
    their digests, called that, and where each file's SHA-256 is written."""
    files = data.get("input_sha256") or {}
    if len(files) == 1:
        return f"(1 file, sha256 {next(iter(files.values()))})"
    return (
        f"({data['files']} files; digest of their sha256s {data['input_digest'][:16]}…, each file's sha256 "
        f"under input_sha256 in {data['output_uri'].rstrip('/')}/_job.json)"
    )
