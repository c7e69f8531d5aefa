"""Run a pipeline with KFP's local runner inside a workspace.

The local runner executes each task as a subprocess calling ``python3``; the
current interpreter's ``bin`` is put first on PATH so tasks run in the same
environment that has the platform installed.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kfp.dsl.base_component import BaseComponent

from mlops.workspace import Workspace

_FAILED_TASK = re.compile(r"Inner task failed: '?([\w.-]+?)'?\.?$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Failed|Failure)): (.+)$")


class PipelineFailed(RuntimeError):
    def __init__(self, task: str, reason: str, run_dir: Path | None) -> None:
        super().__init__(f"step {task} failed: {reason}")
        self.task = task
        self.reason = reason
        self.run_dir = run_dir


@dataclass
class LocalRun:
    output: Any
    run_dir: Path | None


@dataclass
class _Tee(io.TextIOBase):
    """Pass output through while remembering its last lines (the failing task's traceback)."""

    target: TextIO
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=400))
    _partial: str = ""

    def write(self, text: str) -> int:
        self.target.write(text)
        chunks = (self._partial + text).split("\n")
        self._partial = chunks.pop()
        self.lines.extend(chunks)
        return len(text)

    def flush(self) -> None:
        self.target.flush()


def failure_reason(lines: list[str]) -> str:
    """The last exception line a task printed, without colour codes."""
    for line in reversed(lines):
        match = _EXCEPTION_LINE.match(_ANSI.sub("", line))
        if match:
            return f"{match.group(1)}: {match.group(2)}"
    return "see the task log above"


def newest_run_dir(pipeline_root: Path, pipeline_name: str, started_after: float) -> Path | None:
    candidates = [
        p
        for p in pipeline_root.glob(f"{pipeline_name}-*")
        if p.is_dir() and p.stat().st_mtime >= started_after
    ]
    return max(candidates, key=lambda p: p.stat().st_mtime, default=None)


def run_locally(pipeline: BaseComponent, arguments: dict[str, Any], workspace: Workspace) -> LocalRun:
    """Run ``pipeline`` with the SubprocessRunner; raise :class:`PipelineFailed` naming the failed step."""
    import time

    from kfp import local

    workspace.create()
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join([bin_dir, path])
    local.init(
        runner=local.SubprocessRunner(use_venv=False),
        pipeline_root=str(workspace.pipeline_root),
        raise_on_error=True,
    )
    started = time.time() - 1
    tee = _Tee(sys.stdout)
    previous, sys.stdout = sys.stdout, tee
    try:
        task = pipeline(**arguments)
    except RuntimeError as exc:
        message = _ANSI.sub("", str(exc))
        match = _FAILED_TASK.search(message)
        if not match:
            raise
        run_dir = newest_run_dir(workspace.pipeline_root, pipeline.name, started)
        raise PipelineFailed(match.group(1), failure_reason(list(tee.lines)), run_dir) from exc
    finally:
        sys.stdout = previous
    return LocalRun(task.output, newest_run_dir(workspace.pipeline_root, pipeline.name, started))
