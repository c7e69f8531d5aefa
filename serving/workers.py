"""Several server processes on one port (``mlops serve --workers N``): uvicorn's own workers.

uvicorn binds the port once, in this process, and starts ``config.workers`` worker processes (each a
fresh interpreter: multiprocessing's spawn) that accept on the shared socket; it restarts a worker that
dies and, on SIGINT or SIGTERM, stops them all, each finishing its in-flight requests and flushing its
request log as a single server does. Each worker builds the whole app from the same settings
(:func:`worker_app`): its own ONNX Runtime session (a session's thread pools do not survive a fork),
batcher, reload watcher and request-log writer, whose file names carry a random part, so the writers
never collide. Prometheus values go to files in a folder the workers share (prometheus_client's
multiprocess mode), and ``/metrics``, answered by whichever worker takes the scrape, adds them up.
With ``--grpc-port`` every worker binds that port too (gRPC sets ``SO_REUSEPORT``).

Before the port opens this process fetches, verifies and opens the model once, as the single server
does, so a model that fails its checks stops the start with its error; the workers then find the
verified copy in the cache folder they share (:func:`serving.startup.loader` takes turns on it).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from serving.config import ServerConfig
from serving.metrics import MULTIPROCESS_DIR_ENV

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from serving.runtime import LoadedModel

CONFIG_FILE_ENV = "MLOPS_SERVE_WORKER_CONFIG"
"""The file a worker reads its settings from (in a folder only this user can read: they hold the tokens)."""


def serve_workers(config: ServerConfig, check: Callable[[LoadedModel], None] | None = None) -> None:
    """Run ``config.workers`` server processes until interrupted; ``check`` as :func:`serving.server.serve`."""
    import uvicorn

    from serving.startup import UVICORN_OPTIONS, first_model, given_cache, serving_line

    with tempfile.TemporaryDirectory(prefix="mlops-serving-workers-") as private:
        folder = Path(private)  # mode 0700
        shared = config.model_copy(
            update={"model_cache_dir": config.model_cache_dir or str(folder / "models")}
        )
        _, _, model = first_model(shared, given_cache(shared))
        if check is not None:
            check(model)
        line = serving_line(config, model)
        del model
        settings = folder / "settings.json"
        settings.write_text(shared.model_dump_json(), encoding="utf-8")
        (folder / "metrics").mkdir()
        with _environment({CONFIG_FILE_ENV: str(settings), MULTIPROCESS_DIR_ENV: str(folder / "metrics")}):
            print(line, flush=True)
            uvicorn.run(
                "serving.workers:worker_app",
                factory=True,
                workers=config.workers,
                host=config.host,
                port=config.port,
                **UVICORN_OPTIONS,
            )


def worker_app() -> Starlette:
    """In a worker: the app :func:`serving.server.serve` would build, from the settings its parent wrote."""
    from serving.startup import (
        app_with_first_model,
        configure_logging,
        freeze_long_lived_objects,
        given_cache,
    )

    configure_logging()
    config = ServerConfig.model_validate_json(Path(os.environ[CONFIG_FILE_ENV]).read_text(encoding="utf-8"))
    app, _ = app_with_first_model(config, given_cache(config))
    freeze_long_lived_objects()
    return app


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment, which the workers inherit, for the block; restored after."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
