"""The canary stage's plain logic (the rollout itself is tested end to end in tests/delivery/rollout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.canary.config import CanarySettings
from components.canary.rollout_run import audit_workspace
from mlops.governance.audit import AUDIT_URI_ENV


def test_the_audit_trail_goes_to_the_workspace_of_a_sqlite_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUDIT_URI_ENV, raising=False)
    assert audit_workspace("sqlite:////work/ws/mlflow.db") == Path("/work/ws")


def test_a_remote_store_needs_an_audit_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUDIT_URI_ENV, raising=False)
    with pytest.raises(ValueError, match="set MLOPS_AUDIT_URI"):
        audit_workspace("http://mlflow:5000")
    monkeypatch.setenv(AUDIT_URI_ENV, "s3://bucket/audit.jsonl")
    assert audit_workspace("http://mlflow:5000") is None


def test_the_stage_is_off_by_default() -> None:
    assert CanarySettings().canary is False
