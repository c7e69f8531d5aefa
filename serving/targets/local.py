"""The local deployment target: an ``mlops serve`` process following a registry alias.

The server follows ``models:/<name>@<alias>`` and hot-reloads when the alias moves
(``serving/README.md``), so deploying is moving the alias in MLflow, exactly as a
promotion does (``mlops.promoted_at`` on the new version, ``mlops.replaced_by`` on the
one it replaces), and then waiting until the server itself answers with the new
version. Status comes from the server's own ``GET /v2/models/<name>`` metadata: what
answers requests, not what the registry says should. The registry's
``mlops.replaced_by`` tags are the history :meth:`LocalServerTarget.rollback` walks
back, so no second record of "what served before" is kept here.

One server answers with one version, so traffic cannot be split here; a canary on the
local server would go through a :class:`~serving.model_router.ModelRouter` in the
server, on a cluster through KServe (``serving/targets/kserve.py``, not written yet).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from mlops.registry import CHAMPION, PROMOTED_AT_TAG, REPLACED_BY_TAG, move_alias
from serving.targets.base import DeploymentError, DeploymentStatus, TrafficShare, TrafficSplitUnsupported

if TYPE_CHECKING:
    from mlflow import MlflowClient


class LocalServerTarget:
    """Deploys versions of ``model_name`` to the ``mlops serve`` at ``server_url`` by moving ``alias``."""

    def __init__(
        self,
        server_url: str,
        tracking_uri: str,
        model_name: str,
        alias: str = CHAMPION,
        auth_token: str = "",
        timeout_s: float = 120.0,
        poll_s: float = 0.2,
    ):
        self.server_url = server_url.rstrip("/")
        self.tracking_uri = tracking_uri
        self._model_name = model_name
        self.alias = alias
        self.timeout_s = timeout_s
        """How long :meth:`deploy` waits for the server to answer with the new version (its reload
        interval, 30 s by default, plus download and verification)."""
        self.poll_s = poll_s
        self._headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        self._client: MlflowClient | None = None

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def client(self) -> MlflowClient:
        # Built on first use: opening a SQLite store runs MLflow's schema check (~1 s).
        if self._client is None:
            from mlflow import MlflowClient

            self._client = MlflowClient(tracking_uri=self.tracking_uri, registry_uri=self.tracking_uri)
        return self._client

    def deploy(self, version: str, reason: str = "deployed") -> DeploymentStatus:
        from mlflow.exceptions import MlflowException

        name = self.model_name
        try:
            self.client.get_model_version(name, version)
        except MlflowException as exc:
            raise DeploymentError(
                f"cannot deploy {name} version {version!r}: not in the registry at {self.tracking_uri} "
                f"({exc.message})"
            ) from exc
        move_alias(
            self.client,
            name,
            self.alias,
            version,
            previous=self._alias_version(),
            reason=reason,
            links={"deployment": f"local/{name}"},
        )
        return self._wait_until_serving(version)

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        if not 0 <= percent <= 100:
            raise ValueError(f"percent must be within 0..100, got {percent}")
        if percent == 100:
            return self.deploy(version)
        status = self.current()
        if percent == 0 and status.percent(version) == 0:
            return status
        raise TrafficSplitUnsupported(
            f"the local server answers every request with one version (now {status.serving[0].version}); "
            f"it cannot send {percent} % to version {version}. Use deploy()/rollback(), or a target that "
            "splits traffic (KServe)"
        )

    def current(self) -> DeploymentStatus:
        served = self._served_version()
        return DeploymentStatus(self.model_name, self._alias_version(), (TrafficShare(served, 100),))

    def rollback(self) -> DeploymentStatus:
        current = self._alias_version()
        if current is None:
            raise DeploymentError(f"nothing to roll back: models:/{self.model_name}@{self.alias} is not set")
        return self.deploy(self._replaced_by(current), reason=f"rollback from version {current}")

    def _replaced_by(self, version: str) -> str:
        """The version ``version`` most recently replaced: the last one promoted among those tagged replaced_by it."""
        candidates = [
            v
            for v in self.client.search_model_versions(f"name='{self.model_name}'")
            if v.tags.get(REPLACED_BY_TAG) == str(version)
        ]
        if not candidates:
            raise DeploymentError(
                f"cannot roll back {self.model_name} version {version}: no version records "
                f"{REPLACED_BY_TAG}={version}, so it replaced nothing"
            )
        latest = max(candidates, key=lambda v: (v.tags.get(PROMOTED_AT_TAG, ""), int(v.version)))
        return str(latest.version)

    def _alias_version(self) -> str | None:
        from mlflow.exceptions import MlflowException

        try:
            return str(self.client.get_model_version_by_alias(self.model_name, self.alias).version)
        except MlflowException:
            return None

    def _served_version(self) -> str:
        """The version the server says it answers with (``GET /v2/models/<name>``)."""
        url = f"{self.server_url}/v2/models/{self.model_name}"
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=self._headers), timeout=10
            ) as answer:
                metadata = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise DeploymentError(
                f"GET {url} answered {exc.code}: {exc.read().decode(errors='replace')}"
            ) from exc
        except OSError as exc:  # URLError, refused connection, timeout
            raise DeploymentError(f"the server at {self.server_url} is unreachable: {exc}") from exc
        return str(metadata["versions"][0])

    def _wait_until_serving(self, version: str) -> DeploymentStatus:
        deadline = time.monotonic() + self.timeout_s
        while True:
            status = self.current()
            if status.percent(version) == 100:
                return status
            if time.monotonic() > deadline:
                raise DeploymentError(
                    f"{self.model_name} version {version} is models:/{self.model_name}@{self.alias}, but the "
                    f"server at {self.server_url} still answers with version {status.serving[0].version} after "
                    f"{self.timeout_s:.0f} s; its log says why (a version failing its digest check is refused), "
                    "and its --reload-interval-s sets how soon it looks"
                )
            time.sleep(self.poll_s)
