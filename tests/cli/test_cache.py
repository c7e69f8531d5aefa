"""The --cache folder changes with the contents of named files (kfp.local's key sees only their path)."""

from __future__ import annotations

import subprocess
import sys
import time
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


def test_a_tracking_store_made_anew_empties_the_cache(tmp_path: Path) -> None:
    """Cached steps hand on MLflow run ids and model versions; after the workspace's store is deleted (and
    made anew by the next run) an entry naming ``version 1`` would be a hit on a registry without it."""
    from mlflow import MlflowClient

    from cli.step_cache import forget_entries_of_another_store, note_store, store_identity

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = cache / "0123abcd.json"
    entry.write_text('{"version": "1"}')
    assert store_identity(uri).endswith("absent")
    MlflowClient(uri).search_experiments()  # MLflow makes the store and its Default experiment
    made = store_identity(uri)
    assert made.startswith(uri + " created ") and made == store_identity(uri)
    assert not made.endswith(("unknown", "absent"))

    assert forget_entries_of_another_store(cache, uri) == ""  # no note yet: the first --cache run
    note_store(cache, uri)
    assert forget_entries_of_another_store(cache, uri) == "" and entry.is_file()  # the same store

    (tmp_path / "mlflow.db").unlink()  # the user cleans the workspace's store, keeps the run folders
    time.sleep(0.01)  # a later creation time for the store made anew
    # ... and the next run, a new process, makes it anew (MLflow keeps a store per URI in a process)
    subprocess.run(
        [sys.executable, "-c", f"import mlflow; mlflow.MlflowClient({uri!r}).search_experiments()"],
        check=True,
    )
    assert store_identity(uri) != made
    why = forget_entries_of_another_store(cache, uri)
    assert "another tracking store" in why and not entry.exists()

    entry.write_text('{"version": "1"}')
    note_store(cache, uri)  # that run's entries belong to the new store
    assert forget_entries_of_another_store(cache, uri) == "" and entry.is_file()
    (tmp_path / "mlflow.db").unlink()  # deleted, not yet made again
    assert "another tracking store" in forget_entries_of_another_store(cache, uri) and not entry.exists()


def test_a_deleted_artifacts_folder_empties_the_cache(tmp_path: Path) -> None:
    """Registered versions keep their files under the artifact root: with the folder gone, a cached
    register-model would hand on a version whose model files no longer exist."""
    from mlflow import MlflowClient

    from cli.step_cache import forget_entries_of_another_store, note_store

    uri, artifacts = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "artifacts"
    MlflowClient(uri).search_experiments()
    artifacts.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = cache / "0123abcd.json"
    entry.write_text('{"version": "1"}')
    note_store(cache, uri, f"file://{artifacts}")
    assert forget_entries_of_another_store(cache, uri, f"file://{artifacts}") == "" and entry.is_file()
    artifacts.rmdir()
    assert "artifacts folder" in forget_entries_of_another_store(cache, uri, f"file://{artifacts}")
    assert not entry.exists()


def test_entries_name_the_run_that_wrote_them(tmp_path: Path) -> None:
    from cli.step_cache import note_producers, producer

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "aaaa1111.json").write_text("{}")
    note_producers(cache, "training-1", since=0)
    since = time.time()
    time.sleep(0.01)
    (cache / "bbbb2222.json").write_text("{}")  # written by the second run; aaaa… untouched
    note_producers(cache, "training-2", since=since)
    assert producer(cache, "aaaa") == "training-1" and producer(cache, "bbbb") == "training-2"
    assert producer(cache, "cccc") == ""
