"""Fixtures of the approval tests (test_approval_approvers.py and test_approval_decisions.py): the keys of
the people who approve, and the approvers trusted among them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlops.governance.approvers import Approvers
from mlops.governance.signing import generate_key_pair


@pytest.fixture
def people(tmp_path: Path) -> dict[str, Path]:
    """Private keys of alice, bob (trusted approvers), mallory (not trusted) and the platform's signing key."""
    keys: dict[str, Path] = {}
    trusted = tmp_path / "approvers"
    trusted.mkdir()
    for person in ("alice", "bob", "mallory", "platform"):
        private, public = generate_key_pair(tmp_path / "keys" / person)
        keys[person] = private
        if person in ("alice", "bob"):
            shutil.copy(public, trusted / f"{person}.pub")
    keys["approvers"] = trusted
    return keys


@pytest.fixture
def approvers(people: dict[str, Path]) -> Approvers:
    return Approvers.load(people["approvers"], "test")
