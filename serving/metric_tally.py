"""The hot path's counts and observations, kept as plain Python values and folded into prometheus_client in bulk.

Per single-row request the server counts two series and observes four histograms. Through
prometheus_client each increment takes a lock and each observation walks its buckets in Python: 30-40 µs of
the 170-200 µs one request costs in process (measured with the scoring path called directly, metrics on and
off). Here a count is a dict update and an observation a list append under one lock; the fold turns them into
one increment per series and one per touched bucket, the bucket chosen by numpy's ``searchsorted`` exactly as
``Histogram.observe`` chooses it (the first upper bound ``>=`` the value).

When the fold runs, so that nothing reads a figure the tally still holds:

- before anything reads the registry: :meth:`MetricTally.collector` is registered in it ahead of every
  metric, and a registry collects in registration order (a scrape, ``generate_latest``,
  ``get_sample_value``): one process's figures are exact whenever they are read;
- :data:`FOLD_DELAY_S` after the first value since the last fold, on the event loop that recorded it, so
  that a value does not wait for a scrape that may never come;
- at once when no event loop runs (a caller outside the server).

With several worker processes (prometheus_client's multiprocess mode) one worker's scrape reads every
worker's files, and no worker can make another fold: there the tally holds nothing (``hold=False``) and each
value goes to prometheus_client as it is recorded, so a scrape stays exact across workers.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

FOLD_DELAY_S = 0.05
"""How long a recorded value may wait before it reaches prometheus_client (and, with several workers, the
files a scrape reads)."""
MAX_PENDING = 4096
"""Records held at most: the fold runs at once on reaching it (a loop too busy to run the timed fold)."""


def add_observations(child: Any, values: np.ndarray) -> None:
    """``child.observe(v)`` for every ``v`` in ``values``, in one pass: one increment per bucket touched.

    ``child`` is a labelled prometheus_client ``Histogram``; its bucket values (non-cumulative, one per upper
    bound, ``+Inf`` last) and its sum are the ones ``observe`` increments. A NaN falls in no bucket, as with
    ``observe`` (no ``amount <= bound`` holds).
    """
    bounds = child._upper_bounds
    index = np.searchsorted(np.asarray(bounds, dtype=np.float64), values, side="left")
    counts = np.bincount(index[index < len(bounds)], minlength=len(bounds))
    for i in np.flatnonzero(counts):
        child._buckets[i].inc(float(counts[i]))
    child._sum.inc(float(values.sum()))


class _FoldFirst:
    """A registry collector with no metrics of its own: collecting it folds the tally."""

    def __init__(self, tally: MetricTally):
        self.tally = tally

    def collect(self) -> Iterator[Any]:
        self.tally.fold()
        return iter(())


class MetricTally:
    """Pending increments of counters and observations of histograms, by (metric, label values)."""

    def __init__(self, hold: bool = True) -> None:
        self.hold = hold
        """Whether values wait for a fold; without it each is handed to prometheus_client at once."""
        self._lock = threading.Lock()
        self._counts: dict[tuple[Any, tuple[str, ...]], float] = {}
        self._observed: dict[tuple[Any, tuple[str, ...]], list[Any]] = {}
        self._due = False
        self._pending = 0

    def collector(self) -> _FoldFirst:
        """What to register in the registry before its metrics (see the module's docstring)."""
        return _FoldFirst(self)

    def count(self, metric: Any, labels: tuple[str, ...], amount: float = 1.0) -> None:
        """``metric.labels(*labels).inc(amount)``, at the next fold."""
        if not self.hold:
            metric.labels(*labels).inc(amount)
            return
        key = (metric, labels)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0.0) + amount
            self._pending += 1
        if not self._due or self._pending >= MAX_PENDING:
            self._soon()

    def observe(self, metric: Any, labels: tuple[str, ...], value: float | np.ndarray) -> None:
        """``metric.labels(*labels).observe(v)`` for ``value`` (or each of an array's values), at the next fold."""
        if not self.hold:
            child = metric.labels(*labels)
            if isinstance(value, np.ndarray):
                add_observations(child, value.astype(np.float64, copy=False).reshape(-1))
            else:
                child.observe(value)
            return
        key = (metric, labels)
        with self._lock:
            found = self._observed.get(key)
            if found is None:
                self._observed[key] = [value]
            else:
                found.append(value)
            self._pending += 1
        if not self._due or self._pending >= MAX_PENDING:
            self._soon()

    def fold(self) -> None:
        """Hand everything pending to prometheus_client."""
        with self._lock:
            counts, observed = self._counts, self._observed
            self._counts, self._observed = {}, {}
            self._due = False
            self._pending = 0
            for (metric, labels), amount in counts.items():
                metric.labels(*labels).inc(amount)
            for (metric, labels), values in observed.items():
                add_observations(metric.labels(*labels), np.hstack(values).astype(np.float64, copy=False))

    def _soon(self) -> None:
        if self._pending >= MAX_PENDING:
            self.fold()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop here: nothing would run a later fold
            self.fold()
            return
        self._due = True
        loop.call_later(FOLD_DELAY_S, self.fold)
