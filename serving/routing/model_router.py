"""Which model answers a request: the seam a canary or shadow rollout replaces.

"Which model answers" is one object, a :class:`ModelRouter`, so a rollout can change it
without touching the data plane, either transport or the path table. Today's
:class:`AliasRouter` serves one model, the one the alias points at (hot-reloaded as it
moves). A canary router (a share of requests to the challenger's backend) or a shadow
router (the challenger scores a copy, the champion answers) implements the same protocol
and is built by the ``make_router`` given to :func:`serving.app.create_app`.

A router reads a request only as a :class:`Target`: the model (and version) it names and
its headers. The REST transport passes its Starlette request (which is one, at no cost),
gRPC a small object built from the call's fields and metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from serving.errors import ModelNotFound

if TYPE_CHECKING:
    from serving.backend import ModelBackend
    from serving.config import ServerConfig
    from serving.reload import ModelHolder
    from serving.runtime import LoadedModel


class Target(Protocol):
    """What a router reads from a request, whatever transport carried it."""

    @property
    def path_params(self) -> Mapping[str, Any]:
        """``name`` (the model) and, when the request pins one, ``version``."""
        ...

    @property
    def headers(self) -> Mapping[str, Any]:
        """The request's headers (gRPC: its metadata), lower-case names; e.g. ``x-request-key``."""
        ...


class Scorer(Protocol):
    """What the data plane needs from the backend chosen for a request (a :class:`ModelBackend` is one)."""

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

    def select(self, request: Target) -> tuple[Scorer, str | None]:
        """The backend for ``request`` and the version it pins (None: whatever is served).

        Raises :class:`~serving.errors.ModelNotFound` when the request names a model or
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

    def select(self, request: Target) -> tuple[ModelBackend, str | None]:
        requested = request.path_params["name"]
        if requested != self.name:
            raise ModelNotFound(
                f"model {requested!r} is not served here; this server serves {self.name!r} ({self.model_uri})",
            )
        version = request.path_params.get("version")
        current = self.primary.holder.current
        if version is not None and version != current.version:
            raise ModelNotFound(
                f"{self.name} version {version!r} is not loaded; this server serves version {current.version} "
                f"({self.model_uri}); drop /versions/{version} to follow the alias",
            )
        return self.primary, version
