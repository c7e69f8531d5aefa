"""The --cache folder changes with the contents of named files (kfp.local's key sees only their path)."""

from __future__ import annotations

from pathlib import Path

from cli.step_cache import cache_root

FILES = ["data.uri", "validation.expectation_suite"]


def test_cache_folder_follows_file_contents_not_just_paths(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    root = tmp_path / "runs"
    arguments = {"data.uri": str(data), "validation.expectation_suite": "", "train.epochs": 3}
    first = cache_root(root, arguments, FILES)
    assert first.parent == root / ".kfp_cache"
    assert cache_root(root, dict(arguments), FILES) == first  # same inputs: same cache
    data.write_text("a,b\n1,3\n")  # same path, new contents: kfp.local alone would call this a hit
    assert cache_root(root, arguments, FILES) != first
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "x.json").write_text("{}")
    with_dir = cache_root(root, {**arguments, "validation.expectation_suite": str(folder)}, FILES)
    (folder / "x.json").write_text('{"v": 2}')
    assert cache_root(root, {**arguments, "validation.expectation_suite": str(folder)}, FILES) != with_dir
