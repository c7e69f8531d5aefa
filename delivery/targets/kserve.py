"""The KServe deployment target: an InferenceService in RawDeployment mode whose predictor is ``mlops serve``.

The mode and the predictor are :mod:`delivery.targets.kserve_predictor`'s (the same object the
overlays ship; why RawDeployment is said there and in ``infra/k8s/README.md``). KServe runs the
pods; the traffic split is the platform's own: every predictor pod's server hosts a
:class:`~serving.routing.rollout_router.RolloutRouter`, and this target drives each ready pod
through the admin route ``PUT /v2/models/<name>/rollout`` exactly as
:class:`~delivery.targets.local.LocalServerTarget` drives one local server (canary share,
shadow, removal), then checks that every pod answers with the same plan. Deploying moves the
registry alias the servers follow and waits until every pod's champion is the new version.
KServe's ``canaryTrafficPercent`` is never written (RawDeployment ignores it; the CRD does not
bound it either, so only :meth:`KServeTarget.set_traffic`'s own 0..100 check would).

The per-version analysis reads ``mlops_serving_*`` from every ready pod's ``/metrics``, summed
sample by sample, so the figures cover the whole service. Pods are found by KServe's label
``serving.kserve.io/inferenceservice=<name>``; a pod that started after the last traffic change
serves the champion only until the next call, which re-applies the plan to every pod (the rollout
controller calls at every step), and :meth:`KServeTarget.current` refuses to report a split the
pods do not agree on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from delivery.targets.base import AliasFollowingTarget, DeploymentError, DeploymentStatus
from delivery.targets.kserve_predictor import (
    DEPLOYMENT_MODE,
    DEPLOYMENT_MODE_ANNOTATION,
    HTTP_PORT,
    ISVC_LABEL,
    PLAIN_DEPLOYMENT_MODES,
    PredictorSpec,
    inference_service,
)
from delivery.targets.local import LocalServerTarget
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION

GROUP, VERSION, PLURAL = "serving.kserve.io", "v1beta1", "inferenceservices"


def pod_url(pod: Any) -> str:
    """The server of one predictor pod, by its IP (the rollout runs inside the cluster)."""
    return f"http://{pod.status.pod_ip}:{HTTP_PORT}"


class KServeTarget(AliasFollowingTarget):
    """Deploys versions of ``model_name`` through the InferenceService ``namespace/name``."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        model_name: str,
        tracking: TrackingStore | str,
        predictor: PredictorSpec | None = None,
        alias: str = CHAMPION,
        auth_token: str = "",
        url_of: Callable[[Any], str] = pod_url,
        admin_token: str = "",
        timeout_s: float = 300.0,
        poll_s: float = 1.0,
    ):
        from kubernetes import client

        super().__init__(tracking, model_name, alias)
        self.api = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.namespace, self.name = namespace, name
        self.predictor = predictor
        """What :meth:`deploy` creates when the service is absent (None: refuse; it must exist)."""
        self.auth_token = auth_token
        self.admin_token = admin_token
        """The pods' rollout admin credential (``--admin-token-file``): the weights are set with it."""
        self.url_of = url_of
        self.timeout_s = timeout_s
        """How long to wait for ready pods, and for every pod to serve a deployed version."""
        self.poll_s = poll_s

    def describe(self) -> str:
        return f"kserve {self.namespace}/{self.name}"

    def deploy(self, version: str, reason: str = "deployed") -> DeploymentStatus:
        """Create the service if absent, move the alias to ``version``, wait until every pod serves it alone."""
        self._ensure()
        first, *others = self._servers()
        status = first.deploy(version, reason)  # moves the alias (once), waits for this pod
        for server in others:
            server.wait_for_champion(version)
        return self._agreed([status] + [s.current() for s in others])

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        """``percent`` % to challenger ``version`` on every pod; 0 removes it. KServe's own split is not used."""
        if not 0 <= percent <= 100:
            raise ValueError(f"percent must be within 0..100, got {percent}")
        self._require()
        return self._agreed([server.set_traffic(version, percent) for server in self._servers()])

    def shadow(self, version: str, agreement_threshold: float = 0.5) -> DeploymentStatus:
        self._require()
        return self._agreed([s.shadow(version, agreement_threshold) for s in self._servers()])

    def current(self) -> DeploymentStatus:
        if self._get() is None:
            return DeploymentStatus(self.model_name, self._alias_version(), ())
        return self._agreed([server.current() for server in self._servers()])

    def rollback(self) -> DeploymentStatus:
        """Remove a live challenger from every pod; with none, serve the version the champion replaced."""
        self._require()
        servers = self._servers()
        live = [(s, c) for s in servers if (c := _challenger(s.current()))]
        if live:
            for server, challenger in live:
                server.set_traffic(challenger, 0)
            return self._agreed([s.current() for s in servers])
        return self._deploy_replaced()

    def metrics_text(self) -> str:
        """Every ready pod's ``/metrics``, summed sample by sample (untyped exposition lines)."""
        from prometheus_client.parser import text_string_to_metric_families

        totals: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for server in self._servers():
            for family in text_string_to_metric_families(server.metrics_text()):
                for sample in family.samples:
                    if sample.name.endswith("_created"):
                        continue  # a creation timestamp, not a count: summing it means nothing
                    key = (sample.name, tuple(sorted(sample.labels.items())))
                    totals[key] = totals.get(key, 0.0) + sample.value
        lines = []
        for (name, labels), value in sorted(totals.items()):
            rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(f"{name}{{{rendered}}} {value!r}" if labels else f"{name} {value!r}")
        return "\n".join(lines) + "\n"

    def controller_status(self) -> tuple[bool, str]:
        """Whether KServe's controller reports the service Ready, and what its conditions say."""
        isvc = self._get() or {}
        conditions = (isvc.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        said = "; ".join(
            f"{c.get('type')}={c.get('status')}"
            + (f" ({c.get('reason')}: {c.get('message')})" if c.get("reason") else "")
            for c in conditions
        )
        return ready, said or "no status from the KServe controller yet"

    def _servers(self) -> list[LocalServerTarget]:
        """One :class:`LocalServerTarget` per ready predictor pod, once KServe's controller reports the service
        Ready (waiting up to ``timeout_s`` for both)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            pods = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"{ISVC_LABEL}={self.name}"
            ).items
            ready = sorted((p for p in pods if _ready(p)), key=lambda p: p.metadata.name)
            controller_ready, said = self.controller_status()
            if ready and controller_ready:
                servers = [
                    LocalServerTarget(
                        self.url_of(p),
                        self.store,
                        self.model_name,
                        self.alias,
                        self.auth_token,
                        admin_token=self.admin_token,
                    )
                    for p in ready
                ]
                for server in servers:
                    server.timeout_s, server.poll_s = self.timeout_s, min(self.poll_s, 0.2)
                return servers
            if time.monotonic() > deadline:
                raise DeploymentError(
                    f"{self.describe()} has {len(ready)} ready predictor pod(s) after {self.timeout_s:g} s "
                    f"({len(pods)} labelled {ISVC_LABEL}={self.name}); KServe says: {said}; "
                    f"`kubectl describe isvc -n {self.namespace} {self.name}` and the pods' events say why"
                )
            time.sleep(self.poll_s)

    def _agreed(self, statuses: list[DeploymentStatus]) -> DeploymentStatus:
        """The one status every pod reports; pods that disagree are an error naming what each serves."""
        first = statuses[0]
        if any((s.serving, s.shadow) != (first.serving, first.shadow) for s in statuses[1:]):
            seen = "; ".join(f"pod {i}: {s.serving} shadow={s.shadow}" for i, s in enumerate(statuses))
            raise DeploymentError(
                f"{self.describe()}: the predictor pods serve different traffic plans ({seen}); a pod started "
                "after the last change: set the traffic again (every call re-applies it to every pod)"
            )
        return first

    def _ensure(self) -> dict[str, Any]:
        """The service, created from the platform's predictor if absent; refused if it is not the platform's."""
        existing = self._get()
        if existing is None:
            if self.predictor is None:
                raise DeploymentError(
                    f"{self.describe()} does not exist and no predictor was given to create it; apply the overlay "
                    "(infra/k8s) or pass predictor=PredictorSpec(image=...)"
                )
            body = inference_service(self.name, self.namespace, self.model_name, self.predictor, self.alias)
            self.api.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, body)
            return body
        mode = (existing["metadata"].get("annotations") or {}).get(DEPLOYMENT_MODE_ANNOTATION)
        predictor = (existing.get("spec") or {}).get("predictor") or {}
        if mode not in PLAIN_DEPLOYMENT_MODES or "model" in predictor or not predictor.get("containers"):
            raise DeploymentError(
                f"{self.describe()} is not the platform's InferenceService (mode {mode!r}, predictor "
                f"{sorted(predictor)}): the target splits traffic inside `mlops serve` and needs "
                f"{DEPLOYMENT_MODE_ANNOTATION}={DEPLOYMENT_MODE} with the platform container as the only "
                "implementation (infra/k8s/base/team/inferenceservice.yaml)"
            )
        return existing

    def _get(self) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            found: dict[str, Any] = self.api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.name
            )
            return found
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise DeploymentError(f"reading {self.describe()} failed: {exc.status} {_message(exc)}") from exc

    def _require(self) -> dict[str, Any]:
        if self._get() is None:
            raise DeploymentError(f"{self.describe()} does not exist; deploy() a first version to create it")
        return self._ensure()


def _challenger(status: DeploymentStatus) -> str | None:
    """The version a pod runs beside the champion (canary at any share, or shadow); None when converged."""
    if status.shadow:
        return status.shadow
    others = [share.version for share in status.serving if share.version != status.desired_version]
    return others[0] if others else None


def _ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp or pod.status.phase != "Running" or not pod.status.pod_ip:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _message(exc: Any) -> str:
    try:
        return str(json.loads(exc.body).get("message", exc.reason))
    except (TypeError, ValueError):
        return str(exc.reason)
