"""What a rollout writes to the MLflow registry: the verdict on the challenger, and the challenger alias.

The champion alias itself moves only through the target's ``deploy`` (which calls
:meth:`mlops.tracking.store.TrackingStore.move_alias`), so the registry and the serving side move together.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mlops.gates import PROMOTE, REJECT
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    CHALLENGER,
    CHAMPION,
    ROLLED_BACK_AT_TAG,
    ROLLOUT_GATE,
    ROLLOUT_STAGE_TAG,
)


class RolloutRegistry:
    """Reads the pair a rollout starts from and records how it ended, for one registered model."""

    def __init__(self, tracking: TrackingStore | str, model_name: str):
        self.store = tracking if isinstance(tracking, TrackingStore) else TrackingStore.from_uri(tracking)
        """The registry the rollout reads and writes (a URI builds it)."""
        self.tracking_uri = self.store.tracking_uri
        self.model_name = model_name

    def alias(self, alias: str) -> str | None:
        return self.store.alias_version(self.model_name, alias)

    def pair(self, challenger: str | None = None) -> tuple[str, str]:
        """(champion, challenger): the aliases' versions, or ``challenger`` when given."""
        champion = self.alias(CHAMPION)
        chosen = challenger or self.alias(CHALLENGER)
        if champion is None:
            raise ValueError(
                f"models:/{self.model_name}@{CHAMPION} is not set: there is nothing to roll out against; "
                "deploy a first version instead"
            )
        if chosen is None:
            raise ValueError(
                f"models:/{self.model_name}@{CHALLENGER} is not set; register a new version or pass --challenger"
            )
        if chosen == champion:
            raise ValueError(
                f"version {chosen} is already the champion of {self.model_name}; nothing to roll out"
            )
        self.store.model_version(self.model_name, chosen)  # raises naming a missing version
        return champion, chosen

    def stage(self, version: str, stage: str) -> None:
        """Record on the version where its rollout is now (the audit trail keeps every step)."""
        self.store.tag_version(self.model_name, version, {ROLLOUT_STAGE_TAG: stage})

    def promoted(self, version: str, reason: str) -> None:
        self.stage(version, "promoted")
        self._verdict(version, PROMOTE, reason)
        self._drop_challenger_alias(version)

    def rolled_back(self, version: str, reason: str) -> None:
        self.stage(version, "rolled_back")
        self._verdict(version, REJECT, reason)
        self.store.tag_version(self.model_name, version, {ROLLED_BACK_AT_TAG: datetime.now(UTC).isoformat()})
        self._drop_challenger_alias(version)

    def _verdict(self, version: str, decision: str, reason: str) -> None:
        self.store.record_gate(self.model_name, version, ROLLOUT_GATE, decision, reason)

    def _drop_challenger_alias(self, version: str) -> None:
        if self.alias(CHALLENGER) == version:
            self.store.delete_alias(self.model_name, CHALLENGER)
