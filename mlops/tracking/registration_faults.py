"""What a failed registration says, and how it takes back a version it could not complete.

A registration talks to two services: the MLflow tracking server (runs, the registry, and on a
cluster the artifact proxy in front of S3) and, for the audit trail, S3 or the workspace's disk.
When either fails the step must name it, say what was left behind, and say the fix; the
registry must hold no version that lacks its artifacts, signature, profile or audit record.
``register_onnx_model`` orders its writes so that only one request creates a version (with every
tag in it) and only the audit records follow it; this module handles that last stretch.

The one window left: the server commits the new version and dies before its reply arrives. The
step then fails without knowing the number, so nothing can take that version back; it carries its
files, digest and signature but no audit record. (Shrinking it further needs the registry and the
trail in one transaction, which MLflow does not offer.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mlops.tracking.store import RegistrationProgress

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore


class RegistrationError(RuntimeError):
    """A registration failed; the message names the service, what is left in the registry, and the fix."""


@contextmanager
def registering(store: TrackingStore, progress: RegistrationProgress) -> Iterator[None]:
    """Around a registration: a failure becomes :func:`registration_failure`'s error (taking back a version
    created but not recorded), or is raised as it is when no service failed and nothing was created."""
    try:
        yield
    except Exception as exc:
        failure = registration_failure(exc, store, progress)
        if failure is None:
            raise
        raise failure from exc


def registration_failure(
    exc: BaseException, store: TrackingStore, progress: RegistrationProgress
) -> RegistrationError | None:
    """The error to raise for ``exc``. A version created but not recorded in the audit trail is deleted
    here (when the registry still answers); a recorded one is whole and stays. None: no service failed and
    no version was created, so ``exc`` (bad input, a bug) is raised as it is, with its own message."""
    name, number = progress.model_name, progress.created
    service = failed_service(exc, store)
    if service is None and not number:
        return None
    cleanup = "nothing needs cleaning up by hand"
    if not number:
        state = f"No version of {name!r} was registered."
    elif progress.recorded:
        state = (
            f"{name} version {number} is registered whole (files, digest, signature, audit record); only the "
            "run's own bookkeeping failed, and no gate has judged the version, so no alias will reach it."
        )
    else:
        state, deleted = _take_back(store, name, number, exc)
        if not deleted:
            cleanup = "delete that version first"
    return RegistrationError(
        f"registering {name!r} failed: {service or type(exc).__name__}: {_first_line(exc)}. {state} "
        + (
            f"Bring the service back and re-run this step; {cleanup}."
            if service
            else f"Fix the cause; {cleanup}."
        )
    )


def failed_service(exc: BaseException, store: TrackingStore) -> str | None:
    """Which service failed: S3 when boto3 (the audit trail, direct artifacts) raised; for a tracking server,
    whether it still answers (a dead server also breaks artifact downloads, so the text alone cannot tell)."""
    from mlops.tracking.store import redact_uri

    server = redact_uri(store.tracking_uri)
    chain = _chain(exc)
    if any(type(cause).__module__.startswith(("botocore", "boto3", "s3transfer")) for cause in chain):
        return "the S3 store (audit trail or artifacts) did not answer"
    if store.tracking_uri.startswith(("http://", "https://")):
        if not _answers(store.tracking_uri):
            return f"the MLflow tracking server at {server} did not answer"
        if any("mlflow-artifacts" in str(cause) for cause in chain):
            return (
                f"the MLflow server at {server} answers but could not use its artifact store (S3 behind it)"
            )
    return None


def _answers(tracking_uri: str) -> bool:
    """Whether the tracking server answers its health check now (2 s)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{tracking_uri.rstrip('/')}/health", timeout=2) as reply:  # noqa: S310
            return bool(reply.status == 200)
    except Exception:  # refused, timed out, or a URI urllib cannot open: not a server that answers
        return False


def _take_back(store: TrackingStore, model_name: str, number: str, exc: BaseException) -> tuple[str, bool]:
    """Delete the version whose audit record could not be written; say what happened, and whether it went."""
    subject = f"{model_name} version {number}"
    try:
        store.delete_version(model_name, number)
    except Exception as delete_exc:  # the registry is down too: nothing more can be done from here
        return (
            f"{subject} was created but could not be recorded in the audit trail, and deleting it failed too "
            f"({_first_line(delete_exc)}): delete it (MlflowClient().delete_model_version({model_name!r}, "
            f"{number!r})); it carries no alias and no gate will ever move one to it.",
            False,
        )
    _record_withdrawal(store, model_name, number, exc)
    return f"{subject} was created, could not be recorded in the audit trail, and was deleted again.", True


def _record_withdrawal(store: TrackingStore, model_name: str, number: str, exc: BaseException) -> None:
    """Best effort: a ``model.registered`` record may already be in the trail; say the version is gone."""
    from mlops.governance.audit import record

    subject = f"{model_name}/{number}"
    try:
        record(
            "model.registration_withdrawn",
            subject,
            {"reason": _first_line(exc)},
            links={"pipeline_run_id": store.pipeline_run_id} if store.pipeline_run_id else {},
            tracking_uri=store.tracking_uri,
        )
    except Exception:  # the audit store is what failed: the version is deleted, which is what matters
        return


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
