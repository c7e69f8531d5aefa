"""What every server process does before it answers: open its model, freeze the start's objects, say so.

Shared by the single server (:mod:`serving.server`) and each of several workers (:mod:`serving.workers`).
"""

from __future__ import annotations

import fcntl
import gc
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from serving.lifecycle import GRACEFUL_SHUTDOWN_S
from serving.runtime import LoadedModel, load_model

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from serving.config import ServerConfig
    from serving.model_source import RegisteredModelSource

UVICORN_OPTIONS: dict[str, Any] = {
    "log_level": "warning",
    "access_log": False,  # the request log and the metrics record requests; no line per request
    "lifespan": "on",  # the batchers, the request-log writer and the reload watcher start and stop with it
    "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
}
"""How uvicorn runs every server process, one or several."""


def loader(config: ServerConfig, registry: RegisteredModelSource) -> Callable[[str], LoadedModel]:
    """Fetch, verify and open a version; one process at a time per cache folder.

    A fetch replaces the cached copy's folder and a load reads its files, so two processes sharing the
    folder (a server's workers, or servers given the same ``--model-cache-dir``) take turns: the second
    finds the first's verified copy and opens it without a download."""

    def load(version: str) -> LoadedModel:
        registry.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(registry.cache_dir / ".lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return load_model(registry.fetch(version), config.intra_op_threads, config.inter_op_threads)

    return load


def first_model(
    config: ServerConfig, cache: Path
) -> tuple[RegisteredModelSource, Callable[[str], LoadedModel], LoadedModel]:
    """The registry with its copies in ``cache``, its loader, and the version the alias names now, opened."""
    from serving.model_source import RegisteredModelSource

    registry = RegisteredModelSource(config.tracking_uri, config.model_name, cache)
    load = loader(config, registry)
    return registry, load, load(registry.version_for(config.alias))


def app_with_first_model(
    config: ServerConfig, cache: Path, check: Callable[[LoadedModel], None] | None = None
) -> tuple[Starlette, LoadedModel]:
    """The app serving the alias's version, which it follows (hot reload), and that version.

    ``check`` is called with the loaded model before the app is built (``mlops serve --features``: do the
    feature service's features cover the model's inputs); it raises ValueError to refuse."""
    from serving.app import create_app

    registry, load, model = first_model(config, cache)
    if check is not None:
        check(model)
    app = create_app(config, model, resolve=lambda: registry.version_for(config.alias), load=load)
    return app, model


def given_cache(config: ServerConfig) -> Path:
    """The ``--model-cache-dir`` folder, absolute."""
    return Path(config.model_cache_dir).expanduser().resolve()


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def freeze_long_lived_objects() -> None:
    """Keep the start's objects out of every later collection.

    MLflow, SQLAlchemy and pydantic leave ~280k long-lived objects; a full collection walking
    them took ~175 ms and stalled every in-flight request (p99 170 ms at 32 clients, 5 ms after)."""
    gc.collect()
    gc.freeze()


def serving_line(config: ServerConfig, model: LoadedModel) -> str:
    """What the server prints once it has its model: the version, its digest and where it answers."""
    workers = f" ({config.workers} workers)" if config.workers > 1 else ""
    return (
        f"serving {config.model_uri} = version {model.version} ({model.precision}, sha256 "
        f"{model.sha256[:12]}) on http://{config.host}:{config.port}"
        + (f" and grpc://{config.host}:{config.grpc_port}" if config.grpc_port else "")
        + workers
        + (" over granian's RSGI" if config.http_server == "granian" else "")
    )
