"""The platform's Kubernetes manifests (``infra/k8s``): render an overlay, validate it offline.

Rendering runs ``kubectl kustomize`` (kubectl embeds kustomize v5). No Python renderer of
``kustomization.yaml`` is usable here (the one binding on PyPI, ``pykustomize``, needs
Python 3.14), and re-implementing kustomize's patch and name-reference semantics would be
a second, subtly different kustomize. The launchers never shell out: only rendering does.

Validation is offline: built-in kinds against the Kubernetes OpenAPI schemas that
``kubernetes-validate`` ships (strict: unknown fields are errors), custom resources against
the structural schemas of the CRDs in ``infra/k8s/crds`` (closed the same way), and the core-type
parts those minimal CRDs leave open (pod templates, the KServe predictor's pod fields) against the
built-in schemas, so the offline check is closed wherever the projects' published CRDs are.
The published CRDs themselves are checked on a real API server in the tests
(tests/cli/test_manifests_published_crds.py).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MANIFESTS_DIR = Path(__file__).resolve().parents[1] / "infra" / "k8s"
"""``infra/k8s`` of this checkout: ``base/``, ``overlays/<name>/``, ``crds/``."""
KUBERNETES_SCHEMA_VERSION = "1.25"
"""Oldest schema set ``kubernetes-validate`` ships; every kind used is also served by v1.20."""


class OverlayRenderError(ValueError):
    """An overlay cannot be rendered, or a rendered object does not fit its schema."""


@dataclass(frozen=True)
class Problem:
    """One object that fails validation."""

    source: str
    """``overlay/Kind/namespace/name`` of the object."""
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def overlays(root: Path = MANIFESTS_DIR) -> list[str]:
    """Names of the overlays under ``root/overlays``."""
    return sorted(p.name for p in (root / "overlays").iterdir() if (p / "kustomization.yaml").is_file())


def kubectl() -> str:
    """Path of ``kubectl``, or a :class:`OverlayRenderError` saying how to get it."""
    path = shutil.which("kubectl")
    if path is None:
        raise OverlayRenderError(
            "rendering the manifests needs kubectl (it embeds kustomize) and none is on PATH; install kubectl "
            "1.27 or newer (https://kubernetes.io/docs/tasks/tools/) or run `kustomize build infra/k8s/overlays/<name>`"
        )
    return path


def render(overlay: str, root: Path = MANIFESTS_DIR) -> str:
    """The YAML stream of ``root/overlays/<overlay>`` (or of ``root/<overlay>`` for ``crds``)."""
    known = overlays(root)
    directory = root / "crds" if overlay == "crds" else root / "overlays" / overlay
    if overlay != "crds" and overlay not in known:
        raise OverlayRenderError(f"overlay {overlay!r} does not exist; choose one of {', '.join(known)}")
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise OverlayRenderError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return done.stdout


def objects(stream: str) -> list[dict[str, Any]]:
    """The objects of a YAML stream (empty documents dropped)."""
    return [doc for doc in yaml.safe_load_all(stream) if doc]


TEAM_RULES = ("LimitRange", "ResourceQuota", "LocalQueue")
"""The objects that make a namespace a team's: the limits, the quota and the queue its jobs go to."""

CLUSTER_RULES = ("PriorityClass", "WorkloadPriorityClass", "ResourceFlavor", "ClusterQueue")
"""The cluster-wide objects a team's rules point at."""


def team_rules(overlay: str, namespace: str, root: Path = MANIFESTS_DIR) -> list[dict[str, Any]]:
    """The overlay's admission rules for a team in ``namespace``: the overlay's own team LimitRange,
    ResourceQuota and LocalQueue moved there, and the cluster-wide PriorityClasses and queues they name
    (what a new team namespace needs to run the platform's jobs under the same rules)."""
    rendered = objects(render(overlay, root))
    teams = sorted({o["metadata"]["namespace"] for o in rendered if o["kind"] == "ResourceQuota"})
    if not teams:
        raise ValueError(f"overlay {overlay!r} has no team namespace (no ResourceQuota) to copy the rules of")
    rules = [o for o in rendered if o["kind"] in CLUSTER_RULES]
    for obj in rendered:
        if obj["kind"] in TEAM_RULES and obj["metadata"].get("namespace") == teams[0]:
            rules.append({**obj, "metadata": {**obj["metadata"], "namespace": namespace}})
    return rules


