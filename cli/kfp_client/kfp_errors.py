"""Errors a KFP deployment can give us, turned into messages that say what to do.

``kfp.Client`` surfaces raw ``ApiException`` objects (with the HTTP body as a string)
and urllib3 retry errors; an operator in a CI log needs the host, the status and the
fix instead, so every call into the client runs inside :func:`translate_errors`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager


class KfpError(RuntimeError):
    """Base class: the KFP deployment could not do what we asked."""


class KfpUnreachableError(KfpError, ConnectionError):
    """No HTTP answer from the host (refused, DNS, timeout, TLS)."""


class KfpAuthError(KfpError, PermissionError):
    """The host answered 401 or 403."""


class KfpApiError(KfpError):
    """The host answered with another non-2xx status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class KfpNotFoundError(KfpError, LookupError):
    """A pipeline or pipeline version we were asked to use does not exist on the host."""


class RunFailedError(KfpError):
    """A run we waited for ended in a state other than SUCCEEDED, or did not end in time."""

    def __init__(self, message: str, run_id: str, state: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.state = state


def _server_message(body: object) -> str:
    """KFP's grpc-gateway puts the useful text under ``message`` of a JSON body."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return ""
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError:
        return body.strip()[:300]
    if isinstance(parsed, dict):
        return str(parsed.get("message") or parsed.get("error") or "").strip()[:300]
    return ""


def _unreachable_reason(exc: BaseException) -> str:
    """urllib3 prefixes the reason with a connection object's repr; drop it."""
    reason = str(getattr(exc, "reason", None) or exc)
    return re.sub(r"^<[^>]*>: ", "", reason)


@contextmanager
def translate_errors(host: str, auth_hint: str, action: str, not_found_hint: str = "") -> Iterator[None]:
    """Re-raise transport and HTTP failures of ``action`` as :class:`KfpError` subclasses.

    ``auth_hint`` says how the caller authenticated, so a 401 can name the credential
    that was rejected rather than just the status; ``not_found_hint`` explains a 404.
    """
    import kfp_server_api
    import urllib3

    try:
        yield
    except KfpError:
        raise
    except kfp_server_api.ApiException as exc:
        status = int(exc.status or 0)
        detail = _server_message(exc.body)
        suffix = f": {detail}" if detail else ""
        if status == 0:
            raise KfpUnreachableError(
                f"cannot reach KFP at {host} while trying to {action} ({exc.reason}); check --host/KFP_HOST "
                "and, for https, the certificate"
            ) from exc
        if status == 401:
            raise KfpAuthError(
                f"KFP at {host} rejected the credentials (401 Unauthorized) while trying to {action}{suffix}; "
                f"{auth_hint}"
            ) from exc
        if status == 403:
            raise KfpAuthError(
                f"KFP at {host} denied access (403 Forbidden) while trying to {action}{suffix}; the credentials "
                "are valid but lack permission: check --namespace (the profile you may use) and the "
                "account's RBAC bindings"
            ) from exc
        fix = f"; {not_found_hint}" if status == 404 and not_found_hint else ""
        raise KfpApiError(
            f"KFP at {host} answered {status} {exc.reason} while trying to {action}{suffix}{fix}", status
        ) from exc
    except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as exc:
        raise KfpUnreachableError(
            f"cannot reach KFP at {host} while trying to {action}: {_unreachable_reason(exc)}; check --host/KFP_HOST "
            "(for a cluster without ingress: kubectl -n kubeflow port-forward svc/ml-pipeline 8888:8888 and "
            "--host http://localhost:8888)"
        ) from exc
    except OSError as exc:  # e.g. a token file that disappeared after it was checked
        raise KfpAuthError(f"cannot read the credentials for KFP at {host}: {exc}; {auth_hint}") from exc
