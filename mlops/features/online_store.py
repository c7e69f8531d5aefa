"""The online store a feature repository names in ``feature_store.yaml``: Feast's SQLite file (the default,
nothing else running) or a PostgreSQL database the user already has.

A PostgreSQL store is given as a URL without a password (``postgresql://feast@db:5432/features``, optional
``?sslmode=`` and ``&schema=``); the repository is meant to be versioned, so the password never enters it:
the YAML reads it from ``$MLOPS_FEAST_ONLINE_PASSWORD``, which Feast expands when it loads the file (it
runs ``os.path.expandvars`` over it). Unset, the password is empty (trust or peer authentication).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

from mlops.features.environment import FeastError

PASSWORD_ENV = "MLOPS_FEAST_ONLINE_PASSWORD"
"""The variable ``feature_store.yaml`` reads the PostgreSQL online store's password from."""
SQLITE = "sqlite"
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$-]*$")
USAGE = "write --online-store sqlite, or postgresql://USER@HOST[:PORT]/DATABASE[?sslmode=MODE&schema=NAME]"

SQLITE_YAML = "online_store:\n  type: sqlite\n  path: data/online_store.db\n"


def online_store_yaml(store: str) -> str:
    """The ``online_store:`` block of ``feature_store.yaml`` for ``store`` (``sqlite`` or a PostgreSQL URL)."""
    if store.strip().lower() == SQLITE:
        return SQLITE_YAML
    parts = urlsplit(store.strip())
    if parts.scheme not in ("postgresql", "postgres"):
        raise FeastError(f"--online-store {store!r} is not an online store this platform writes; {USAGE}")
    if parts.password is not None:
        raise FeastError(
            f"--online-store: the URL holds a password, which would be written into the (versioned) feature "
            f"repository; leave it out of the URL and export {PASSWORD_ENV} instead"
        )
    database = unquote(parts.path.lstrip("/"))
    missing = [
        what
        for what, value in (("USER", parts.username), ("HOST", parts.hostname), ("DATABASE", database))
        if not value
    ]
    if missing:
        raise FeastError(f"--online-store {store!r} names no {' or '.join(missing)}; {USAGE}")
    try:
        port = parts.port or 5432
    except ValueError as exc:
        raise FeastError(f"--online-store {store!r}: the port is not a number; {USAGE}") from exc
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - {"sslmode", "schema"})
    if unknown:
        raise FeastError(f"--online-store {store!r}: unknown option(s) {unknown}; {USAGE}")
    sslmode = query.get("sslmode", "prefer")
    if sslmode not in SSL_MODES:
        raise FeastError(f"--online-store: sslmode {sslmode!r} is not one of {', '.join(SSL_MODES)}")
    schema = query.get("schema", "public")
    for what, value in (("user", unquote(parts.username or "")), ("database", database), ("schema", schema)):
        if not NAME.match(value):
            raise FeastError(f"--online-store: the {what} {value!r} is not a plain PostgreSQL name")
    return (
        "online_store:\n"
        "  type: postgres\n"
        f"  host: {parts.hostname}\n"
        f"  port: {port}\n"
        f"  database: {database}\n"
        f"  db_schema: {schema}\n"
        f"  user: {unquote(parts.username or '')}\n"
        f'  password: "${{{PASSWORD_ENV}}}"\n'
        f"  sslmode: {sslmode}\n"
        "  conn_type: pool\n"
    )
