"""Find pipelines and pipeline versions on a KFP deployment by display name.

KFP identifies everything by generated IDs while people and CI name pipelines
("training") and versions (the commit); these helpers do the name -> object step
with the same filter syntax ``kfp.Client.get_pipeline_id`` uses.
"""

from __future__ import annotations

import json
from typing import Any

import yaml


def name_filter(name: str) -> str:
    return json.dumps({"predicates": [{"operation": "EQUALS", "key": "display_name", "stringValue": name}]})


def find_pipeline(client: Any, name: str, namespace: str | None, include_shared: bool = False) -> Any | None:
    """The pipeline called ``name`` in ``namespace`` (shared pipelines when None), or None.

    ``include_shared``: also look among shared pipelines, which runs in any namespace may use.
    """
    result = client.list_pipelines(filter=name_filter(name), namespace=namespace, page_size=2)
    found = result.pipelines or []
    if len(found) > 1:
        raise ValueError(
            f"{len(found)} pipelines are named {name!r} on the server; rename or delete the duplicates"
        )
    if not found and namespace and include_shared:
        return find_pipeline(client, name, None)
    return found[0] if found else None


def find_version(client: Any, pipeline_id: str, name: str) -> Any | None:
    result = client.list_pipeline_versions(pipeline_id, filter=name_filter(name), page_size=2)
    found = result.pipeline_versions or []
    return found[0] if found else None


def newest_version(client: Any, pipeline_id: str) -> Any | None:
    result = client.list_pipeline_versions(pipeline_id, sort_by="created_at desc", page_size=1)
    found = result.pipeline_versions or []
    return found[0] if found else None


def version_names(client: Any, pipeline_id: str, limit: int = 5) -> list[str]:
    """A few recent version names, to suggest in an error message."""
    result = client.list_pipeline_versions(pipeline_id, sort_by="created_at desc", page_size=limit)
    return [v.display_name for v in result.pipeline_versions or []]


def pipeline_spec_of(version: Any) -> dict[str, Any]:
    """The IR pipeline spec of a version: KFP wraps it when the upload also had a platform spec."""
    spec = version.pipeline_spec
    if isinstance(spec, dict) and "root" not in spec and isinstance(spec.get("pipeline_spec"), dict):
        spec = spec["pipeline_spec"]
    if not isinstance(spec, dict) or "root" not in spec:
        raise ValueError(
            f"pipeline version {version.display_name!r} has no pipeline spec the client can read; upload it again"
        )
    return spec


def comparable(spec: dict[str, Any]) -> dict[str, Any]:
    """A spec minus what changes between compiles of the same code (the SDK version stamp).

    Round-trips through JSON so that a YAML file and the server's JSON answer compare
    equal (ints stored by the server as doubles are the same JSON numbers).
    """
    spec = {k: v for k, v in spec.items() if k != "sdkVersion"}
    return json.loads(json.dumps(spec, sort_keys=True), parse_int=float)


def read_package(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        docs = [doc for doc in yaml.safe_load_all(handle) if doc is not None]
    if not docs or not isinstance(docs[0], dict) or "root" not in docs[0]:
        raise ValueError(f"{path} is not a compiled KFP pipeline (no 'root' in its first YAML document)")
    first: dict[str, Any] = docs[0]
    return first
