"""Moving a live alias: the registry write, the tags that keep its history, and the audit record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mlops.vocabulary import PROMOTED_AT_TAG, REPLACED_BY_TAG

if TYPE_CHECKING:
    from mlflow import MlflowClient


def move_alias(
    client: MlflowClient,
    model_name: str,
    alias: str,
    version: str,
    previous: str | None,
    *,
    reason: str = "",
    links: Mapping[str, str] | None = None,
) -> None:
    """Point ``alias`` at ``version`` and record the move on both versions and in the audit trail.

    The one place a live alias moves (a gate's promotion, a deployment target's deploy or
    rollback): ``mlops.promoted_at`` on the new version, ``mlops.replaced_by`` on the one it
    replaced (``previous``, read by the caller before the move), so the registry alone holds
    the history a rollback follows; an ``alias.moved`` audit record says why (``reason``) and
    links it (``links``: pipeline run, deployment), which ``mlops history`` reads.
    """
    from datetime import UTC, datetime

    from mlops.governance.audit import record

    client.set_registered_model_alias(model_name, alias, version)
    client.set_model_version_tag(model_name, version, PROMOTED_AT_TAG, datetime.now(UTC).isoformat())
    if previous is not None and previous != version:
        client.set_model_version_tag(model_name, previous, REPLACED_BY_TAG, version)
    record(
        "alias.moved",
        f"{model_name}/{version}",
        {"alias": alias, "from": previous or "", "to": version, "reason": reason},
        links={**(links or {}), "model_version": f"{model_name}/{version}"},
        tracking_uri=client.tracking_uri,
    )
