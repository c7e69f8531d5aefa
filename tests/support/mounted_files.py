"""Which files a container's ``--…-file=PATH`` flags name, and whether its pod's volumes provide them.

A Secret or ConfigMap volume with ``items`` projects only those keys: a flag naming another key's file
starts a pod whose process exits on the missing file (what the real-node serving test found for the
admin token). Checked offline on every manifest and object the platform renders.
"""

from __future__ import annotations

import posixpath
from typing import Any


def file_flags(container: dict[str, Any]) -> dict[str, str]:
    """``--flag-file=PATH`` arguments (and command parts) of ``container``: flag -> path."""
    parts = [*container.get("command", []), *container.get("args", [])]
    return {
        flag: path
        for flag, _, path in (str(p).partition("=") for p in parts)
        if flag.startswith("--") and flag.endswith("-file") and path
    }


def missing_files(pod_spec: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """The file flags whose path no volume mount of ``container`` provides: flag -> path."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    provided: set[str] = set()
    folders: set[str] = set()
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        source = volume.get("secret") or volume.get("configMap")
        items = (source or {}).get("items")
        if items:
            provided |= {posixpath.join(mount["mountPath"], item["path"]) for item in items}
        else:  # every key of the Secret, or a folder of files: any path under it
            folders.add(mount["mountPath"].rstrip("/") + "/")
    return {
        flag: path
        for flag, path in file_flags(container).items()
        if path not in provided and not any(path.startswith(folder) for folder in folders)
    }
