"""Dynamic batching: concurrent requests share one ONNX Runtime call and each gets its own rows back.

A single worker task drains a queue of (matrix, future) items: it takes what is
queued, up to ``max_batch_size`` rows, optionally waits up to ``max_queue_delay``
for more, stacks the matrices, runs the model once and slices the result back to
the callers in order. The model is read once per batch from the
:class:`~serving.reload.ModelHolder`, so a hot reload never splits a batch across
versions, and every caller learns which version scored its rows.

A request that is alone skips the queue. Requests overlap or not: when the last
:data:`LONE_STREAK` batches each held one request, and the transport says no other request is in
progress (:data:`IN_FLIGHT`, a count the transports keep) and nothing is queued, :meth:`Batcher.submit`
runs the model inline, on the event loop, as the worker would have run that lone item, without the
hand-off (a future, a wake-up, two task switches). One inline-eligible request in :data:`PROBE_EVERY`
still goes through the queue: if others join it there, requests overlap again and every request
queues and batches until the batches are lone again. (The in-flight count alone cannot
tell: a one-chunk request is parsed, scored and answered without yielding, so each one runs alone
even with 32 clients waiting in the socket buffers.) A caller that does not set :data:`IN_FLIGHT` (a
test, an internal caller) always queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from serving.background import BackgroundLoop
from serving.errors import VersionGone

if TYPE_CHECKING:
    from serving.reload import ModelHolder
    from serving.runtime import LoadedModel


# VersionGone, raised through submit(), is one of serving.errors' refusals; importable here too.
__all__ = ["Batcher", "VersionGone"]


class InFlight:
    """How many requests a server's transports have in progress (read, not yet answered), together."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """One request in progress: counted, and this count visible to :meth:`Batcher.submit` in its context."""
        self.count += 1
        token = IN_FLIGHT.set(self)
        try:
            yield
        finally:
            self.count -= 1
            IN_FLIGHT.reset(token)


IN_FLIGHT: contextvars.ContextVar[InFlight | None] = contextvars.ContextVar("serving_in_flight", default=None)
"""Set by a transport for the request it is serving: the server's in-flight count, which lets
:meth:`Batcher.submit` score a request that is alone without queueing it."""


LONE_STREAK = 8
"""Consecutive batches of one request after which a request alone is scored inline."""
PROBE_EVERY = 32
"""While requests are scored inline, one in this many goes through the queue to see whether others join it."""


def _gone(version: str | None, model: LoadedModel) -> VersionGone | None:
    """The error for a request pinned to a version the holder no longer serves; None when it may be scored."""
    if version is not None and version != model.version:
        return VersionGone(f"version {version} was replaced by {model.version} while queued")
    return None


@dataclass
class _Item:
    x: np.ndarray
    version: str | None
    future: asyncio.Future[tuple[np.ndarray, LoadedModel]]


class Batcher:
    """Coalesces concurrent :meth:`submit` calls into batched model runs."""

    def __init__(
        self,
        holder: ModelHolder,
        max_batch_size: int,
        max_queue_delay_s: float,
        in_thread: bool,
        on_batch: Callable[[LoadedModel, int], None] = lambda model, rows: None,
    ):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.holder = holder
        self.max_batch_size = max_batch_size
        self.max_queue_delay_s = max_queue_delay_s
        self.on_batch = on_batch
        self._queue: deque[_Item] = deque()
        self._queued_rows = 0
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="ort") if in_thread else None
        self._loop = BackgroundLoop("batcher", self._run)
        # Inline scoring would bypass the queue delay's wait and the worker thread: only without either.
        self._inline = max_queue_delay_s <= 0 and not in_thread
        self._lone = 0
        """Consecutive batches that held one request."""
        self._inlined = 0

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        """Finish what is queued, then stop; nothing accepted is dropped."""
        while self._queue and self._loop.running:
            await asyncio.sleep(0.001)
        await self._loop.stop()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def submit(self, x: np.ndarray, version: str | None = None) -> tuple[np.ndarray, LoadedModel]:
        """Probabilities for ``x`` and the model that computed them; ``version`` pins a model version."""
        if not self._loop.running:
            raise RuntimeError("batcher is not running; call start() inside the event loop first")
        if self._inline and not self._queue and self._lone >= LONE_STREAK:
            load = IN_FLIGHT.get()
            if load is not None and load.count <= 1:
                self._inlined += 1
                if self._inlined % PROBE_EVERY:
                    return self._alone(x, version)
        future: asyncio.Future[tuple[np.ndarray, LoadedModel]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Item(x, version, future))
        self._queued_rows += len(x)
        self._wakeup.set()
        return await future

    def _alone(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        """Score a request that has nothing to share a batch with, as the worker scores a lone item."""
        model = self.holder.current
        gone = _gone(version, model)
        if gone is not None:
            raise gone
        y = model.predict(x)
        self.on_batch(model, len(x))
        return y, model

    def _take(self) -> list[_Item]:
        items = [self._queue.popleft()]
        rows = len(items[0].x)
        while self._queue and rows + len(self._queue[0].x) <= self.max_batch_size:
            item = self._queue.popleft()
            rows += len(item.x)
            items.append(item)
        self._queued_rows -= rows
        return items

    async def _fill(self) -> None:
        """Wait up to the queue delay for enough rows to fill a batch."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_queue_delay_s
        while self._queued_rows < self.max_batch_size:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), remaining)

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if self.max_queue_delay_s > 0:
                await self._fill()
            items = self._take()
            self._lone = self._lone + 1 if len(items) == 1 else 0
            model = self.holder.current
            live = []
            for item in items:
                gone = _gone(item.version, model)
                if gone is None:
                    live.append(item)
                elif not item.future.done():
                    item.future.set_exception(gone)
            if not live:
                continue
            try:
                await self._score(model, live)
            except Exception:  # only a batch of several raises; a lone item's error went to its caller
                # One bad item must not fail its batch-mates: score each on its own.
                for item in live:
                    await self._score(model, [item])
            await asyncio.sleep(0)  # let the woken handlers respond before the next batch

    async def _score(self, model: LoadedModel, items: list[_Item]) -> None:
        """Run ``items`` as one batch and resolve their futures; a failure of a lone item goes to its caller."""
        x = items[0].x if len(items) == 1 else np.concatenate([item.x for item in items])
        try:
            if self._executor is None:
                y = model.predict(x)
            else:
                y = await asyncio.get_running_loop().run_in_executor(self._executor, model.predict, x)
        except Exception as exc:
            if len(items) > 1:
                raise
            if not items[0].future.done():
                items[0].future.set_exception(exc)
            return
        self.on_batch(model, len(x))
        start = 0
        for item in items:
            end = start + len(item.x)
            if not item.future.done():  # a caller that disconnected has cancelled its future
                item.future.set_result((y[start:end], model))
            start = end
