"""The one client-error type every protocol path raises (REST answers it as HTTP, gRPC as a status code)."""

from __future__ import annotations


class ProtocolError(Exception):
    """A client error: ``status`` is the HTTP code, ``message`` the explanation returned to the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message
