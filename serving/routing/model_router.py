"""Which model answers a request: the seam a canary or shadow rollout replaces.

"Which model answers" is one object, a :class:`ModelRouter`, so a rollout can change it
without touching the handlers, the path table (:mod:`serving.routes`) or the protocol
code. Today's :class:`AliasRouter` serves one model, the one the alias points at
(hot-reloaded as it moves). A canary router (a share of requests to the challenger's
backend) or a shadow router (the challenger scores a copy, the champion answers)
implements the same protocol and is built by the ``make_router`` given to
:func:`serving.app.create_app`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from serving.protocol import ProtocolError

if TYPE_CHECKING:
    from starlette.requests import Request

    from serving.backend import ModelBackend
    from serving.config import ServerConfig
    from serving.reload import ModelHolder
    from serving.runtime import LoadedModel


class Scorer(Protocol):
    """What a handler needs from the backend chosen for a request (a :class:`ModelBackend` is one)."""

    @property
    def holder(self) -> ModelHolder:
        """The model whose input contract the request is parsed against."""
        ...

    async def predict(self, x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]: ...


class ModelRouter(Protocol):
    """Chooses the backend that answers each request to a model route."""

    @property
    def backends(self) -> Sequence[ModelBackend]:
        """Every backend this router may choose; the app starts and stops them with the server."""
        ...

    @property
    def primary(self) -> ModelBackend:
        """The backend whose model answers when no request names one (metadata, error labels)."""
        ...

    def select(self, request: Request) -> tuple[Scorer, str | None]:
        """The backend for ``request`` and the version its path pins (None: whatever is served).

        Raises :class:`~serving.protocol.ProtocolError` (404) when the path names a model or
        version this server does not serve. Called on every request: keep it allocation-free.
        """
        ...


class AliasRouter:
    """Every request goes to the one backend following ``config.alias``; a pinned version must be the live one."""

    def __init__(self, config: ServerConfig, backend: ModelBackend):
        self.name = config.model_name
        self.model_uri = config.model_uri
        self.primary = backend
        self.backends = (backend,)

    def select(self, request: Request) -> tuple[ModelBackend, str | None]:
        requested = request.path_params["name"]
        if requested != self.name:
            raise ProtocolError(
                404,
                f"model {requested!r} is not served here; this server serves {self.name!r} ({self.model_uri})",
            )
        version = request.path_params.get("version")
        current = self.primary.holder.current
        if version is not None and version != current.version:
            raise ProtocolError(
                404,
                f"{self.name} version {version!r} is not loaded; this server serves version {current.version} "
                f"({self.model_uri}); drop /versions/{version} to follow the alias",
            )
        return self.primary, version
