"""Requests by entity id: the features a request names by key are looked up in the online feature store.

A request may carry the entity's ids instead of feature values (V1 ``instances`` of ``{"customerID": ...}``
only, V2 or gRPC one input named after the entity, BYTES or INT32/INT64, shape ``[N]``). Each transport's
decoder says what it carries through :meth:`~serving.dataplane.Inputs.keyed`; when the key is the configured
entity, the data plane hands the ids here: one batched ``/get-online-features`` request for all of them
(:class:`mlops.features.online.OnlineClient`), whose rows then stand in for the request's inputs
(:class:`EntityRows`) and go through the same contract, scoring, request log (the looked-up values, and the
ids as the subject when the model's subject key is the entity) and metrics as values sent inline.

A missing id, or one whose values are older than the feature view's TTL, is :class:`~serving.errors.UnknownEntity`
(400 naming it, never a silent default); a feature server that does not answer is
:class:`~serving.errors.Unavailable` (503 naming it). Both are counted in
``mlops_serving_feature_lookups_failed_total`` by reason, and every lookup's time in
``mlops_serving_feature_lookup_seconds``.

The lookup is blocking HTTP (``http.client``, one kept-alive connection per thread): it runs on a small
thread pool of its own, so the event loop keeps answering meanwhile. Handing a call to a thread costs some
tens of microseconds against the lookup's milliseconds through Feast's server (benchmarks/feature_lookup.py
measures both), and it keeps the client the platform's one, with its missing/stale checks.
A server started without a feature store never reaches this module.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from serving.errors import Unavailable, UnknownEntity

if TYPE_CHECKING:
    import numpy as np

    from mlops.features.online import OnlineClient
    from serving.metrics import ServingMetrics

START_HINT = "start the server with `mlops serve --features SERVICE` (or --feature-server HOST:PORT)"
"""What an entity-only request to a server without a feature store is told."""
ENTITY_DATATYPES = ("BYTES", "INT64", "INT32")
"""The datatypes an entity-id input may have (string or integer keys, as Feast's entities are)."""


@dataclass(frozen=True)
class LookupSettings:
    """Where the online features of a request by entity come from (``mlops serve --features``)."""

    address: str
    """``host:port`` of the Feast feature server."""
    service: str
    """The feature service whose features the model takes."""
    entity: str
    """The entity's join key: the name a request's ids come under."""
    max_age_s: float = 0.0
    """Values older than this are refused (the feature view's TTL); 0 accepts any age."""
    timeout_s: float = 10.0
    """Longest one lookup may wait for the feature server."""
    threads: int = 4
    """Lookups in flight at once (each thread keeps one connection)."""


class EntityRows:
    """The looked-up rows standing in for a request's inputs: read like V1's named rows."""

    __slots__ = ("entity", "ids", "rows")
    where: ClassVar[str] = "the looked-up features"

    def __init__(self, entity: str, ids: Sequence[Any], rows: list[dict[str, Any]]):
        self.entity, self.ids, self.rows = entity, ids, rows

    def read(self, contract: Any) -> np.ndarray:
        """The rows encoded by ``contract`` (a :class:`~serving.dataplane.ModelContract`: not imported, the
        data plane imports this module)."""
        encoded: np.ndarray = contract.encoder.encode(self.rows)
        return encoded

    def subjects(self, name: str) -> list[str | None] | None:
        return [str(i) for i in self.ids] if name == self.entity else None

    def keyed(self) -> tuple[str, list[Any]] | None:
        return None


class EntityLookup:
    """Looks a request's entity ids up, off the event loop, timed and counted."""

    def __init__(self, settings: LookupSettings, metrics: ServingMetrics, model: str):
        from mlops.features.config import FeastSettings

        self.settings = settings
        self.entity = settings.entity
        self.metrics = metrics
        self.model = model
        self._feast = FeastSettings(request_timeout_s=settings.timeout_s)
        self._max_age = timedelta(seconds=settings.max_age_s) if settings.max_age_s > 0 else None
        self._pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="feature-lookup")
        self._local = threading.local()
        self._clients: list[OnlineClient] = []

    def _client(self) -> OnlineClient:
        client: OnlineClient | None = getattr(self._local, "client", None)
        if client is None:
            from mlops.features.online import OnlineClient

            client = self._local.client = OnlineClient(self.settings.address, self._feast)
            self._clients.append(client)
        return client

    def _lookup(self, ids: list[Any]) -> list[dict[str, Any]]:
        settings = self.settings
        return self._client().lookup(settings.service, settings.entity, ids, self._max_age)

    async def rows(self, ids: list[Any]) -> EntityRows:
        """The online features of ``ids``, in order; raises UnknownEntity or Unavailable."""
        from mlops.features.environment import FeastError
        from mlops.features.online import MissingEntityError, StaleEntityError

        started = time.perf_counter()
        try:
            rows = await asyncio.get_running_loop().run_in_executor(self._pool, self._lookup, ids)
        except StaleEntityError as exc:
            self.metrics.lookup_failed(self.model, "stale")
            raise UnknownEntity(str(exc)) from exc
        except MissingEntityError as exc:
            self.metrics.lookup_failed(self.model, "missing")
            raise UnknownEntity(str(exc)) from exc
        except (FeastError, OSError) as exc:
            self.metrics.lookup_failed(self.model, "unavailable")
            raise Unavailable(
                f"the feature server {self.settings.address} (service {self.settings.service!r}) could not look "
                f"up {self.entity!r}: {exc}"
            ) from exc
        self.metrics.looked_up(self.model, len(ids), time.perf_counter() - started)
        return EntityRows(self.entity, ids, rows)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for client in self._clients:
            client.close()


def raw_ids(datatype: str, raw: bytes, rows: int) -> list[Any]:
    """Entity ids from binary data (V2's binary extension, gRPC's ``raw_input_contents``)."""
    import numpy as np

    from serving.columns import bytes_elements

    if datatype == "BYTES":
        return list(bytes_elements(raw, rows, "the entity ids"))
    dtype = np.dtype("<i8" if datatype == "INT64" else "<i4")
    if len(raw) != rows * dtype.itemsize:
        return []
    return [int(v) for v in np.frombuffer(raw, dtype=dtype)]


def entity_ids(name: Any, datatype: Any, shape: Any, values: Any) -> tuple[str, list[Any]] | None:
    """``(name, ids)`` when one V2/gRPC input of an entity's datatype and shape ``[N]`` (or ``[N, 1]``) holds
    ``values``; None for anything else (the transport's own checks then speak)."""
    if not isinstance(name, str) or datatype not in ENTITY_DATATYPES:
        return None
    if not (
        type(shape) is list
        and len(shape) in (1, 2)
        and all(type(d) is int for d in shape)
        and (len(shape) == 1 or shape[1] == 1)
    ):
        return None
    if not isinstance(values, list) or len(values) != shape[0]:
        return None
    flat = [v[0] if isinstance(v, list) and len(v) == 1 else v for v in values]
    if datatype == "BYTES":
        ids: list[Any] = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in flat]
        if not all(isinstance(v, str) for v in ids):
            return None
    else:
        if not all(type(v) is int for v in flat):
            return None
        ids = flat
    return name, ids
