"""How the MLflow seam spells and redacts a store's URI, and the error it raises: what its modules share.

A module of its own so that :mod:`mlops.tracking.store`, the REST client and the served store use
them without importing each other (``mlops.tracking``'s modules form no cycle); ``store`` re-exports
them, where callers have always found them.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit


class TrackingError(ValueError):
    """Tracking is misconfigured (unreachable server, clashing artifact location); the message says the fix."""


def normalise_location(location: str) -> str:
    """One spelling per place: local paths and ``file:`` URIs become ``file:///abs``, no trailing slash."""
    location = location.strip()
    parts = urlsplit(location)
    if parts.scheme == "file":
        return Path(parts.path).expanduser().resolve().as_uri()
    if not parts.scheme:
        return Path(location).expanduser().resolve().as_uri()
    return location.rstrip("/")


def redact_uri(uri: str) -> str:
    """``scheme://user:***@host/…``: a password in a URI never reaches a log or a summary."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{parts.username}:***@{host}{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def local_path(uri: str) -> Path | None:
    """The path a ``file:`` URI or a plain path names on this machine, as MLflow reads one (the host part
    unread, percent-escapes decoded); None for any other scheme (``s3://``, ``mlflow-artifacts:/``, ``runs:/``)."""
    parts = urlsplit(uri)
    return Path(unquote(parts.path)) if parts.scheme in ("file", "") else None
