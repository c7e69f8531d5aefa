"""A small JSON per finished ``mlops run`` (``<run>/mlops-run.json``): what ``mlops runs`` lists."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

RECORD_FILE = "mlops-run.json"
_STAMP = re.compile(r"-(\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)-\d+$")


@dataclass
class RunRecord:
    """One pipeline run as ``mlops run`` saw it end."""

    id: str
    """The run's folder name under ``<workspace>/pipeline-runs`` (kfp.local's run name)."""
    pipeline: str
    started: str
    """Local time the run started, ``YYYY-MM-DD HH:MM:SS``."""
    status: str
    """``succeeded``, ``failed``; ``unknown`` for a folder without a record (interrupted run)."""
    seconds: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Each step's name, status, seconds and key figure, in the order they ended."""
    failed_step: str = ""
    reasons: list[str] = field(default_factory=list)
    """Why it failed, or why the gates decided as they did."""
    facts: dict[str, str] = field(default_factory=dict)
    """The run's results in words: ``model``, ``decision``, ``test AUC`` …"""
    log_dir: str = ""

    def save(self, run_dir: Path) -> Path:
        path = run_dir / RECORD_FILE
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path


def started_from_name(name: str) -> str:
    match = _STAMP.search(name)
    if not match:
        return ""
    return datetime.strptime(match.group(1), "%Y-%m-%d-%H-%M-%S").strftime("%Y-%m-%d %H:%M:%S")


def load(run_dir: Path) -> RunRecord:
    """The run's record; a folder without one (the run was interrupted) reads as status ``unknown``."""
    try:
        fields = json.loads((run_dir / RECORD_FILE).read_text())
        return RunRecord(**fields)
    except (OSError, ValueError, TypeError):
        pipeline = _STAMP.sub("", run_dir.name)
        return RunRecord(run_dir.name, pipeline, started_from_name(run_dir.name), "unknown")


def all_runs(pipeline_root: Path) -> list[RunRecord]:
    """Every run folder in the workspace, newest first."""
    if not pipeline_root.is_dir():
        return []
    folders = [p for p in pipeline_root.iterdir() if p.is_dir() and _STAMP.search(p.name)]
    return sorted((load(p) for p in folders), key=lambda r: (r.started, r.id), reverse=True)
