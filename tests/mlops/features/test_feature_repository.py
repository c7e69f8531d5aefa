"""``init_repository`` writes a Feast repository whose Python is safe for any column name (no Feast needed)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from mlops.features.environment import FeastError, last_error_line
from mlops.features.repository import init_repository, parse_ttl, safe_name


def table(**extra: Sequence[object]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "customer_id": ["7590-VHVEG", "5575-GNVDE"],
            "event_timestamp": ["2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"],
            "tenure": [1, 34],
            "MonthlyCharges": [29.85, 56.95],
            "Partner": [True, False],
            **extra,
        }
    )


def test_the_generated_python_parses_and_names_every_feature(tmp_path: Path) -> None:
    repo = init_repository(
        table(),
        table_name='it\'s a "table".csv',
        out=tmp_path,
        entity="customer_id",
        timestamp="event_timestamp",
        ttl=timedelta(days=30),
    )
    source = (tmp_path / "features.py").read_text()
    ast.parse(source)  # valid Python whatever the file was called
    assert repo.view == "it_s_a__table" and repo.service == "it_s_a__table_service"
    assert "Field(name='tenure', dtype=Int64)" in source
    assert "Field(name='MonthlyCharges', dtype=Float64)" in source
    assert "Field(name='Partner', dtype=Bool)" in source
    assert "ValueType.STRING" in source and "ttl=timedelta(seconds=2592000)" in source
    copied = pd.read_parquet(tmp_path / "data" / f"{repo.view}.parquet")
    assert str(copied["event_timestamp"].dt.tz) == "UTC"
    assert "online_store:\n  type: sqlite" in (tmp_path / "feature_store.yaml").read_text()


@pytest.mark.parametrize("column", ["monthly charges", "total'); import os; ('", "2nd_payment", "débt:ratio"])
def test_a_feature_column_feast_cannot_name_is_refused_by_name(tmp_path: Path, column: str) -> None:
    with pytest.raises(
        FeastError, match=re.escape(f"feature column {column!r} is not a plain identifier") + ".*--exclude"
    ):
        init_repository(
            table(**{column: [1, 2]}),
            table_name="t.csv",
            out=tmp_path,
            entity="customer_id",
            timestamp="event_timestamp",
            ttl=timedelta(days=1),
        )
    assert not (tmp_path / "features.py").exists()
    init_repository(
        table(**{column: [1, 2]}),
        table_name="t.csv",
        out=tmp_path,
        entity="customer_id",
        timestamp="event_timestamp",
        ttl=timedelta(days=1),
        exclude=(column,),
    )
    assert column not in (tmp_path / "features.py").read_text()


@pytest.mark.parametrize(
    ("columns", "entity", "timestamp", "message"),
    [
        ({}, "customerID", "event_timestamp", r"--entity 'customerID' is not a column"),
        (
            {"customer_id": "customer id"},
            "customer id",
            "event_timestamp",
            r"entity column 'customer id' is not a plain identifier",
        ),
        (
            {},
            "customer_id",
            "tenure",
            r"timestamp column 'tenure' does not read as dates/times \(.*soon.*\); pick --timestamp",
        ),
    ],
    ids=["unknown-entity", "odd-entity-name", "timestamp-not-times"],
)
def test_unknown_or_odd_key_columns_are_refused(
    tmp_path: Path, columns: dict[str, str], entity: str, timestamp: str, message: str
) -> None:
    with pytest.raises(FeastError, match=message):
        init_repository(
            table(tenure=["soon", "later"]).rename(columns=columns),
            table_name="t.csv",
            out=tmp_path,
            entity=entity,
            timestamp=timestamp,
            ttl=timedelta(days=1),
        )
    assert not (tmp_path / "features.py").exists()


def test_an_existing_repository_is_kept_unless_forced(tmp_path: Path) -> None:
    kwargs = dict(
        table_name="t.csv", out=tmp_path, entity="customer_id", timestamp="event_timestamp", ttl=timedelta(0)
    )
    init_repository(table(), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(FeastError, match="exists; pass --force"):
        init_repository(table(), **kwargs)  # type: ignore[arg-type]
    init_repository(table(), force=True, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 2592000), ("12h", 43200), ("90m", 5400), ("3600", 3600), ("0", 0)]
)
def test_ttl_durations(text: str, seconds: int) -> None:
    assert parse_ttl(text).total_seconds() == seconds


def test_a_bad_ttl_says_how_to_write_one() -> None:
    with pytest.raises(FeastError, match=r"--ttl '30 days' is not a duration; write it as 30d"):
        parse_ttl("30 days")


def test_names_and_error_lines() -> None:
    assert safe_name("2024 churn.v2.csv") == "t_2024_churn"
    traceback = (
        "Traceback (most recent call last):\n  File 'x'\nfeast.errors.FeastObjectNotFoundException: no view\n"
    )
    assert last_error_line(traceback) == "feast.errors.FeastObjectNotFoundException: no view"
    assert last_error_line("noise\nmlops-feast-error: LookupError: no service\n") == "LookupError: no service"
