"""``benchmarks/RESULTS.md`` as a log: a benchmark run's entry added at the end of its own section.

The benchmarks that write their figures with ``--write-results`` share this, so every section keeps its runs
in the order they ran, whichever section of the file was written last.
"""

from __future__ import annotations

from pathlib import Path


def append_entry(path: Path, heading: str, entry: list[str]) -> None:
    """Add ``entry`` (lines) after the runs already under ``heading``, a ``## `` line created at the end of the
    file the first time (the file itself too)."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if heading not in text:
        text = text.rstrip("\n") + f"\n\n{heading}\n"
    lines = text.split("\n")
    at = lines.index(heading) + 1
    while at < len(lines) and not lines[at].startswith("## "):  # after this section's earlier runs
        at += 1
    while at > 0 and lines[at - 1] == "":
        at -= 1
    lines[at:at] = entry
    path.write_text("\n".join(lines).rstrip("\n") + "\n")
