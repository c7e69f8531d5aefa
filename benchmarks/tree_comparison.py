"""This tree against another checkout of it, in one run: the command line both benchmarks of that kind take,
and the order their runs alternate in.

The baseline is a ``git worktree`` of an earlier commit run with this venv (``PYTHONPATH`` puts its sources
first), so the two differ only in the platform's code. Each tree runs once untimed (caches, stores), then
``--repeats`` times, alternating, so a drift in the machine's load falls on both alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
Figures = TypeVar("Figures")


def parser(description: str | None, repeats: int) -> argparse.ArgumentParser:
    """A benchmark's arguments: ``--baseline-tree`` (required) and ``--repeats``; add your own."""
    made = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    made.add_argument("--baseline-tree", type=Path, required=True, help="another checkout to compare with")
    made.add_argument("--repeats", type=int, default=repeats)
    return made


def alternate(
    baseline: Path, repeats: int, run: Callable[[str, Path], Figures], shown: Callable[[Figures], str]
) -> dict[str, list[Figures]]:
    """``run(label, tree)`` once untimed per tree, then ``repeats`` times alternating; each timed run printed
    as ``shown`` says. Returns the timed runs' figures by label (``baseline``, ``this tree``)."""
    trees = {"baseline": baseline.resolve(), "this tree": REPO}
    for label, tree in trees.items():
        print(f"{label}: first run (untimed) from {tree}", flush=True)
        run(label, tree)
    runs: dict[str, list[Figures]] = {label: [] for label in trees}
    for repeat in range(repeats):
        for label, tree in trees.items():
            runs[label].append(run(label, tree))
            print(f"{label} #{repeat + 1}: {shown(runs[label][-1])}", flush=True)
    return runs
