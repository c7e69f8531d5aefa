"""Why the server refused a request, independent of the transport that carried it, and how each transport says so.

The data plane (:mod:`serving.dataplane`) and everything below it raise a
:class:`ServingError` subclass carrying only *why* (the class) and the message for the
client. Each transport turns the class into its own status through one table here:
:data:`HTTP_STATUS` for REST and :data:`GRPC_STATUS` for gRPC, so the same refusal reads
alike on both, and the metrics label it through a third, :data:`REASON`; a new error class
is one line per table (``tests/serving/test_dataplane.py``
fails when a class is neither listed nor a subclass of a listed one). Both tables sit in
this module, beside the classes, because the metrics use HTTP's numbers for every
protocol (the ``code`` label of ``mlops_serving_requests_total``), and so that checking
them needs neither Starlette nor the generated gRPC stubs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

_Status = TypeVar("_Status")


class ServingError(Exception):
    """A request the server refuses; ``message`` names the bad value and the fix, ``reason`` labels the error metric."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    @property
    def reason(self) -> str:
        """The ``reason`` label of ``mlops_serving_errors_total`` (from :data:`REASON`)."""
        return _lookup(REASON, self)


class InvalidInput(ServingError):
    """The request is malformed or holds a value the model cannot take."""


class UnknownEntity(InvalidInput):
    """A request sent entity ids and the feature store has no current values for one of them (missing, or older
    than the feature view's TTL): a bad input, as KServe answers an input it cannot use, named in the message."""


class Unauthenticated(ServingError):
    """The bearer token is missing or wrong."""


class Forbidden(ServingError):
    """The credential is valid but not for this route (the inference token on the rollout admin route)."""


class NotFound(ServingError):
    """Nothing answers at the path (REST) the request names."""


class ModelNotFound(NotFound):
    """The request names a model, or a model version, this server does not serve."""


class VersionGone(ModelNotFound):
    """A request pinned to a version that a hot reload replaced while it waited in the batch queue."""


class MethodNotAllowed(ServingError):
    """The path exists but not for this method (REST only)."""


class Conflict(ServingError):
    """The request contradicts the server's state (e.g. a rollout plan naming the champion as challenger)."""


class PayloadTooLarge(ServingError):
    """The request body exceeds ``--max-payload-bytes``."""


class ClientClosed(ServingError):
    """The client went away before its request arrived; nobody is answered, the metrics count it."""


class Unavailable(ServingError):
    """A service the request needs is down (the feature store's server for a request by entity id): retry later."""


class InternalError(ServingError):
    """The server failed on a request that passed every check (the model raised); logged with its traceback."""


HTTP_STATUS: dict[type[ServingError], int] = {
    InvalidInput: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    MethodNotAllowed: 405,
    Conflict: 409,
    PayloadTooLarge: 413,
    ClientClosed: 499,  # nginx's code for a client that closed the connection; only ever counted
    Unavailable: 503,
    InternalError: 500,
    ServingError: 500,
}
"""REST's status code for each error class (a subclass takes its nearest listed ancestor's)."""

GRPC_STATUS: dict[type[ServingError], str] = {
    InvalidInput: "INVALID_ARGUMENT",
    Unauthenticated: "UNAUTHENTICATED",
    Forbidden: "PERMISSION_DENIED",
    NotFound: "NOT_FOUND",
    MethodNotAllowed: "UNIMPLEMENTED",
    Conflict: "FAILED_PRECONDITION",
    PayloadTooLarge: "RESOURCE_EXHAUSTED",
    ClientClosed: "CANCELLED",
    Unavailable: "UNAVAILABLE",
    InternalError: "INTERNAL",
    ServingError: "INTERNAL",
}
"""gRPC's status for each error class, by ``grpc.StatusCode`` member name (a subclass takes its nearest ancestor's)."""


REASON: dict[type[ServingError], str] = {
    InvalidInput: "bad_request",
    UnknownEntity: "unknown_entity",
    Unauthenticated: "unauthorized",
    Forbidden: "forbidden",
    NotFound: "not_found",
    MethodNotAllowed: "client_error",
    Conflict: "client_error",
    PayloadTooLarge: "payload_too_large",
    ClientClosed: "client_closed",
    Unavailable: "unavailable",
    InternalError: "internal",
    ServingError: "internal",
}
"""The ``reason`` label of ``mlops_serving_errors_total`` for each error class (a subclass takes its nearest ancestor's)."""


def _lookup(table: Mapping[type[ServingError], _Status], error: ServingError) -> _Status:
    for cls in type(error).__mro__:
        if cls in table:
            return table[cls]
    raise TypeError(f"{type(error).__name__} is not a ServingError")  # unreachable: ServingError is listed


def http_status(error: ServingError) -> int:
    """The HTTP status REST answers ``error`` with; also the ``code`` label the metrics count it under."""
    return _lookup(HTTP_STATUS, error)


def grpc_status(error: ServingError) -> str:
    """The name of the ``grpc.StatusCode`` gRPC answers ``error`` with."""
    return _lookup(GRPC_STATUS, error)
