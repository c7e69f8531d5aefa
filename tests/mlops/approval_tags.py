"""A version's tags before and after a second person's approval, for the approval tests
(test_approval_approvers.py and test_approval_decisions.py; their keys are the ``people`` fixture of
tests/mlops/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from mlops.governance.approval import Statement, pending_tags, sign, signed_tags, statement_for
from mlops.governance.approvers import private_key_id
from mlops.governance.signing import key_id
from mlops.vocabulary import (
    APPROVAL_STATUS_TAG,
    DECISION_TAG,
    DIGEST_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
)

NAME, VERSION = "credit-default", "7"
AT = "2026-11-29T12:00:00+00:00"


def version_tags(people: dict[str, Path], **extra: str) -> dict[str, str]:
    platform_pub = people["platform"].with_name("signing.pub")
    return {
        DECISION_TAG: "promote",
        DIGEST_TAG: "ab" * 32,
        SIGNATURE_URI_TAG: "runs:/r1/signature/model.sig",
        SIGNING_KEY_ID_TAG: key_id(platform_pub),
        **pending_tags(AT),
        **extra,
    }


def approved(people: dict[str, Path], who: str = "alice", **changes: str) -> dict[str, str]:
    """The tags of the version after ``who`` approved it (``changes`` alter the statement before signing)."""
    tags = version_tags(people)
    statement = statement_for(NAME, VERSION, tags, "approved", who, private_key_id(people[who]), AT, "ok")
    statement = Statement(**{**statement.__dict__, **changes})
    # the status stays approved whatever the statement says: a rejection whose status tag was rewritten
    return {**tags, **signed_tags(statement, sign(statement, people[who])), APPROVAL_STATUS_TAG: "approved"}
