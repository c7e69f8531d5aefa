"""Champion and challenger side by side in one server: weighted split, sticky keys, shadow mirroring.

:class:`RolloutRouter` is the :class:`~serving.routing.model_router.ModelRouter` ``mlops serve``
uses. With no challenger it answers like :class:`~serving.routing.model_router.AliasRouter`
(the champion follows its alias and hot-reloads). A challenger is added, re-weighted
or removed at run time through :meth:`RolloutRouter.apply` (the admin route in
:mod:`serving.routing.rollout_admin`), without a restart:

- **canary** (``percent`` > 0): that share of requests is scored by the challenger.
  A request carrying ``X-Request-Key`` always lands on the same side for a given
  percentage (CRC32 of the key), so a client's answers do not flip between models.
  A challenger that raises or returns a non-finite score is counted as an error for
  its version and the request is answered by the champion: the client never sees it.
- **shadow**: the champion answers every request; the challenger scores a copy after
  the answer is ready, on a background task, so it neither delays nor breaks the
  champion's response. Its scores are only counted (agreement with the champion's
  predicted class, score histogram), never returned.

Every scored request is counted per version and role in :class:`~serving.metrics.ServingMetrics`
(``mlops_serving_scored_requests``, ``..._scoring_latency_seconds``, ``..._scores``,
``..._shadow_rows``): the figures a rollout's analysis diffs between two scrapes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from serving.backend import ModelBackend
from serving.errors import Conflict
from serving.reload import ModelHolder
from serving.routing.model_router import AliasRouter, Scorer

if TYPE_CHECKING:
    from serving.config import ServerConfig
    from serving.metrics import ServingMetrics
    from serving.routing.model_router import Target
    from serving.runtime import LoadedModel

log = logging.getLogger("serving.routing")
REQUEST_KEY_HEADER = "x-request-key"
"""A request carrying this header is routed by a hash of its value: same key, same side."""
MAX_PENDING_SHADOW = 256
"""Shadow copies waiting at once; beyond this a copy is dropped (counted), never queued behind the champion."""


class TrafficPlan(BaseModel):
    """What the admin route is told: which version is the challenger, and how it takes part."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    challenger: str | None = Field(default=None, description="Challenger version; None removes it.")
    percent: int = Field(default=0, ge=0, le=100, description="Share of requests the challenger answers.")
    shadow: bool = Field(default=False, description="Score a copy of every request; the champion answers.")
    agreement_threshold: float = Field(
        default=0.5, gt=0.0, lt=1.0, description="Score from which a row is the positive class (agreement)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> TrafficPlan:
        if self.shadow and self.percent:
            raise ValueError(f"shadow and percent={self.percent} exclude each other: a shadow answers nobody")
        if self.challenger is None and (self.shadow or self.percent):
            raise ValueError("name the challenger version to send traffic or a shadow copy to")
        return self

    @property
    def active(self) -> bool:
        return self.challenger is not None and (self.shadow or self.percent > 0)


class ContractMismatch(ValueError):
    """The challenger reads requests differently from the champion: it cannot share their traffic."""


def check_contract(champion: LoadedModel, challenger: LoadedModel) -> None:
    """Both models must read the same request the same way (feature names, order, vocabularies)."""
    a, b = champion.spec, challenger.spec
    if (a.numeric, a.categorical, a.vocabularies) != (b.numeric, b.categorical, b.vocabularies):
        changed = [n for n in sorted(set(a.names) | set(b.names)) if n not in a.names or n not in b.names]
        raise ContractMismatch(
            f"{challenger.name} version {challenger.version} reads requests differently from the champion "
            f"(version {champion.version}): features {list(b.names)} vs {list(a.names)}"
            + (f", differing in {changed}" if changed else ", or different categorical vocabularies")
            + "; a canary needs both versions to accept the same request. Deploy it instead of rolling it out."
        )


class _Scored:
    """A backend as the data plane sees it, counting each request under its version and role."""

    def __init__(self, backend: ModelBackend, role: str, name: str, metrics: ServingMetrics):
        self.backend, self.holder, self.role, self.name, self.metrics = (
            backend,
            backend.holder,
            role,
            name,
            metrics,
        )

    async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        started = time.perf_counter()
        try:
            y, used = await self.backend.predict(x, version)
        except Exception:
            self.metrics.scored(self.name, self.holder.current.version, self.role, 0.0, None)
            raise
        self.metrics.scored(self.name, used.version, self.role, time.perf_counter() - started, y)
        return y, used


class _Canary:
    """The challenger answers; if it fails, the champion does and the failure counts against the challenger."""

    def __init__(self, challenger: ModelBackend, champion: _Scored, name: str, metrics: ServingMetrics):
        self.challenger, self.champion, self.name, self.metrics = challenger, champion, name, metrics
        self.holder = champion.holder  # requests are parsed against the shared contract
        self._warned = False

    async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        started = time.perf_counter()
        try:
            y, used = await self.challenger.predict(x, None)
            if not np.isfinite(y).all():
                raise ValueError("the challenger returned a non-finite score")
        except Exception as exc:
            self.metrics.scored(self.name, self.challenger.holder.current.version, "challenger", 0.0, None)
            if not self._warned:
                self._warned = True
                log.warning("challenger failed, the champion answered (counted, logged once): %s", exc)
            return await self.champion.predict(x, version)
        self.metrics.scored(self.name, used.version, "challenger", time.perf_counter() - started, y)
        return y, used


class _Mirror:
    """The champion answers; the challenger scores a copy afterwards, off the response path."""

    def __init__(
        self,
        challenger: ModelBackend,
        champion: _Scored,
        name: str,
        metrics: ServingMetrics,
        threshold: float,
    ):
        self.challenger, self.champion, self.name, self.metrics = challenger, champion, name, metrics
        self.holder = champion.holder
        self.threshold = threshold
        self.pending: set[asyncio.Task[None]] = set()

    async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        y, used = await self.champion.predict(x, version)
        if len(self.pending) < MAX_PENDING_SHADOW:
            task = asyncio.get_running_loop().create_task(self._score(x, y))
            self.pending.add(task)
            task.add_done_callback(self.pending.discard)
        else:
            self.metrics.error(self.name, self.challenger.holder.current.version, "shadow_dropped")
        return y, used

    async def _score(self, x: np.ndarray, reference: np.ndarray) -> None:
        started = time.perf_counter()
        version = self.challenger.holder.current.version
        try:
            y, _ = await self.challenger.predict(x, None)
            if not np.isfinite(y).all():
                raise ValueError("non-finite score")
        except Exception:
            self.metrics.scored(self.name, version, "shadow", 0.0, None)
            return
        self.metrics.scored(self.name, version, "shadow", time.perf_counter() - started, y)
        disagree = int(np.count_nonzero((y >= self.threshold) != (reference >= self.threshold)))
        self.metrics.compared(self.name, version, len(y) - disagree, disagree)


@dataclass(frozen=True)
class _Live:
    """One applied plan: replaced as a whole, so a request sees one consistent split."""

    plan: TrafficPlan
    backend: ModelBackend
    canary: _Canary
    mirror: _Mirror


class RolloutRouter:
    """Routes between the champion (following its alias) and an optional challenger set at run time."""

    def __init__(
        self,
        config: ServerConfig,
        champion: ModelBackend,
        metrics: ServingMetrics,
        load: Callable[[str], LoadedModel] | None,
    ):
        self.config = config
        self.name = config.model_name
        self.primary = champion
        self.metrics = metrics
        self.load = load
        self._alias = AliasRouter(config, champion)
        self._champion = _Scored(champion, "champion", self.name, metrics)
        self._live: _Live | None = None
        self._lock = asyncio.Lock()

    @property
    def backends(self) -> Sequence[ModelBackend]:
        live = self._live
        return (self.primary,) if live is None else (self.primary, live.backend)

    @property
    def plan(self) -> TrafficPlan:
        live = self._live
        return TrafficPlan() if live is None else live.plan

    def select(self, request: Target) -> tuple[Scorer, str | None]:
        live = self._live
        if live is None:
            _, version = self._alias.select(request)
            return self._champion, version
        version = request.path_params.get("version")
        if version is not None and version == live.plan.challenger:
            if request.path_params["name"] != self.name:
                self._alias.select(request)  # raises the 404 naming what is served
            return live.backend, version
        _, version = self._alias.select(request)
        if version is not None:
            return self._champion, version
        if live.plan.shadow:
            return live.mirror, None
        if _to_challenger(request, live.plan.percent):
            return live.canary, None
        return self._champion, None

    async def apply(self, plan: TrafficPlan) -> TrafficPlan:
        """Make ``plan`` live: load (and verify) a new challenger first, swap, then stop the old one."""
        async with self._lock:
            previous = self._live
            if not plan.active:
                self._live = None
                if previous is not None:
                    await previous.backend.stop()
                return self.plan
            assert plan.challenger is not None
            champion = self.primary.holder.current
            if plan.challenger == champion.version:
                raise Conflict(f"version {plan.challenger} is already the champion; name another")
            if previous is not None and previous.plan.challenger == plan.challenger:
                backend = previous.backend
            else:
                backend = await self._start_backend(plan.challenger, champion)
            canary = _Canary(backend, self._champion, self.name, self.metrics)
            mirror = _Mirror(backend, self._champion, self.name, self.metrics, plan.agreement_threshold)
            self._live = _Live(plan, backend, canary, mirror)
            if previous is not None and previous.backend is not backend:
                await previous.backend.stop()
            log.warning(
                "rollout: challenger %s %s", plan.challenger, "shadow" if plan.shadow else f"{plan.percent} %"
            )
            return plan

    async def _start_backend(self, version: str, champion: LoadedModel) -> ModelBackend:
        if self.load is None:
            raise Conflict("this server was started without a registry; it cannot load a challenger")
        try:
            model = await asyncio.to_thread(self.load, version)
            check_contract(champion, model)
        except ValueError as exc:  # RegistryError, digest mismatch, ContractMismatch
            raise Conflict(f"cannot load challenger version {version}: {exc}") from exc
        backend = ModelBackend(
            ModelHolder(model),
            self.primary.max_batch_size,
            self.primary.max_queue_delay_s,
            self.primary.in_thread,
            self.primary.on_batch,
        )
        backend.start()
        return backend


def _to_challenger(request: Target, percent: int) -> bool:
    """Whether this request goes to the challenger at ``percent`` %: sticky by key, else random."""
    if percent >= 100:
        return True
    key = request.headers.get(REQUEST_KEY_HEADER)
    if key is not None:
        return zlib.crc32(key.encode()) % 100 < percent
    return random.random() * 100 < percent  # noqa: S311 - traffic split, not security
