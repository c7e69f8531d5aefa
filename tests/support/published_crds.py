"""The projects' published CRDs (Trainer v2, Training Operator, Kueue, KServe, Prometheus operator) on a real API server.

The files are upstream's, unmodified, and live outside the repository (``../shared/crds`` beside
the checkout, or wherever ``MLOPS_PUBLISHED_CRDS`` points): the project must not copy them.
They load unmodified into the Kubernetes 1.34 API server of ``tests/services``: their CEL rules
(``x-kubernetes-validations``) run on every object sent, as on a user's cluster. When the files
are absent the test fails saying where they were looked for: it never falls back to the project's
own minimal CRDs, which cannot see a pruned field.

:func:`pruned` compares an object as sent with the object as the API server stores it and
names every field that was sent but not kept (a server prunes an undeclared field when the
client does not ask for strict field validation).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

CRDS_ENV = "MLOPS_PUBLISHED_CRDS"
REPO = Path(__file__).resolve().parents[2]
CEL_KEY = "x-kubernetes-validations"
"""Where a published CRD keeps its CEL rules: counted by the tests, so a CRD that lost them is noticed."""


def crds_dir() -> Path:
    """The folder of published CRDs, or a failed test saying where they were looked for."""
    folder = Path(os.environ.get(CRDS_ENV) or REPO.parent / "shared" / "crds")
    if not any(folder.glob("*.yaml")):
        pytest.fail(
            f"the published CRDs are not at {folder}: the real-CRD tests need the upstream files "
            f"(Trainer v2, Training Operator v1.9, Kueue, KServe v0.20, Prometheus operator; see "
            f"infra/k8s/README.md); put them there or set {CRDS_ENV} to their folder (CI always has them)"
        )
    return folder


def cel_rules(node: Any) -> int:
    """How many CEL rules (``x-kubernetes-validations`` entries) ``node`` holds, at every depth."""
    if isinstance(node, dict):
        return len(node.get(CEL_KEY) or []) + sum(cel_rules(v) for v in node.values())
    if isinstance(node, list):
        return sum(cel_rules(v) for v in node)
    return 0


def published_crds() -> list[dict[str, Any]]:
    """Every published CRD, exactly as upstream ships it."""
    out = []
    for path in sorted(crds_dir().glob("*.yaml")):
        out += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


def install_published_crds(cluster: Any) -> list[str]:
    """Install (or replace) the published CRDs on ``cluster`` and wait until they are established; their names."""
    crds = published_crds()
    stream = yaml.safe_dump_all(crds, sort_keys=False)
    # Server-side: the CRDs are too large for client-side apply's last-applied annotation.
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=stream)
    names = [crd["metadata"]["name"] for crd in crds]
    # Polled, not `kubectl wait`: a CRD created a moment ago has no conditions yet, which `wait` calls an error.
    deadline = time.monotonic() + 60
    while True:
        listed = json.loads(cluster.kubectl("get", "crd", "-o", "json").stdout)["items"]
        established = {
            crd["metadata"]["name"]
            for crd in listed
            for cond in (crd.get("status") or {}).get("conditions") or []
            if cond["type"] == "Established" and cond["status"] == "True"
        }
        if set(names) <= established:
            return names
        if time.monotonic() > deadline:
            pytest.fail(f"published CRDs not established after 60 s: {sorted(set(names) - established)}")
        time.sleep(0.2)


def pruned(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Fields of ``sent`` missing from, or different in, ``stored`` (defaults the server added are fine)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path or '(root)'}: sent an object, stored {stored!r}"]
        out = []
        for key, value in sent.items():
            where = f"{path}.{key}" if path else key
            if key not in stored:
                if value is None or value is False or value in ({}, [], 0, ""):
                    continue  # a zero value a built-in kind's field omits when stored (omitempty): nothing lost
                out.append(f"{where}: pruned")
            else:
                out += pruned(value, stored[key], where)
        return out
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: sent {len(sent)} item(s), stored {stored!r}"]
        return [
            p for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for p in pruned(a, b, f"{path}[{i}]")
        ]
    if sent != stored:
        return [f"{path}: sent {sent!r}, stored {stored!r}"]
    return []
