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
from serving.runtime import LoadedModel
from serving.startup import (
    UVICORN_OPTIONS,
    app_with_first_model,
    configure_logging,
    freeze_long_lived_objects,
    given_cache,
    serving_line,
)

log = logging.getLogger("serving")


@contextmanager
def prepared_app(
    config: ServerConfig, check: Callable[[LoadedModel], None] | None = None
) -> Iterator[tuple[Starlette, LoadedModel]]:
    """The app with its first model loaded (:func:`serving.startup.app_with_first_model`, ``check``
    included); the model cache lives as long as the context."""
    if config.model_cache_dir:
        yield app_with_first_model(config, given_cache(config), check)
        return
    with tempfile.TemporaryDirectory(prefix="mlops-serving-") as tmp:
        yield app_with_first_model(config, Path(tmp), check)


def serve(config: ServerConfig, check: Callable[[LoadedModel], None] | None = None) -> None:
    """Run until interrupted (SIGINT/SIGTERM); in-flight requests finish and the request log is flushed.

    ``check``: see :func:`prepared_app`."""
    import uvicorn

    configure_logging()
    # The process's own setting, made at its entry point: no download progress bar in server logs.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    if config.workers > 1 or config.http_server == "granian":
        from serving.workers import serve_workers

        serve_workers(config, check)
        return
    with prepared_app(config, check) as (app, model):
        freeze_long_lived_objects()
        print(serving_line(config, model), flush=True)
        uvicorn.run(app, host=config.host, port=config.port, **UVICORN_OPTIONS)
