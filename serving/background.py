"""The server's background loops (batch worker, reload watcher): one named task
each, started inside the event loop and, on stop, cancelled and awaited until it has ended."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any


class BackgroundLoop:
    """Runs ``run()`` as one task named ``name`` on the running event loop, from :meth:`start` to :meth:`stop`."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]):
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait until it has ended; nothing to do when it never started."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
