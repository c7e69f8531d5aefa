"""What runs beside the routes for the server's lifetime: batch workers, the request log, the reload watcher.

They are started inside the event loop when the app starts (the ASGI lifespan) and
stopped in reverse dependency order on shutdown: the watcher first (no swap while
draining), then the backends (queued batches are scored), then the request log (so
the rows of those last batches are flushed too).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from serving.reload import ReloadWatcher
from serving.request_log import RequestLogger

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from serving.config import ServerConfig
    from serving.dataplane import DataPlane
    from serving.runtime import LoadedModel

GRACEFUL_SHUTDOWN_S = 30
"""How long a stopping server waits for in-flight requests (gRPC's grace here, uvicorn's graceful timeout)."""


@dataclass(eq=False)
class ServerLifecycle:
    """Starts and stops the background work of one app; records hot-reload outcomes in the metrics."""

    config: ServerConfig
    plane: DataPlane
    resolve: Callable[[], str] | None
    """The version the alias points at now; with ``load``, enables hot reload."""
    load: Callable[[str], LoadedModel] | None
    watcher: ReloadWatcher | None = field(default=None, init=False)
    grpc: Any = field(default=None, init=False)
    """The gRPC server (:class:`~serving.grpc_service.ThreadedServer` or ``grpc.aio.Server``) while
    ``config.grpc_port`` is set and the app runs."""
    _retired: list[tuple[str, str, str]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        current = self.plane.router.primary.holder.current
        self._retired.append((current.version, current.sha256, current.precision))

    def reloaded(self, outcome: str, version: str) -> None:
        """Count a reload attempt; on a swap mark the new version live and the previous one retired."""
        name = self.config.model_name
        metrics = self.plane.metrics
        metrics.reloads.labels(name, outcome).inc()
        if outcome == "swapped":
            # The new version's long-lived objects join those frozen at start (see server.serve).
            gc.collect()
            gc.freeze()
            current = self.plane.router.primary.holder.current
            metrics.served(name, current.version, current.sha256, current.precision, self._retired[-1])
            self._retired.append((current.version, current.sha256, current.precision))

    async def start(self) -> None:
        config, plane = self.config, self.plane
        for backend in plane.router.backends:
            backend.start()
        if config.request_log_uri:
            plane.request_log = RequestLogger(
                config.request_log_uri,
                config.model_name,
                config.request_log_sample_rate,
                config.request_log_flush_s,
                config.request_log_max_rows,
                on_error=lambda exc: plane.metrics.error(
                    config.model_name, plane.live_version, "request_log"
                ),
                on_drop=lambda rows: plane.metrics.log_dropped(config.model_name, rows),
            )
            await plane.request_log.start()
        if self.resolve is not None and self.load is not None and config.reload_interval_s > 0:
            self.watcher = ReloadWatcher(
                plane.router.primary.holder,
                self.resolve,
                self.load,
                config.reload_interval_s,
                on_outcome=self.reloaded,
            )
            self.watcher.start()
        if config.grpc_port:
            from serving.grpc_service import create_server

            self.grpc = create_server(plane, config)
            await self.grpc.start()
        plane.metrics.process_started()

    async def stop(self) -> None:
        self.plane.metrics.process_stopping()
        if self.grpc is not None:  # in-flight calls finish (they still need the backends below)
            await self.grpc.stop(grace=GRACEFUL_SHUTDOWN_S)
        if self.watcher is not None:
            await self.watcher.stop()
        for backend in self.plane.router.backends:
            await backend.stop()
        if self.plane.request_log is not None:
            await self.plane.request_log.stop()
        if self.plane.entities is not None:
            self.plane.entities.close()

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()
