"""Hot reload: follow the registry alias and swap models without failing a request.

The served model is one reference in :class:`ModelHolder`. The watcher resolves the
alias on a timer; when it points at another version, the new version is fetched,
digest-checked and opened on a worker thread while the old one keeps serving, and
only a fully loaded model is swapped in, by a single reference assignment on the
event loop. Batches already running hold their own reference to the old model, so
they finish on it; the old session is freed when the last of them lets go.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from serving.background import BackgroundLoop

if TYPE_CHECKING:
    from serving.runtime import LoadedModel

log = logging.getLogger("serving.reload")


class ModelHolder:
    """The model being served now; assigning :attr:`current` is the atomic swap."""

    def __init__(self, model: LoadedModel):
        self.current = model

    def swap(self, model: LoadedModel) -> LoadedModel:
        previous, self.current = self.current, model
        return previous


class ReloadWatcher:
    """Polls ``resolve()`` every ``interval_s`` seconds and swaps in ``load(version)`` when it changes."""

    def __init__(
        self,
        holder: ModelHolder,
        resolve: Callable[[], str],
        load: Callable[[str], LoadedModel],
        interval_s: float,
        on_outcome: Callable[[str, str], None] = lambda outcome, version: None,
    ):
        if interval_s <= 0:
            raise ValueError(f"reload interval must be > 0 seconds, got {interval_s}")
        self.holder = holder
        self.resolve = resolve
        self.load = load
        self.interval_s = interval_s
        self.on_outcome = on_outcome
        self._refused: str | None = None
        self._loop = BackgroundLoop("reload-watcher", self._run)

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    async def check_once(self) -> str | None:
        """Swap if the alias moved; return the newly served version, or None if nothing changed."""
        try:
            version = await asyncio.to_thread(self.resolve)
        except Exception:
            self.on_outcome("registry_error", "")
            raise
        current = self.holder.current
        if version == current.version or version == self._refused:
            return None
        try:
            model = await asyncio.to_thread(self.load, version)
        except Exception:
            # A version that fails verification stays refused until the alias moves again,
            # instead of being downloaded and rejected on every poll.
            self._refused = version
            self.on_outcome("refused", version)
            raise
        self._refused = None
        self.holder.swap(model)
        self.on_outcome("swapped", version)
        log.warning("now serving %s version %s (was %s)", model.name, version, current.version)
        return version

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.check_once()
            except Exception as exc:  # the registry being down must not take the server down
                log.error(
                    "hot reload check failed; still serving version %s: %s", self.holder.current.version, exc
                )
