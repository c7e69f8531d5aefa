"""The finish step of a batch scoring job: add the shards up, drop stale chunks, write ``_job.json`` and the audit record."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from components.batch_score import chunk_writer as out
from components.batch_score.batch_job import SHOWN_BAD_VALUES, BatchPlan, ShardResult
from components.batch_score.chunk_reader import BatchInputError
from mlops import storage

AUDIT_ACTION = "batch.scored"


@dataclass
class JobSummary:
    model: str
    version: str
    input_uri: str
    input_digest: str
    """SHA-256 of the sorted (partition, file SHA-256) pairs: one value for the whole input, not a file's digest."""
    input_sha256: dict[str, str]
    """Partition → SHA-256 of that input file's bytes (what ``sha256sum`` prints for it)."""
    files: int
    output_uri: str
    request_log_uri: str
    rows_read: int
    rows_scored: int
    rows_bad: int
    chunks_written: int
    chunks_skipped: int
    bad_examples: list[str]
    started: str
    finished: str
    job_id: str


def finish_job(
    plan: BatchPlan,
    results: list[ShardResult],
    *,
    workspace_root: str | Path | None = None,
    tracking_uri: str = "",
    links: dict[str, str] | None = None,
) -> JobSummary:
    """Add the shards up, drop outputs of earlier jobs, write ``_job.json`` and the audit record."""
    from mlops.governance import audit

    settings = plan.score
    digests: dict[str, str] = {}
    for result in results:
        digests.update(result.file_digests)
    missing = [f["partition"] for f in plan.files if f["partition"] not in digests]
    if missing:
        raise BatchInputError(f"the shards did not score input file(s) {missing}; the job is not complete")
    stale = _remove_stale(settings.output_uri, plan.key)
    examples = [e for r in results for e in r.bad_examples][:SHOWN_BAD_VALUES]
    summary = JobSummary(
        model=f"{plan.model_name}@{plan.alias}",
        version=plan.version,
        input_uri=settings.data_uri,
        input_digest=hashlib.sha256(json.dumps(sorted(digests.items())).encode()).hexdigest(),
        input_sha256=dict(sorted(digests.items())),
        files=len(plan.files),
        output_uri=settings.output_uri,
        request_log_uri=settings.log_root() if settings.request_log else "",
        rows_read=sum(r.rows_read for r in results),
        rows_scored=sum(r.rows_scored for r in results),
        rows_bad=sum(r.rows_bad for r in results),
        chunks_written=sum(r.chunks_written for r in results),
        chunks_skipped=sum(r.chunks_skipped for r in results),
        bad_examples=examples,
        started=plan.started,
        finished=datetime.now(UTC).isoformat(),
        job_id=plan.job_id,
    )
    details = {k: v for k, v in asdict(summary).items() if k not in ("model", "version", "job_id")}
    details.update(
        alias=plan.alias,
        on_bad_rows=settings.on_bad_rows,
        chunk_rows=settings.chunk_rows,
        stale_chunks_removed=stale,
    )
    audit.record(
        AUDIT_ACTION,
        f"{plan.model_name}/{plan.version}",
        details,
        links={
            **(links or {}),
            "model_version": f"{plan.model_name}/{plan.version}",
            "batch_job": plan.job_id,
        },
        workspace_root=workspace_root,
        tracking_uri=tracking_uri,
    )
    storage.write_bytes(
        out.join(settings.output_uri, out.JOB_FILE), json.dumps(asdict(summary), indent=1).encode()
    )
    return summary


def _remove_stale(output_uri: str, key: str) -> int:
    """Delete chunks an earlier job with other settings left (their manifests name another key)."""
    removed = 0
    for uri in storage.list_prefix(out.join(output_uri, out.MANIFEST_DIR) + "/"):
        record = out.read_record(uri) if uri.endswith(".json") else None
        if record is None or record.job_key == key:
            continue
        storage.delete(record.part_uri)
        out.remove_outputs(record)
        storage.delete(uri)
        removed += 1
    return removed