def crd_schemas(root: Path = MANIFESTS_DIR) -> dict[tuple[str, str], dict[str, Any]]:
    """``(apiVersion, kind)`` → the openAPIV3Schema of every CRD version in ``root/crds``."""
    schemas = {}
    for path in sorted((root / "crds").glob("*.yaml")):
        for crd in objects(path.read_text()):
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


def closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema as JSON Schema, with undeclared fields refused.

    The API server prunes fields a CRD does not declare; offline, such a field is a typo
    the author meant to take effect, so it is an error. ``metadata`` is left open.
    """
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if schema.get("x-kubernetes-int-or-string"):
        return {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    if "properties" in schema:
        out["properties"] = {
            name: (sub if name == "metadata" else closed_schema(sub))
            for name, sub in schema["properties"].items()
        }
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = closed_schema(schema["additionalProperties"])
    if isinstance(schema.get("items"), dict):
        out["items"] = closed_schema(schema["items"])
    return out


EMBEDDED: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime"): [
        ("spec.template.spec.replicatedJobs.*.template", "Job")
    ],
    ("serving.kserve.io/v1beta1", "InferenceService"): [("spec.predictor", "Pod")],
}
"""Core-type parts the minimal CRDs leave open (``x-kubernetes-preserve-unknown-fields``), checked
against the built-in schemas as the published CRDs check them: ``path`` (``*`` = every item or
value) -> the built-in kind that wraps it (a Job's spec, a Pod's spec)."""
POD_FIELDS = frozenset(
    {
        "containers",
        "volumes",
        "tolerations",
        "affinity",
        "nodeSelector",
        "priorityClassName",
        "serviceAccountName",
    }
)
"""The PodSpec fields of a KServe predictor (the rest are KServe's own: replicas, scaling, labels)."""


def _at(node: Any, parts: list[str], trail: str) -> Iterator[tuple[str, Any]]:
    if not parts:
        yield trail, node
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        items = node.items() if isinstance(node, dict) else enumerate(node if isinstance(node, list) else [])
        for k, v in items:
            yield from _at(v, rest, f"{trail}.{k}")
    elif isinstance(node, dict) and head in node:
        yield from _at(node[head], rest, f"{trail}.{head}" if trail else head)


def _wrapped(kind: str, part: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "embedded"}
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": part.get("spec", {})}
    spec = {k: v for k, v in part.items() if k in POD_FIELDS}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _embedded_problems(obj: dict[str, Any], source: str) -> Iterator[Problem]:
    import kubernetes_validate

    for path, kind in EMBEDDED.get((obj.get("apiVersion", ""), obj.get("kind", "")), []):
        for where, part in _at(obj, path.split("."), ""):
            try:
                kubernetes_validate.validate(_wrapped(kind, part), KUBERNETES_SCHEMA_VERSION, strict=True)
            except kubernetes_validate.ValidationError as error:
                inner = ".".join(str(p) for p in error.absolute_path)
                yield Problem(source, f"{where} (as a {kind}: {inner}): {error.message}")


def _label(overlay: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{overlay}/{obj.get('kind')}/{where}{meta.get('name')}"


def validate(objs: list[dict[str, Any]], overlay: str = "-", root: Path = MANIFESTS_DIR) -> Iterator[Problem]:
    """Every object that does not fit its schema, with the field and the reason."""
    import jsonschema
    import kubernetes_validate

    custom = {key: jsonschema.Draft7Validator(closed_schema(s)) for key, s in crd_schemas(root).items()}
    for obj in objs:
        source = _label(overlay, obj)
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        if key in custom:
            for error in sorted(custom[key].iter_errors(obj), key=lambda e: list(e.absolute_path)):
                path = ".".join(str(p) for p in error.absolute_path) or "(root)"
                yield Problem(source, f"{path}: {error.message}")
            yield from _embedded_problems(obj, source)
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_SCHEMA_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.absolute_path) or "(root)"
            yield Problem(source, f"{path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            yield Problem(source, f"{error.message}; add its CRD to {root / 'crds'}")


def check(names: list[str] | None = None, root: Path = MANIFESTS_DIR) -> tuple[int, list[Problem]]:
    """Render and validate ``names`` (default: every overlay); the number of objects checked and the problems."""
    count, problems = 0, list[Problem]()
    for overlay in names or overlays(root):
        objs = objects(render(overlay, root))
        count += len(objs)
        problems.extend(validate(objs, overlay, root))
    return count, problems
