"""The online store block of ``feature_store.yaml``: SQLite by default, PostgreSQL from a URL without its
password (no Feast needed)."""

from __future__ import annotations

import pytest
import yaml

from mlops.features.environment import FeastError
from mlops.features.online_store import PASSWORD_ENV, online_store_yaml


def block(store: str) -> dict[str, object]:
    parsed = yaml.safe_load(online_store_yaml(store))["online_store"]
    assert isinstance(parsed, dict)
    return parsed


def test_sqlite_is_a_file_in_the_repository() -> None:
    assert block("sqlite") == block(" SQLite ") == {"type": "sqlite", "path": "data/online_store.db"}


def test_a_postgres_url_becomes_feasts_fields_with_the_password_from_the_environment() -> None:
    assert block("postgresql://feast@db.internal:6543/features?sslmode=disable&schema=online") == {
        "type": "postgres",
        "host": "db.internal",
        "port": 6543,
        "database": "features",
        "db_schema": "online",
        "user": "feast",
        "password": f"${{{PASSWORD_ENV}}}",
        "sslmode": "disable",
        "conn_type": "pool",
    }
    defaults = block("postgres://feast@db/features")
    assert (defaults["port"], defaults["db_schema"], defaults["sslmode"]) == (5432, "public", "prefer")


@pytest.mark.parametrize(
    ("store", "message"),
    [
        (
            "redis://cache:6379",
            r"--online-store 'redis://cache:6379' is not an online store this platform writes",
        ),
        ("postgresql://feast:s3cret@db/features", rf"holds a password.*export {PASSWORD_ENV}"),
        ("postgresql://db/features", r"names no USER;"),
        ("postgresql://feast@db", r"names no DATABASE;"),
        ("postgresql://feast@:5432/features", r"names no HOST;"),
        ("postgresql://feast@db:port/features", r"the port is not a number"),
        ("postgresql://feast@db/features?timeout=3", r"unknown option\(s\) \['timeout'\]"),
        ("postgresql://feast@db/features?sslmode=maybe", r"sslmode 'maybe' is not one of disable, allow"),
        (
            "postgresql://feast@db/features?schema=a;drop",
            r"the schema 'a;drop' is not a plain PostgreSQL name",
        ),
        ('postgresql://feast@db/fea"tures', r"the database 'fea\"tures' is not a plain PostgreSQL name"),
    ],
    ids=[
        "other-store",
        "password",
        "no-user",
        "no-database",
        "no-host",
        "bad-port",
        "unknown-option",
        "bad-sslmode",
        "odd-schema",
        "odd-database",
    ],
)
def test_a_store_the_platform_cannot_write_is_refused_by_what_is_wrong(store: str, message: str) -> None:
    with pytest.raises(FeastError, match=message):
        online_store_yaml(store)
