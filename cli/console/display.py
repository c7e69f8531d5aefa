"""One line per finished step, and a live bar (``rich``) for the step that is running."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from cli.console.kfp_lines import TaskEvent

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as Bars
    from rich.progress import TaskID

    from mlops.progress import Progress

MARKS = {"finished": "ok", "failed": "FAILED", "cached": "cached"}


@dataclass
class Step:
    """A step of the run as the console reported it."""

    name: str
    status: str
    """``finished``, ``failed`` or ``cached`` (inputs unchanged: outputs reused)."""
    seconds: float
    figure: str = ""
    reused_from: str = ""
    """A cached step: the earlier run (its folder name) whose step made the outputs reused; "" unknown."""

    def line(self) -> str:
        return f"  {MARKS.get(self.status, self.status):<6} {self.name:<22} {duration(self.seconds):>7}  {self.figure}".rstrip()

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 2)}


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


class StepDisplay:
    """Prints a step's line when it ends; while it runs, a spinner (and a bar once it reports progress).

    ``figure(task)`` gives a finished step's key figure; ``reused_from(key)`` the run whose step made a cache
    hit's entry (by the key prefix kfp.local logs). With ``live=False`` (``-v``, or
    output that is not a terminal) no bar is drawn; the step lines are printed alike.
    """

    def __init__(
        self,
        console: Console,
        figure: Callable[[str], str],
        live: bool = True,
        reused_from: Callable[[str], str] = lambda key: "",
    ) -> None:
        self.console = console
        self.steps: list[Step] = []
        self._figure = figure
        self._reused_from = reused_from
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()
        self._bars: Bars | None = None
        self._rows: dict[str, TaskID] = {}
        if live and console.is_terminal:
            self._bars = live_bars(console)

    def __enter__(self) -> StepDisplay:
        if self._bars is not None:
            self._bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bars is not None:
            self._bars.stop()

    def on_task(self, event: TaskEvent) -> None:
        with self._lock:
            if event.kind == "started":
                self._started[event.task] = time.monotonic()
                if self._bars is not None:
                    self._rows[event.task] = self._bars.add_task(event.task, total=None, figure="")
                return
            started = self._started.pop(event.task, None)  # a cached step never started
            seconds = time.monotonic() - started if started is not None else 0.0
            row = self._rows.pop(event.task, None)
            if row is not None and self._bars is not None:
                self._bars.remove_task(row)
            figure = self._figure(event.task) if event.kind == "finished" else ""
            reused_from = self._reused_from(event.key) if event.kind == "cached" else ""
            if event.kind == "cached":
                source = f"run {reused_from}" if reused_from else "an earlier run"
                figure = f"inputs unchanged: outputs of {source} reused"
            step = Step(event.task, event.kind, seconds, figure, reused_from)
            self.steps.append(step)
        self.console.print(step.line(), markup=False, highlight=False, soft_wrap=True)

    def on_progress(self, task: str, progress: Progress) -> None:
        with self._lock:
            row = self._rows.get(task)
            if row is None or self._bars is None:
                return
            self._bars.update(
                row,
                description=f"{task} ({progress.unit}s)",
                total=progress.total,
                completed=progress.completed,
                advance=progress.advance or None,
                figure=progress.text,
            )


def live_bars(console: Console) -> Bars:
    """A spinner per running step; a bar, count and elapsed time once it reports progress."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[figure]}"),
        console=console,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
