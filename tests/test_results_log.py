"""``benchmarks/results_log.append_entry``: a run's entry lands at the end of its own section of RESULTS.md,
after that section's earlier runs and before the next section, whichever section was written last."""

from __future__ import annotations

from pathlib import Path

from benchmarks.results_log import append_entry


def test_a_missing_file_and_heading_are_created(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    append_entry(path, "## Serving", ["", "run 1"])
    assert path.read_text() == "# Benchmark results\n\n## Serving\n\nrun 1\n"


def test_an_entry_goes_after_its_own_sections_runs_not_at_the_end_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    path.write_text("# Benchmark results\n\n## Serving\n\nrun 1\n\n## Batch scoring\n\nbatch 1\n")
    append_entry(path, "## Serving", ["", "run 2"])
    assert path.read_text() == (
        "# Benchmark results\n\n## Serving\n\nrun 1\n\nrun 2\n\n## Batch scoring\n\nbatch 1\n"
    )
    append_entry(path, "## Batch scoring", ["", "batch 2"])
    assert path.read_text().endswith("## Batch scoring\n\nbatch 1\n\nbatch 2\n")
