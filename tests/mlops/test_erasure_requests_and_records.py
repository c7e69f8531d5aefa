"""Erasing one person's rows, what is asked and what is kept: the ``COLUMN=VALUE`` request and its refusals,
the workspace salt and the subject hash the audit trail holds instead of the value, and the outcome (its
status, its fields, its audit record). The files themselves are rewritten in test_erasure_rewrites.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from mlops.governance import audit
from mlops.governance.erasure import (
    ERASED_ACTION,
    SALT_BYTES,
    SALT_FILE,
    Erasure,
    ErasureError,
    RowStore,
    StoreOutcome,
    erase,
    parse_key,
    record_erasure,
    subject_hash,
    workspace_salt,
)
from mlops.storage import object_lock
from tests.mlops.erasure_files import SALT, WHO, logged, parquet

# --- the request: COLUMN=VALUE, and only the schema's subject key ---


def test_the_key_is_column_equals_value_of_the_schemas_subject_key() -> None:
    assert parse_key(f"customer_id={WHO}", "customer_id") == ("customer_id", WHO)
    assert parse_key("customer_id=a=b", "customer_id") == ("customer_id", "a=b")


@pytest.mark.parametrize("text", ["customer_id", "=C-1", "customer_id=", ""])
def test_a_key_that_is_not_column_equals_value_is_refused(text: str) -> None:
    with pytest.raises(ErasureError, match="write COLUMN=VALUE"):
        parse_key(text, "customer_id")


def test_a_column_other_than_the_subject_key_is_refused_by_name() -> None:
    with pytest.raises(ErasureError, match="subject_key is 'customer_id'.*--key customer_id=VALUE"):
        parse_key("age=42", "customer_id")


def test_a_schema_without_a_subject_key_cannot_erase_by_person() -> None:
    with pytest.raises(ErasureError, match="declares no subject_key"):
        parse_key("customer_id=1", "")


# --- the salt and the hash the trail keeps ---


def test_the_salt_is_made_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    salt = workspace_salt(tmp_path)
    assert len(salt) == SALT_BYTES and workspace_salt(tmp_path) == salt
    assert stat.S_IMODE(os.stat(tmp_path / SALT_FILE).st_mode) == 0o600
    assert workspace_salt(tmp_path / "other") != salt


def test_a_damaged_salt_is_refused_not_replaced(tmp_path: Path) -> None:
    (tmp_path / SALT_FILE).write_bytes(b"short")
    with pytest.raises(ErasureError, match="holds 5 bytes, not a 32-byte salt"):
        workspace_salt(tmp_path)
    assert (tmp_path / SALT_FILE).read_bytes() == b"short"


def test_the_hash_names_column_value_and_salt() -> None:
    one = subject_hash(SALT, "customer_id", WHO)
    assert one == subject_hash(SALT, "customer_id", WHO) and len(one) == 64 and WHO not in one
    assert one != subject_hash(SALT, "customer_id", WHO + "x")
    assert one != subject_hash(SALT, "client_id", WHO)
    assert one != subject_hash(b"t" * SALT_BYTES, "customer_id", WHO)
    assert subject_hash(SALT, "a", "b=c") != subject_hash(SALT, "a=b", "c")


# --- the outcome and its audit record ---


def test_the_status_says_erased_nothing_found_or_not_conclusive(tmp_path: Path) -> None:
    mine = logged(tmp_path / "a.parquet", [WHO])
    theirs = logged(tmp_path / "b.parquet", ["C-1"])
    blind = parquet(tmp_path / "c.parquet", pd.DataFrame({"x": [1]}))
    assert erase([RowStore("s", (mine,))], "customer_id", WHO, SALT).status == "erased"
    assert erase([RowStore("s", (theirs,))], "customer_id", WHO, SALT).status == "nothing found"
    assert erase([RowStore("s", (theirs, blind))], "customer_id", WHO, SALT).status == "not conclusive"
    assert erase([], "customer_id", WHO, SALT).status == "nothing found"


def test_the_audit_record_holds_the_salted_hash_and_counts_never_the_value(tmp_path: Path) -> None:
    uri = logged(tmp_path / "log.parquet", [WHO, "C-1", WHO])
    result = erase([RowStore("request log", (uri,), request_log=True)], "customer_id", WHO, SALT)
    event = record_erasure(result, tmp_path)
    assert (
        event.action == ERASED_ACTION
        and event.subject == f"subject/{subject_hash(SALT, 'customer_id', WHO)[:16]}"
    )
    assert event.details["subject_hash"] == subject_hash(SALT, "customer_id", WHO)
    assert event.details["stores"]["request log"]["rows_removed"] == 2
    assert event.details["stores"]["request log"]["files_rewritten"] == 1
    assert event.details["status"] == "erased" and event.details["rows_removed"] == 2
    assert WHO not in (tmp_path / audit.AUDIT_FILE).read_text()
    assert audit.verify(tmp_path).intact


# --- edges: each pins one decision of the erasure ---


def test_the_refusals_name_their_fix_in_full(tmp_path: Path) -> None:
    with pytest.raises(ErasureError) as missing:
        parse_key("customer_id=1", "")
    assert str(missing.value) == (
        "the schema declares no subject_key, so rows cannot be erased by person; name the column that "
        "identifies the person (subject_key: customer_id) in the schema file"
    )
    (tmp_path / SALT_FILE).write_bytes(b"x" * (SALT_BYTES + 1))
    with pytest.raises(ErasureError) as damaged:
        workspace_salt(tmp_path)
    assert str(damaged.value) == (
        f"{tmp_path / SALT_FILE} holds {SALT_BYTES + 1} bytes, not a {SALT_BYTES}-byte salt; restore it from a "
        "backup (a new salt would no longer match the subject hashes the trail holds)"
    )


def test_the_salt_folder_is_made_when_missing(tmp_path: Path) -> None:
    assert len(workspace_salt(tmp_path / "a" / "b")) == SALT_BYTES


def test_a_store_outcome_records_every_field_by_name() -> None:
    lock = object_lock.Retention("s3://b/k.parquet", "COMPLIANCE", "2027-01-01T00:00:00+00:00", True)
    outcome = StoreOutcome("s", 3, 4, ["a", "b"], ["c"], [lock], ["d: why"], "customer_id", 5)
    assert outcome.details() == {
        "files_searched": 3,
        "rows_removed": 4,
        "files_rewritten": 2,
        "searched_by": "customer_id",
        "unsearchable": ["c"],
        "locked": [
            {
                "uri": "s3://b/k.parquet",
                "mode": "COMPLIANCE",
                "until": "2027-01-01T00:00:00+00:00",
                "legal_hold": True,
            }
        ],
        "refused": ["d: why"],
        "rows_without_key": 5,
    }
    result = Erasure("customer_id", "h" * 64, [outcome])
    assert result.details() == {
        "column": "customer_id",
        "subject_hash": "h" * 64,
        "status": "not conclusive",
        "rows_removed": 4,
        "stores": {"s": outcome.details()},
    }


def test_rows_without_a_key_alone_make_the_erasure_not_conclusive(tmp_path: Path) -> None:
    keyed = logged(tmp_path / "a.parquet", [WHO, "C-1"])
    assert erase([RowStore("s", (keyed,))], "customer_id", WHO, SALT).status == "erased"
    unkeyed = logged(tmp_path / "b.parquet", ["C-1", None, None])
    more = logged(tmp_path / "c.parquet", [None])
    result = erase([RowStore("s", (unkeyed, more))], "customer_id", WHO, SALT)
    assert result.stores[0].rows_without_key == 3 and result.status == "not conclusive"
    assert (
        result.stores[0].unsearchable == []
        and result.stores[0].locked == []
        and result.stores[0].refused == []
    )
