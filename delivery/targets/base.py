"""The deployment-target interface: deploy a version, shift traffic, report what serves, roll back.

A rollout is written once against :class:`DeploymentTarget` and runs unchanged on a
laptop (:class:`~delivery.targets.local.LocalServerTarget`) and on a cluster
(:class:`~delivery.targets.kserve.KServeTarget`, where ``set_traffic`` sets the platform's own
split on every predictor pod of the InferenceService, never KServe's ``canaryTrafficPercent``,
and ``current`` is the plan every pod agrees on). Which version *should* serve stays in the
MLflow registry (alias ``champion``); a target only makes the serving side follow it and
reports whether it does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from mlops.tracking.store import TrackingStore
from mlops.vocabulary import PROMOTED_AT_TAG, REPLACED_BY_TAG


class DeploymentError(RuntimeError):
    """The target could not do what was asked; the message says what it saw and what to check."""


class TrafficSplitUnsupported(DeploymentError):
    """The target serves one version at a time and was asked to split traffic between two."""


class ShadowUnsupported(DeploymentError):
    """The target cannot mirror requests to a version whose answers are discarded."""


@dataclass(frozen=True)
class TrafficShare:
    """One version answering requests, and the percentage of requests it answers."""

    version: str
    percent: int


@dataclass(frozen=True)
class DeploymentStatus:
    """What a target serves now, next to what it was told to serve."""

    model_name: str
    desired_version: str | None
    """The version the target was told to serve (the registry alias); None when the alias is unset."""
    serving: tuple[TrafficShare, ...]
    """Versions that answer requests right now, as reported by the serving side itself."""
    shadow: str | None = None
    """A version scoring a copy of every request without answering any (None: no shadow)."""

    @property
    def converged(self) -> bool:
        """True when the desired version answers all requests and nothing else runs beside it."""
        return (
            self.desired_version is not None
            and self.serving == (TrafficShare(self.desired_version, 100),)
            and self.shadow is None
        )

    def percent(self, version: str) -> int:
        """The share of requests ``version`` answers (0 when it does not serve)."""
        return sum(share.percent for share in self.serving if share.version == version)


class DeploymentTarget(Protocol):
    """Where one registered model serves. Each method returns the status it left behind.

    A target is bound to one model name: one serving endpoint (a local server, an
    InferenceService) serves one model, and a rollout moves one model at a time.
    """

    @property
    def model_name(self) -> str: ...

    def deploy(self, version: str) -> DeploymentStatus:
        """Make ``version`` answer all requests; return once it does, or raise :class:`DeploymentError`."""
        ...

    def set_traffic(self, version: str, percent: int) -> DeploymentStatus:
        """Send ``percent`` % of requests to ``version`` and the rest to the current stable version.

        Targets that serve a single version raise :class:`TrafficSplitUnsupported` for 0 < percent < 100.
        """
        ...

    def current(self) -> DeploymentStatus:
        """Which version(s) serve now and with what share of traffic; changes nothing."""
        ...

    def rollback(self) -> DeploymentStatus:
        """Serve again the version that served before the current one; return once it does."""
        ...


class TrafficTarget(DeploymentTarget, Protocol):
    """A target a rollout can drive step by step: split traffic, mirror it, and report per-version metrics."""

    def describe(self) -> str:
        """Where it serves, in one line for the audit trail (``local http://…``, ``kserve ns/name``)."""
        ...

    def shadow(self, version: str, agreement_threshold: float) -> DeploymentStatus:
        """Let ``version`` score a copy of every request while the stable version answers all of them.

        Raises :class:`ShadowUnsupported` where the serving side cannot mirror.
        """
        ...

    def metrics_text(self) -> str:
        """The serving side's Prometheus metrics (text format); raises :class:`DeploymentError` if unreachable."""
        ...


def replaced_by(store: TrackingStore, model_name: str, version: str) -> str:
    """The version ``version`` most recently replaced: the last one promoted among those tagged replaced_by it.

    The registry's ``mlops.replaced_by`` tags are the history a target's rollback walks back.
    """
    candidates = [
        v
        for v in store.search_versions(f"name='{model_name}'")
        if v.tags.get(REPLACED_BY_TAG) == str(version)
    ]
    if not candidates:
        raise DeploymentError(
            f"cannot roll back {model_name} version {version}: no version records "
            f"{REPLACED_BY_TAG}={version}, so it replaced nothing"
        )
    latest = max(candidates, key=lambda v: (v.tags.get(PROMOTED_AT_TAG, ""), int(v.version)))
    return str(latest.version)


class AliasFollowingTarget(ABC):
    """What every target shares: one model, the registry alias that names the version it should
    serve, and rollback to the version that alias held before (the registry's history)."""

    def __init__(self, tracking: TrackingStore | str, model_name: str, alias: str):
        self.store = tracking if isinstance(tracking, TrackingStore) else TrackingStore.from_uri(tracking)
        """The registry whose alias the serving side follows (a URI builds it)."""
        self.tracking_uri = self.store.tracking_uri
        self._model_name = model_name
        self.alias = alias

    @property
    def model_name(self) -> str:
        return self._model_name

    @abstractmethod
    def deploy(self, version: str, reason: str = "deployed") -> DeploymentStatus: ...

    def _alias_version(self) -> str | None:
        return self.store.alias_version(self.model_name, self.alias)

    def _deploy_replaced(self) -> DeploymentStatus:
        """Deploy again the version the alias's current version replaced."""
        current = self._alias_version()
        if current is None:
            raise DeploymentError(f"nothing to roll back: models:/{self.model_name}@{self.alias} is not set")
        return self.deploy(
            replaced_by(self.store, self.model_name, current), reason=f"rollback from version {current}"
        )
