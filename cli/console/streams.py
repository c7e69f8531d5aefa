"""Sort the local runner's output into one log file per task.

kfp.local runs each task as a subprocess and prints its output, line by line, in the
parent process, from the thread that runs the task (tasks of a ``ParallelFor`` run on
several threads at once). :class:`TaskStreams` stands in for ``sys.stdout`` and
``sys.stderr`` during a run: a line goes to the log of the task its thread is running
(``<run>/logs/<task>.log``), every line goes to ``<run>/logs/kfp-local.log``, progress
events and task starts/ends go to a listener, and nothing reaches the console unless
``echo`` is given (``mlops run -v``).
"""

from __future__ import annotations

import io
import re
import shutil
import threading
from pathlib import Path
from typing import Protocol, TextIO

from cli.console.kfp_lines import ANSI, TaskEvent, task_event
from mlops.progress import Progress, parse

RUN_LOG = "kfp-local.log"
"""Everything the local runner printed, in order, in the run's ``logs`` folder."""
_RULE = re.compile(r"^-{20,}$")
_KFP_INDENT = "    "  # kfp.local indents a task's own lines by four spaces


class Listener(Protocol):
    def on_task(self, event: TaskEvent) -> None: ...

    def on_progress(self, task: str, progress: Progress) -> None: ...


class TaskStreams(io.TextIOBase):
    """A text stream that routes each line to its task's log (see the module docstring)."""

    def __init__(
        self, log_dir: Path, run_dir_pattern: re.Pattern[str], listener: Listener, echo: TextIO | None = None
    ) -> None:
        self.log_dir = log_dir
        self.run_dir: Path | None = None
        self._pattern = run_dir_pattern
        self._listener = listener
        self._echo = echo
        self._lock = threading.RLock()
        self._partial: dict[int, str] = {}
        self._current: dict[int, str] = {}
        self._files: dict[str, TextIO] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            if self._echo is not None:
                self._echo.write(text)
            thread = threading.get_ident()
            *lines, rest = (self._partial.get(thread, "") + text).split("\n")
            self._partial[thread] = rest
            for line in lines:
                self._line(thread, ANSI.sub("", line))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._echo is not None:
                self._echo.flush()
            for handle in self._files.values():
                handle.flush()

    def log_path(self, task: str) -> Path:
        return self.log_dir / f"{task}.log"

    def close(self) -> None:
        with self._lock:
            for thread, rest in list(self._partial.items()):
                if rest:
                    self._line(thread, ANSI.sub("", rest))
            self._partial.clear()
            for handle in self._files.values():
                handle.close()
            self._files.clear()

    def _line(self, thread: int, line: str) -> None:
        if self.run_dir is None and (match := self._pattern.search(line)):
            self._move_logs(Path(match.group(1)))
        self._write(RUN_LOG, line)
        event = task_event(line)
        if event is not None and event.kind == "started":
            self._current[thread] = event.task
        task = event.task if event is not None else self._current.get(thread)
        if task is None:
            return
        if _RULE.match(line):  # kfp.local draws a rule after each task's outputs
            self._current.pop(thread, None)
        self._write(f"{task}.log", line.removeprefix(_KFP_INDENT))
        if event is not None:
            self._listener.on_task(event)
        elif (progress := parse(line)) is not None:
            self._listener.on_progress(task, progress)

    def _write(self, name: str, line: str) -> None:
        handle = self._files.get(name)
        if handle is None:
            handle = self._files[name] = (self.log_dir / name).open("a", encoding="utf-8", buffering=1)
        handle.write(line + "\n")

    def _move_logs(self, run_dir: Path) -> None:
        """The run's folder is known (kfp.local names it when it starts): keep the logs in it from now on."""
        self.run_dir = run_dir
        target = run_dir / "logs"
        target.mkdir(parents=True, exist_ok=True)
        for handle in self._files.values():
            handle.close()
        self._files.clear()
        for path in self.log_dir.iterdir():
            shutil.move(str(path), str(target / path.name))
        shutil.rmtree(self.log_dir, ignore_errors=True)
        self.log_dir = target
