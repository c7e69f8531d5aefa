"""Start the model server: resolve the alias, verify and load the model, then bind the port.

Loading happens before the port opens, so a model that fails its digest check or
cannot be opened stops the server with a clear error instead of leaving a process
that answers health checks but cannot score.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.applications import Starlette

from serving.config import ServerConfig
from serving.model_source import ModelRegistry
from serving.runtime import LoadedModel
from serving.startup import UVICORN_OPTIONS, freeze_long_lived_objects, loader, serving_line

log = logging.getLogger("serving")


@contextmanager
def prepared_app(
    config: ServerConfig, check: Callable[[LoadedModel], None] | None = None
) -> Iterator[tuple[Starlette, LoadedModel]]:
    """The app with its first model loaded; the model cache lives as long as the context.

    ``check`` is called with the loaded model before the app is built (``mlops serve --features``: do the
    feature service's features cover the model's inputs); it raises ValueError to refuse."""
    from serving.app import create_app

    with _cache_dir(config) as cache:
        registry = ModelRegistry(config.tracking_uri, config.model_name, cache)
        load = loader(config, registry)
        model = load(registry.version_for(config.alias))
        if check is not None:
            check(model)
        app = create_app(config, model, resolve=lambda: registry.version_for(config.alias), load=load)
        yield app, model


@contextmanager
def _cache_dir(config: ServerConfig) -> Iterator[Path]:
    if config.model_cache_dir:
        yield Path(config.model_cache_dir).expanduser().resolve()
        return
    with tempfile.TemporaryDirectory(prefix="mlops-serving-") as tmp:
        yield Path(tmp)


def serve(config: ServerConfig, check: Callable[[LoadedModel], None] | None = None) -> None:
    """Run until interrupted (SIGINT/SIGTERM); in-flight requests finish and the request log is flushed.

    ``check``: see :func:`prepared_app`."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # The process's own setting, made at its entry point: no download progress bar in server logs.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    if config.workers > 1:
        from serving.workers import serve_workers

        serve_workers(config, check)
        return
    with prepared_app(config, check) as (app, model):
        freeze_long_lived_objects()
        print(serving_line(config, model), flush=True)
        uvicorn.run(app, host=config.host, port=config.port, **UVICORN_OPTIONS)
