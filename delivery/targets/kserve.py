"""The KServe deployment target: a ``serving.kserve.io/v1beta1`` InferenceService driven through the Kubernetes API.

KServe splits traffic itself: changing the predictor's ``storageUri`` makes a new
revision, and ``canaryTrafficPercent`` sends that share of requests to it while the rest
stays on the last rolled-out revision; removing the field rolls the new revision out to
100 %, setting it to 0 sends everything back (KServe's own rollback). This target makes
exactly those patches with the ``kubernetes`` Python client, waits until the
InferenceService reports ``Ready`` for the generation it patched (with a timeout), and
reads what serves from ``status.components.predictor.traffic``. Which revision is which
model version is kept in two annotations (:data:`STABLE_ANNOTATION`, :data:`CANARY_ANNOTATION`).

What KServe honours: its docs state the canary rollout is supported only in the Serverless (Knative) deployment
mode; in RawDeployment mode (plain Deployments, no Knative) KServe does not split traffic
between revisions, so a canary there needs a second InferenceService and a mesh route — this
target refuses nothing, but the split only happens on Serverless. There is no request
mirroring in an InferenceService, so :meth:`KServeTarget.shadow` raises
:class:`~delivery.targets.base.ShadowUnsupported` (run the rollout with ``shadow`` off).
The per-version analysis reads the predictor's Prometheus metrics from ``metrics_url`` when
the predictor runs ``mlops serve`` (the platform image) and that URL is reachable.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from delivery.targets.base import (
    AliasFollowingTarget,
    DeploymentError,
    DeploymentStatus,
    ShadowUnsupported,
    TrafficShare,
)
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION

GROUP, VERSION, PLURAL = "serving.kserve.io", "v1beta1", "inferenceservices"
STABLE_ANNOTATION = "mlops/stable-version"
"""The model version of the last rolled-out revision (what answers when no canary runs)."""
CANARY_ANNOTATION = "mlops/canary-version"
"""The model version of the latest revision while it is a canary; absent otherwise."""


class KServeTarget(AliasFollowingTarget):
    """Deploys versions of ``model_name`` as the InferenceService ``namespace/name``."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        model_name: str,
        tracking: TrackingStore | str,
        storage_uri: Callable[[str], str] | None = None,
        model_format: str = "onnx",
        resources: dict[str, Any] | None = None,
        metrics_url: str = "",
        alias: str = CHAMPION,
        timeout_s: float = 300.0,
        poll_s: float = 1.0,
    ):
        from kubernetes import client

        super().__init__(tracking, model_name, alias)
        self.api = client.CustomObjectsApi(api_client)
        self.namespace, self.name = namespace, name
        self._storage_uri = storage_uri
        self.model_format = model_format
        self.resources = resources
        """Predictor resources (``requests``/``limits``) written with every new revision; None keeps them."""
        self.metrics_url = metrics_url
        self.timeout_s = timeout_s
        """How long to wait for ``Ready`` after a patch (image pull, model download, scale-up)."""
        self.poll_s = poll_s

    def describe(self) -> str:
        return f"kserve {self.namespace}/{self.name}"

    def storage_uri(self, version: str) -> str:
        """Where ``version``'s files are (the registry's download URI unless a resolver was given)."""
        if self._storage_uri is not None:
            return self._storage_uri(version)
        return str(self.client.get_model_version_download_uri(self.model_name, version))

    def deploy(self, version: str, reason: str = "deployed") -> DeploymentStatus:
        """Roll ``version`` out to 100 % (no canary; the service is created if absent), then move the alias."""
        previous = self._alias_version()
        uri = self.storage_uri(version)  # also proves the version exists before anything moves
        existing = self._get()
        if existing is None:
            self.api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self._manifest(version, uri)
            )
        else:
            self._patch(
                {STABLE_ANNOTATION: version, CANARY_ANNOTATION: None},
                {"canaryTrafficPercent": None, "model": self._model(uri)},
            )
        status = self._wait(lambda status: status.percent(version) == 100)
        # The alias moves once the service answers with the version: a refused patch or a revision
        # that never gets Ready leaves the registry as it was.
        self.store.move_alias(
            self.model_name,
            self.alias,
            version,
            previous=previous,
            reason=reason,
            links={"deployment": f"kserve/{self.namespace}/{self.name}"},
        )
        return DeploymentStatus(self.model_name, version, status.serving)

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        """A canary revision of ``version`` at ``percent`` %; 0 sends everything back to the stable revision."""
        if not 0 <= percent <= 100:
            raise ValueError(f"percent must be within 0..100, got {percent}")
        existing = self._require()
        annotations = existing["metadata"].get("annotations") or {}
        stable = annotations.get(STABLE_ANNOTATION)
        if version == stable:
            if percent == 100:
                return self.rollback() if annotations.get(CANARY_ANNOTATION) else self.current()
            raise DeploymentError(
                f"version {version} is the stable revision of {self.describe()}; canary another"
            )
        if percent == 0:
            if annotations.get(CANARY_ANNOTATION) != version:
                return self.current()
            self._patch({}, {"canaryTrafficPercent": 0})
            return self._wait(lambda status: status.percent(version) == 0)
        spec: dict[str, Any] = {"canaryTrafficPercent": percent}
        if annotations.get(CANARY_ANNOTATION) != version:
            spec["model"] = self._model(self.storage_uri(version))
        self._patch({CANARY_ANNOTATION: version}, spec)
        return self._wait(lambda status: status.percent(version) == percent)

    def shadow(self, version: str, agreement_threshold: float = 0.5) -> DeploymentStatus:
        raise ShadowUnsupported(
            f"{self.describe()}: an InferenceService cannot mirror requests to a version whose answers are "
            "discarded; run the rollout with shadow off (--no-shadow) here, or shadow on the local target"
        )

    def current(self) -> DeploymentStatus:
        existing = self._get()
        if existing is None:
            return DeploymentStatus(self.model_name, self._alias_version(), ())
        return self._status(existing)

    def rollback(self) -> DeploymentStatus:
        """A canary goes to 0 % (KServe's rollback); without one, the version the champion replaced rolls out."""
        existing = self._require()
        canary = (existing["metadata"].get("annotations") or {}).get(CANARY_ANNOTATION)
        if canary:
            return self.set_traffic(canary, 0)
        return self._deploy_replaced()

    def metrics_text(self) -> str:
        if not self.metrics_url:
            raise DeploymentError(
                f"{self.describe()}: no metrics_url; the analysis needs the predictor's /metrics (the platform "
                "image serves per-version counters there), reachable from where the rollout runs"
            )
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=10) as answer:
                return str(answer.read().decode())
        except (urllib.error.URLError, OSError) as exc:
            raise DeploymentError(
                f"{self.describe()}: metrics at {self.metrics_url} unreachable: {exc}"
            ) from exc

    def _model(self, uri: str) -> dict[str, Any]:
        model: dict[str, Any] = {"modelFormat": {"name": self.model_format}, "storageUri": uri}
        if self.resources is not None:
            model["resources"] = self.resources
        return model

    def _manifest(self, version: str, uri: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "InferenceService",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/part-of": "mlops", "mlops/model-name": self.model_name},
                "annotations": {STABLE_ANNOTATION: version},
            },
            "spec": {"predictor": {"model": self._model(uri)}},
        }

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
            raise DeploymentError(f"reading {self.describe()} failed: {exc.status} {exc.reason}") from exc

    def _require(self) -> dict[str, Any]:
        existing = self._get()
        if existing is None:
            raise DeploymentError(f"{self.describe()} does not exist; deploy() a first version to create it")
        return existing

    def _patch(self, annotations: dict[str, str | None], predictor: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        body = {"metadata": {"annotations": annotations}, "spec": {"predictor": predictor}}
        try:
            self.api.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, self.name, body)
        except ApiException as exc:
            raise DeploymentError(
                f"patching {self.describe()} was refused: {exc.status} {_message(exc)}"
            ) from exc

    def _status(self, existing: dict[str, Any]) -> DeploymentStatus:
        annotations = existing["metadata"].get("annotations") or {}
        stable, canary = annotations.get(STABLE_ANNOTATION), annotations.get(CANARY_ANNOTATION)
        traffic = ((existing.get("status") or {}).get("components") or {}).get("predictor", {}).get(
            "traffic"
        ) or []
        shares: dict[str, int] = {}
        for entry in traffic:
            version = canary if entry.get("latestRevision") and canary else stable
            if version is not None and entry.get("percent"):
                shares[version] = shares.get(version, 0) + int(entry["percent"])
        ordered = sorted(shares.items(), key=lambda item: item[0] != stable)
        return DeploymentStatus(
            self.model_name, self._alias_version(), tuple(TrafficShare(v, p) for v, p in ordered)
        )

    def _wait(self, reached: Callable[[DeploymentStatus], bool]) -> DeploymentStatus:
        """Wait until the service is Ready for its latest generation and ``reached`` holds."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            existing = self._require()
            status = existing.get("status") or {}
            ready = _condition(status, "Ready")
            current = status.get("observedGeneration", 0) >= existing["metadata"].get("generation", 0)
            if current and ready.get("status") == "True":
                result = self._status(existing)
                if reached(result):
                    return result
            if time.monotonic() > deadline:
                why = ready.get("message") or ready.get("reason") or "no Ready condition reported"
                raise DeploymentError(
                    f"{self.describe()} is not Ready for generation {existing['metadata'].get('generation')} after "
                    f"{self.timeout_s:g} s (observed generation {status.get('observedGeneration')}, Ready="
                    f"{ready.get('status', 'unknown')}: {why}); `kubectl describe isvc -n {self.namespace} "
                    f"{self.name}` shows the revision's events"
                )
            time.sleep(self.poll_s)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def _message(exc: Any) -> str:
    try:
        return str(json.loads(exc.body).get("message", exc.reason))
    except (TypeError, ValueError):
        return str(exc.reason)
