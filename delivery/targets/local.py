"""The local deployment target: an ``mlops serve`` process following a registry alias.

The server follows ``models:/<name>@<alias>`` and hot-reloads when the alias moves
(``serving/README.md``), so deploying is moving the alias in MLflow, exactly as a
promotion does (``mlops.promoted_at`` on the new version, ``mlops.replaced_by`` on the
one it replaces), and then waiting until the server itself answers with the new
version. Status comes from the server's own ``GET /v2/models/<name>`` metadata: what
answers requests, not what the registry says should. The registry's
``mlops.replaced_by`` tags are the history :meth:`LocalServerTarget.rollback` walks
back, so no second record of "what served before" is kept here.

Traffic is split inside the server: its :class:`~serving.routing.rollout_router.RolloutRouter`
hosts a challenger beside the champion, and :meth:`LocalServerTarget.set_traffic` /
:meth:`LocalServerTarget.shadow` set the challenger's share through the admin route
``PUT /v2/models/<name>/rollout`` (its own credential: ``admin_token``; the inference token
``auth_token`` is kept for ``/metrics``), without a restart. A challenger
at 100 % still leaves the champion alias where it is; :meth:`deploy` moves the alias,
waits until the server's champion follows, then removes the challenger.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from delivery.targets.base import AliasFollowingTarget, DeploymentError, DeploymentStatus, TrafficShare
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION


class LocalServerTarget(AliasFollowingTarget):
    """Deploys versions of ``model_name`` to the ``mlops serve`` at ``server_url`` by moving ``alias``."""

    def __init__(
        self,
        server_url: str,
        tracking: TrackingStore | str,
        model_name: str,
        alias: str = CHAMPION,
        auth_token: str = "",
        timeout_s: float = 120.0,
        poll_s: float = 0.2,
        admin_token: str = "",
    ):
        super().__init__(tracking, model_name, alias)
        self.server_url = server_url.rstrip("/")
        self.timeout_s = timeout_s
        """How long :meth:`deploy` waits for the server to answer with the new version (its reload
        interval, 30 s by default, plus download and verification)."""
        self.poll_s = poll_s
        self.request_timeout_s = 60.0
        """How long one call to the server may take (loading a challenger downloads and verifies it)."""
        self._headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        """The inference token's header: ``/metrics``."""
        self._admin_headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else self._headers
        """The rollout admin route's header: its own token (a server without one falls back to the inference
        token, which it allows on a loopback host only)."""

    def describe(self) -> str:
        return f"local {self.server_url}"

    def deploy(self, version: str, reason: str = "deployed") -> DeploymentStatus:
        from mlflow.exceptions import MlflowException

        name = self.model_name
        try:
            self.store.model_version(name, version)
        except MlflowException as exc:
            raise DeploymentError(
                f"cannot deploy {name} version {version!r}: not in the registry at {self.tracking_uri} "
                f"({exc.message})"
            ) from exc
        self.store.move_alias(
            name,
            self.alias,
            version,
            previous=self._alias_version(),
            reason=reason,
            links={"deployment": f"local/{name}"},
        )
        plan = self._wait_until_serving(version)
        if plan.get("challenger"):
            return self._plan({"challenger": None})  # the promoted challenger now answers as champion
        return self._status(plan)

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        """Send ``percent`` % to challenger ``version`` (0 removes it); 100 % for the champion removes any challenger."""
        if not 0 <= percent <= 100:
            raise ValueError(f"percent must be within 0..100, got {percent}")
        plan = self._call("GET", self._rollout_url)
        if version == str(plan["champion"]):
            if percent == 100:
                return self._plan({"challenger": None})
            raise DeploymentError(
                f"version {version} is the champion here and answers what the challenger leaves; set the "
                f"challenger's share instead, or deploy() another version"
            )
        if percent == 0:
            return (
                self._plan({"challenger": None}) if plan.get("challenger") == version else self._status(plan)
            )
        return self._plan({"challenger": version, "percent": percent})

    def shadow(self, version: str, agreement_threshold: float = 0.5) -> DeploymentStatus:
        return self._plan({"challenger": version, "shadow": True, "agreement_threshold": agreement_threshold})

    def current(self) -> DeploymentStatus:
        return self._status(self._call("GET", self._rollout_url))

    def rollback(self) -> DeploymentStatus:
        """Remove a live challenger (canary at 0 %); with none, serve the version the champion replaced."""
        try:
            live_challenger = self._call("GET", self._rollout_url).get("challenger")
        except DeploymentError:
            live_challenger = None  # unreachable: the registry says whether there is anything to go back to
        if live_challenger:
            return self._plan({"challenger": None})
        return self._deploy_replaced()

    def metrics_text(self) -> str:
        url = f"{self.server_url}/metrics"
        return self._send(urllib.request.Request(url, headers=self._headers), url).decode()

    @property
    def _rollout_url(self) -> str:
        return f"{self.server_url}/v2/models/{self.model_name}/rollout"

    def _plan(self, plan: dict[str, object]) -> DeploymentStatus:
        return self._status(self._call("PUT", self._rollout_url, plan))

    def _status(self, plan: dict[str, object]) -> DeploymentStatus:
        champion, challenger = str(plan["champion"]), plan.get("challenger")
        percent = int(str(plan.get("percent") or 0)) if challenger else 0
        shares = [TrafficShare(champion, 100 - percent)] if percent < 100 else []
        if percent:
            shares.append(TrafficShare(str(challenger), percent))
        shadow = str(challenger) if challenger and plan.get("shadow") else None
        return DeploymentStatus(self.model_name, self._alias_version(), tuple(shares), shadow)

    def _call(self, method: str, url: str, body: dict[str, object] | None = None) -> dict[str, object]:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._admin_headers, **({"Content-Type": "application/json"} if data else {})}
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        answer: dict[str, object] = json.loads(self._send(request, url))
        return answer

    def _send(self, request: urllib.request.Request, url: str) -> bytes:
        try:
            with urllib.request.urlopen(request, timeout=self.request_timeout_s) as answer:
                body: bytes = answer.read()
                return body
        except urllib.error.HTTPError as exc:
            raise DeploymentError(
                f"{request.get_method()} {url} answered {exc.code}: {exc.read().decode(errors='replace')}"
            ) from exc
        except OSError as exc:  # URLError, refused connection, timeout
            raise DeploymentError(f"the server at {self.server_url} is unreachable: {exc}") from exc

    def wait_for_champion(self, version: str) -> None:
        """Wait until the server's champion (the model following the alias) is ``version``; a
        challenger of the same version is then removed (it answers as champion now)."""
        if self._wait_until_serving(version).get("challenger"):
            self._plan({"challenger": None})

    def _wait_until_serving(self, version: str) -> dict[str, object]:
        """Wait until the server's champion (the model following the alias) is ``version``."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            plan = self._call("GET", self._rollout_url)
            if str(plan["champion"]) == version:
                return plan
            if time.monotonic() > deadline:
                raise DeploymentError(
                    f"{self.model_name} version {version} is models:/{self.model_name}@{self.alias}, but the "
                    f"server at {self.server_url} still answers with version {plan['champion']} after "
                    f"{self.timeout_s:.0f} s; its log says why (a version failing its digest check is refused), "
                    "and its --reload-interval-s sets how soon it looks"
                )
            time.sleep(self.poll_s)
