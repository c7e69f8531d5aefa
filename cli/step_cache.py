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
