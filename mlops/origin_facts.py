"""Facts a model version's lineage records about where it came from that are computed, not named: a file's
SHA-256 (the data, the ONNX file, a signed manifest's files) and the installed package's version."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_version() -> str:
    """Version of the installed mlops distribution ('unknown' in a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlops")
    except PackageNotFoundError:
        return "unknown"
