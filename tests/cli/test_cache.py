"""The --cache folder changes with the contents of named files (kfp.local's key sees only their path)."""

from __future__ import annotations

from pathlib import Path

from cli.step_cache import cache_root


def test_cache_folder_follows_file_contents_not_just_paths(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    root = tmp_path / "runs"
    arguments = {"data_uri": str(data), "expectation_suite": "", "epochs": 3}
    first = cache_root(root, arguments, ["data_uri", "expectation_suite"])
    assert first.parent == root / ".kfp_cache"
    assert (
        cache_root(root, dict(arguments), ["data_uri", "expectation_suite"]) == first
    )  # same inputs: same cache
    data.write_text("a,b\n1,3\n")  # same path, new contents: kfp.local alone would call this a hit
    assert cache_root(root, arguments, ["data_uri", "expectation_suite"]) != first
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "x.json").write_text("{}")
    with_dir = cache_root(
        root, {**arguments, "expectation_suite": str(folder)}, ["data_uri", "expectation_suite"]
    )
    (folder / "x.json").write_text('{"v": 2}')
    assert (
        cache_root(root, {**arguments, "expectation_suite": str(folder)}, ["data_uri", "expectation_suite"])
        != with_dir
    )
