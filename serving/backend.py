"""One model the server can answer with: the holder a hot reload swaps, and the batcher in front of it.

Routing picks a :class:`ModelBackend` per request (see :mod:`serving.routing.model_router`); today
there is exactly one, following the served alias. A canary or shadow rollout adds
a second backend (the challenger, with its own holder and batcher) and a router
that chooses between them, without touching the handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from serving.batching import Batcher

if TYPE_CHECKING:
    from serving.reload import ModelHolder
    from serving.runtime import LoadedModel


@dataclass(eq=False)
class ModelBackend:
    """Scores encoded rows with the holder's current model, batched when ``max_batch_size > 1``."""

    holder: ModelHolder
    max_batch_size: int
    max_queue_delay_s: float
    in_thread: bool
    on_batch: Callable[[LoadedModel, int], None]
    batcher: Batcher | None = field(default=None, init=False)
    """Created by :meth:`start`, inside the event loop; None with batching off."""

    def start(self) -> None:
        """Start the batch worker (inside the event loop); with batching off there is nothing to start."""
        if self.max_batch_size > 1:
            self.batcher = Batcher(
                self.holder, self.max_batch_size, self.max_queue_delay_s, self.in_thread, self.on_batch
            )
            self.batcher.start()

    async def stop(self) -> None:
        """Score what is queued, then stop."""
        if self.batcher is not None:
            await self.batcher.stop()

    async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        """Probabilities for ``x`` and the model that computed them; ``version`` pins a model version."""
        if len(x) == 0:
            return np.empty((0,), dtype=np.float32), self.holder.current
        if self.batcher is not None:
            return await self.batcher.submit(x, version)
        current = self.holder.current
        y = current.predict(x)
        self.on_batch(current, len(x))
        return y, current
