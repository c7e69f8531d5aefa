"""The lines of kfp.local 2.17's own output that mark a task's start, end or cache hit.

kfp.local logs ``HH:MM:SS.mmm - INFO - Executing task 'name'`` before a task,
``Task 'name' finished with status SUCCESS`` after it, and (to the root logger)
``Task name cache hit (key=…)`` for a task answered from its cache. These patterns are
the only place that knows that wording; ``tests/cli/console`` runs a real
pipeline through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PREFIX = r"^(?:\d\d:\d\d:\d\d\.\d+ - [A-Z]+ - )?"
_STARTED = re.compile(_PREFIX + r"Executing task '([\w.-]+)'\s*$")
_FINISHED = re.compile(_PREFIX + r"Task '([\w.-]+)' finished with status (SUCCESS|FAILURE)\s*$")
_CACHED = re.compile(_PREFIX + r"Task ([\w.-]+) cache hit \(key=([0-9a-f]*)")


@dataclass(frozen=True)
class TaskEvent:
    kind: str
    """``started``, ``finished``, ``failed`` or ``cached``."""
    task: str
    key: str = ""
    """A cache hit's entry key as kfp.local logs it (its first 12 hex digits)."""


def task_event(line: str) -> TaskEvent | None:
    """The task event a (colour-stripped) line of kfp.local's output announces, if any."""
    if match := _STARTED.match(line):
        return TaskEvent("started", match.group(1))
    if match := _FINISHED.match(line):
        return TaskEvent("finished" if match.group(2) == "SUCCESS" else "failed", match.group(1))
    if match := _CACHED.match(line):
        return TaskEvent("cached", match.group(1), match.group(2))
    return None


def run_dir_pattern(pipeline_root: str, pipeline_name: str) -> re.Pattern[str]:
    """Matches this run's directory (``<root>/<name>-YYYY-MM-DD-HH-MM-SS-ffffff``) where a task names
    its own executor output file. Only there: an input artifact's URI may name an earlier run's
    directory (a step answered from the cache)."""
    stamp = r"\d{4}(?:-\d\d){5}-\d+"
    folder = re.escape(pipeline_root.rstrip("/")) + "/" + re.escape(pipeline_name) + "-" + stamp
    return re.compile(
        r'(?:"outputFile": "|Wrote executor output file to )(' + folder + r")/[^/]+/executor_output\.json"
    )
