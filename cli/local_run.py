"""Run a pipeline with KFP's local runner inside a workspace.

By default the local runner executes each task as a subprocess calling ``python3``;
the current interpreter's ``bin`` is put first on PATH so tasks run in the same
environment that has the platform installed, and MLflow's telemetry is off in them
(:mod:`mlops.tracking.telemetry`). With a ``DockerRunner``
(:mod:`cli.docker_runner`) each task runs in the platform image instead. The runner's output is sorted into
one log per task (:mod:`cli.console.streams`); the console shows one line
per step and a live bar, or, with ``verbose``, the raw output as well.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.console.display import Step
from cli.console.kfp_lines import ANSI
from mlops.tracking.telemetry import telemetry_off
from mlops.workspace import Workspace

if TYPE_CHECKING:
    from kfp.dsl.base_component import BaseComponent

_FAILED_TASK = re.compile(r"Inner task failed: '?([\w.-]+?)'?(?: inside '[\w.-]+')?\.?$")
"""kfp.local's failure message; a task under a ``dsl.If`` or ``ParallelFor`` is named "inside" its group."""


class PipelineFailed(RuntimeError):
    """A step failed: which, why (a headline and the details, e.g. each failed check) and the run so far."""

    def __init__(self, task: str, headline: str, details: list[str], run: LocalRun) -> None:
        self.task = task
        self.headline = headline
        self.details = details
        self.run = run
        super().__init__(f"step {task} failed: {self.reason}")

    @property
    def reason(self) -> str:
        return f"{self.headline}: {'; '.join(self.details)}" if self.details else self.headline

    @property
    def run_dir(self) -> Path | None:
        return self.run.run_dir


@dataclass
class LocalRun:
    output: Any
    run_dir: Path | None
    log_dir: Path | None = None
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0
    started: float = 0.0

    def log_path(self, task: str) -> Path | None:
        return self.log_dir / f"{task}.log" if self.log_dir is not None else None


def newest_run_dir(pipeline_root: Path, pipeline_name: str, started_after: float) -> Path | None:
    candidates = [
        p
        for p in pipeline_root.glob(f"{pipeline_name}-*")
        if p.is_dir() and p.stat().st_mtime >= started_after
    ]
    return max(candidates, key=lambda p: p.stat().st_mtime, default=None)


def _use_this_python() -> None:
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = os.pathsep.join([bin_dir, path])


def run_locally(
    pipeline: BaseComponent,
    arguments: dict[str, Any],
    workspace: Workspace,
    *,
    verbose: bool = False,
    cache_root: Path | None = None,
    runner: Any = None,
    warm: bool = True,
) -> LocalRun:
    """Run ``pipeline`` with kfp.local; raise :class:`PipelineFailed` naming the failed step.

    ``cache_root``: reuse the outputs of steps whose inputs did not change (kfp.local's
    cache, kept there); None runs every step. ``runner``: kfp.local's runner (default: a
    subprocess of this environment per task). ``warm``: with the default runner, each step forks
    from a process that imported the heavy libraries once for the run (:mod:`cli.warm_steps`);
    False starts a new interpreter per step, unless the caller holds a ``warm_steps`` block itself
    (``mlops run`` starts it before the run's tracking server, so that their starts overlap).
    """
    from kfp import local
    from rich.console import Console

    from cli.console.display import StepDisplay
    from cli.console.figures import step_figure
    from cli.console.kfp_lines import run_dir_pattern
    from cli.console.streams import TaskStreams
    from cli.step_cache import producer
    from cli.warm_steps.step_runner import warm_steps

    workspace.create()
    _use_this_python()
    telemetry_off()  # the tasks are this process's children (a notebook may call this without `mlops`)
    warm_process = contextlib.ExitStack()
    if warm and runner is None:  # started first: its imports overlap the run's set-up
        warm_process.enter_context(warm_steps(pipeline, workspace))
    local.init(
        runner=runner if runner is not None else local.SubprocessRunner(use_venv=False),
        pipeline_root=str(workspace.pipeline_root),
        raise_on_error=True,
        enable_caching=cache_root is not None,
        cache_root=str(cache_root) if cache_root is not None else None,
    )
    out, err = sys.stdout, sys.stderr
    display = StepDisplay(
        Console(file=out),
        lambda task: step_figure(task, streams.run_dir / task) if streams.run_dir else "",
        not verbose,
        lambda key: producer(cache_root, key) if cache_root is not None and key else "",
    )
    streams = TaskStreams(
        workspace.pipeline_root / f".logs-{os.getpid()}-{time.time_ns()}",
        run_dir_pattern(str(workspace.pipeline_root), pipeline.name),
        display,
        echo=out if verbose else None,
    )
    run = LocalRun(None, None, streams.log_dir, display.steps, started=time.time())
    cache_hits = logging.StreamHandler(streams)  # kfp.local logs a cache hit outside its own log context
    root = logging.getLogger()
    level = root.level
    root.addHandler(cache_hits)
    root.setLevel(logging.INFO)
    sys.stdout = sys.stderr = streams
    # kfp.local indents a task's output by swapping builtins.print for the task's duration; tasks of a
    # dsl.ParallelFor run on threads and swap it concurrently, and the last restore can leave the indenting
    # print in place for good (every later print of this process started with four spaces).
    original_print = builtins.print
    try:
        with warm_process, display:
            run.output = pipeline(**arguments).output
    except RuntimeError as exc:
        match = _FAILED_TASK.search(ANSI.sub("", str(exc)))
        if not match:
            raise
        failed = next((s.name for s in display.steps if s.status == "failed"), match.group(1))
        _finish(run, streams, pipeline.name, cache_root)
        raise _failure(failed, run) from exc
    finally:
        builtins.print = original_print
        sys.stdout, sys.stderr = out, err
        root.removeHandler(cache_hits)
        root.setLevel(level)
        streams.close()
    _finish(run, streams, pipeline.name, cache_root)
    return run


def _finish(run: LocalRun, streams: Any, pipeline_name: str, cache_root: Path | None) -> None:
    from cli.step_cache import note_producers

    streams.close()
    run.seconds = time.time() - run.started
    run.log_dir = streams.log_dir
    run.run_dir = streams.run_dir or newest_run_dir(streams.log_dir.parent, pipeline_name, run.started - 1)
    if cache_root is not None and run.run_dir is not None:
        note_producers(cache_root, run.run_dir.name, run.started)


def _failure(task: str, run: LocalRun) -> PipelineFailed:
    from cli.console.figures import failure_reasons

    log_path = run.log_path(task)
    task_dir = run.run_dir / task if run.run_dir is not None else Path("/nonexistent")
    reason, details = failure_reasons(task_dir, log_path or Path("/nonexistent"))
    return PipelineFailed(task, reason, details, run)
