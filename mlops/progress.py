"""Machine-readable progress a task prints for the process that runs the pipeline.

A task runs as a subprocess whose stdout the local runner streams to ``mlops run``;
a line ``::mlops-progress:: {json}`` there is a progress event (training epochs,
tuning trials) that the console turns into a live bar instead of printing it. The
line is plain stdout, so on a cluster it simply stays in the task's log.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass

PREFIX = "::mlops-progress::"
_LINE = re.compile(r"^\s*" + re.escape(PREFIX) + r"\s*(\{.*\})\s*$")


@dataclass(frozen=True)
class Progress:
    """One step forward in a task's work."""

    unit: str
    """What is counted: ``epoch``, ``trial``."""
    total: int
    """How many there will be at most (early stopping or a deadline may end sooner)."""
    completed: int | None = None
    """How many are done, when the emitter knows it (one process counting alone)."""
    advance: int = 0
    """How many finished since the last event, when several processes count together."""
    text: str = ""
    """The latest figure in words, e.g. ``val AUC 0.7123``."""

    def line(self) -> str:
        return f"{PREFIX} {json.dumps(asdict(self), separators=(',', ':'))}"


def emit(progress: Progress) -> None:
    """Print ``progress`` as one line on stdout, flushed at once so the bar moves live."""
    sys.stdout.write(progress.line() + "\n")
    sys.stdout.flush()


def parse(line: str) -> Progress | None:
    """The event a line carries, or None for any other line (also for a malformed event)."""
    match = _LINE.match(line)
    if not match:
        return None
    try:
        fields = json.loads(match.group(1))
        return Progress(**fields) if isinstance(fields, dict) else None
    except (ValueError, TypeError):
        return None
