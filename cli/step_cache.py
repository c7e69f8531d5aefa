"""Where ``mlops run --cache`` keeps kfp.local's step cache, so that a hit is only ever honest.

kfp.local 2.17 caches a task under a key made of its component, image, command (which
carries the component function's source) and arguments (artifact inputs by URI and
metadata). Two inputs are outside that key: the platform's own modules a component
imports (``components/*/core.py``, ``training/``…) and the contents of files a setting
names (``data.uri``, ``validation.expectation_suite``). Both are hashed here into the cache
folder's name, so a change to either starts an empty cache instead of reusing stale outputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PACKAGES = ("mlops", "components", "training", "serving", "pipelines")


def _code_digest() -> str:
    import importlib

    digest = hashlib.sha256()
    for package in PACKAGES:
        root = Path(importlib.import_module(package).__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _content_digest(uri: str) -> str:
    from mlops import storage

    if uri.startswith("s3://"):
        return hashlib.sha256(storage.read_bytes(uri)).hexdigest()
    path = Path(uri.removeprefix("file://"))
    if path.is_dir():
        digest = hashlib.sha256()
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(item.relative_to(path)).encode() + b"\0" + item.read_bytes())
        return digest.hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def cache_root(pipeline_root: Path, settings: Mapping[str, Any], file_settings: Iterable[str]) -> Path:
    """``<pipeline_root>/.kfp_cache/<digest of the platform code and the named files' contents>``.

    ``settings`` are the run's values by address; ``file_settings`` the addresses of those that name a file.
    """
    digest = hashlib.sha256(_code_digest().encode())
    for address in sorted(file_settings):
        value = str(settings.get(address) or "")
        digest.update(f"{address}={value}:{_content_digest(value) if value else ''}\n".encode())
    return pipeline_root / ".kfp_cache" / digest.hexdigest()[:16]


STORE_MARKER = "tracking-store"
"""The cache folder's note of the tracking store its entries' MLflow runs and model versions live in."""
PRODUCERS = "producers.json"
"""The cache folder's map of entry key → the run (its folder name) whose step wrote the entry."""


def store_identity(tracking_uri: str, artifact_root: str = "") -> str:
    """Which tracking store ``tracking_uri`` is: for a SQLite file, its Default experiment's creation time
    (set once, when MLflow made the file), so a store deleted and made anew reads as another store; and
    whether a local ``artifact_root`` folder (where registered versions keep their files) still exists.

    Cached steps hand on MLflow run ids and model versions (train-model's ``run_id``, register-model's
    ``version``); their entries are honest only in the store those were made in. ``absent`` when the file
    does not exist. A server or other store is trusted: its lifetime is its operator's, and its address
    may change between runs of the same store (a tracking server started per local run).
    """
    import sqlite3

    if not tracking_uri.startswith("sqlite:///"):
        return "a server or other store (trusted)"
    artifacts = ""
    if artifact_root and "://" not in artifact_root.removeprefix("file://"):
        folder = Path(artifact_root.removeprefix("file://")).expanduser()
        artifacts = f"; artifacts {artifact_root} {'present' if folder.is_dir() else 'absent'}"
    path = Path(tracking_uri.removeprefix("sqlite:///")).expanduser()
    if not path.is_file():
        return f"{tracking_uri} absent{artifacts}"
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            row = db.execute("SELECT creation_time FROM experiments WHERE experiment_id = 0").fetchone()
    except sqlite3.Error:
        row = None  # not (yet) an MLflow store: its schema is made by the run
    return f"{tracking_uri} created {row[0] if row else 'unknown'}{artifacts}"


def forget_entries_of_another_store(root: Path, tracking_uri: str, artifact_root: str = "") -> str:
    """Empty the cache folder ``root`` when the tracking store is not the one its entries were written with
    (the workspace's ``mlflow.db`` or its artifacts folder deleted or made anew); why, in words, else ``""``.

    kfp.local checks that a hit's output *files* exist, not the MLflow runs and model versions its
    outputs name: without this a re-run would reuse register-model's ``version`` of a registry that no
    longer holds it, and fail in the next step that tags it.
    """
    marker = root / STORE_MARKER
    if not marker.is_file():
        return ""
    recorded, now = marker.read_text(), store_identity(tracking_uri, artifact_root)
    if recorded == now:
        return ""
    for entry in root.glob("*.json"):
        entry.unlink()
    marker.unlink()
    return (
        f"emptied: its steps recorded to another tracking store than {tracking_uri} (it, or its artifacts "
        "folder, was deleted or made anew since)"
    )


def note_store(root: Path, tracking_uri: str, artifact_root: str = "") -> None:
    """Write which tracking store the entries in ``root`` were recorded to (after a run)."""
    if root.is_dir():
        (root / STORE_MARKER).write_text(store_identity(tracking_uri, artifact_root))


def note_producers(root: Path, run_id: str, since: float) -> None:
    """Attribute the entries written (or rewritten) in ``root`` since ``since`` (epoch seconds) to ``run_id``.

    A step answered from the cache has no log and no MLflow run of its own in this run; the entry's
    producer lets the run's record and console line name the earlier run whose step made its outputs.
    """
    import json

    path = root / PRODUCERS
    producers = _producers(root)
    for entry in root.glob("*.json"):
        if entry.name != PRODUCERS and entry.stat().st_mtime >= since:
            producers[entry.stem] = run_id
    path.write_text(json.dumps(producers, indent=0, sort_keys=True) + "\n")


def producer(root: Path, key_prefix: str) -> str:
    """The run (folder name) whose step wrote the entry whose key starts with ``key_prefix``; ``""`` unknown."""
    return next((run for key, run in _producers(root).items() if key.startswith(key_prefix)), "")


def _producers(root: Path) -> dict[str, str]:
    import json

    try:
        loaded = json.loads((root / PRODUCERS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
