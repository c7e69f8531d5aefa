"""Read a registered version's alias, tags and file locations straight from an MLflow SQLite store.

Why: resolving ``NAME@ALIAS`` and reading the version's tags through MLflow costs about 4 s in a
fresh process (importing MLflow, SQLAlchemy's engine and the store's schema check), while the
reads are three indexed rows; ``mlops score`` and ``mlops serve`` pay it before their first row.
This reader answers only what it finds: a model, version or alias it does not find, a layout it
does not know (a table or column missing) or a database it cannot open returns None, and the
caller (:class:`mlops.tracking.model_registry_store.ModelRegistryStore`) asks MLflow instead, which
answers or raises its own error exactly as it would without this reader. So a wrong guess here can cost
time, never a different answer to a question MLflow would have refused.

The tables and columns are those of MLflow's SQL registry (``model_versions``,
``model_version_tags``, ``registered_model_aliases``, ``runs``), kept by its migrations; rows
belong to MLflow's ``default`` workspace (the only one a store without workspaces has), and a
version MLflow deleted (stage ``Deleted_Internal``) is not found, as MLflow's own reads skip it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

DELETED_STAGE = "Deleted_Internal"
"""MLflow's stage for a deleted version whose row it keeps (``STAGE_DELETED_INTERNAL``)."""
DEFAULT_WORKSPACE = "default"
"""MLflow's workspace of every row in a store that does not use workspaces."""
REQUIRED_COLUMNS = {
    "model_versions": {"name", "version", "current_stage", "source", "storage_location", "run_id"},
    "model_version_tags": {"key", "value", "name", "version"},
    "registered_model_aliases": {"alias", "version", "name"},
    "runs": {"run_uuid", "artifact_uri"},
}


@dataclass(frozen=True)
class StoredVersion:
    """One registered version as the reader found it: what ``mlflow.entities.model_registry.ModelVersion``
    gives the callers that read a version by its alias (``version`` as text: MLflow's holds a number, and
    callers take ``str()`` of either)."""

    name: str
    version: str
    tags: dict[str, str]
    aliases: list[str]
    run_id: str


@dataclass(frozen=True)
class SqliteRegistryReader:
    """The registry reads of one SQLite store file, each in its own read-only connection."""

    db: Path

    def version_by_alias(self, name: str, alias: str) -> StoredVersion | None:
        """The version ``alias`` points at, with its tags and aliases; None when not found here (as for
        ``latest``, which MLflow answers with the highest version and never stores)."""
        row = self._one(
            "SELECT version FROM registered_model_aliases WHERE name = ? AND alias = ?",
            (name, alias),
            "registered_model_aliases",
        )
        return None if row is None else self.version(name, str(row[0]))

    def version(self, name: str, version: str) -> StoredVersion | None:
        """One version with its tags and aliases; None when not found here."""
        if not version.isdigit():
            return None
        row = self._one(
            "SELECT run_id FROM model_versions WHERE name = ? AND version = ? AND current_stage != ?",
            (name, int(version), DELETED_STAGE),
            "model_versions",
        )
        if row is None:
            return None
        tags = self._all(
            "SELECT key, value FROM model_version_tags WHERE name = ? AND version = ?",
            (name, int(version)),
            "model_version_tags",
        )
        aliases = self._all(
            "SELECT alias, version FROM registered_model_aliases WHERE name = ? AND version = ?",
            (name, int(version)),
            "registered_model_aliases",
        )
        if tags is None or aliases is None:
            return None
        return StoredVersion(
            name,
            version,
            {str(k): str(v or "") for k, v in tags},
            sorted(str(a) for a, _ in aliases),
            str(row[0] or ""),
        )

    def download_uri(self, name: str, version: str) -> str | None:
        """Where the version's files are (MLflow's rule: its storage location, else its source); None when
        not found here."""
        if not version.isdigit():
            return None
        row = self._one(
            "SELECT storage_location, source FROM model_versions WHERE name = ? AND version = ? "
            "AND current_stage != ?",
            (name, int(version), DELETED_STAGE),
            "model_versions",
        )
        return None if row is None else (str(row[0] or row[1] or "") or None)

    def run_artifact_uri(self, run_id: str) -> str | None:
        """The artifact root of run ``run_id``; None when not found here."""
        row = self._one("SELECT artifact_uri FROM runs WHERE run_uuid = ?", (run_id,), "runs")
        return None if row is None or not row[0] else str(row[0])

    # --- the queries ------------------------------------------------------------------------

    def _one(self, query: str, params: tuple[object, ...], table: str) -> tuple[object, ...] | None:
        rows = self._all(query, params, table)
        return rows[0] if rows else None

    def _all(self, query: str, params: tuple[object, ...], table: str) -> list[tuple[object, ...]] | None:
        """The rows of ``query`` in the default workspace; None when the store cannot answer it."""
        try:
            with closing(
                sqlite3.connect(f"{self.db.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
            ) as db:
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                if not REQUIRED_COLUMNS[table] <= columns:
                    return None
                if "workspace" in columns:
                    query = f"{query} AND workspace = ?"
                    params = (*params, DEFAULT_WORKSPACE)
                return list(db.execute(query, params))
        except sqlite3.Error:
            return None


def reader_for(tracking_uri: str, registry_uri: str) -> SqliteRegistryReader | None:
    """The reader of a ``sqlite:///`` store that is its own registry and exists; None for anything else."""
    from mlops.tracking.sqlite_catalog import sqlite_path

    db = sqlite_path(tracking_uri)
    if db is None or registry_uri != tracking_uri or not db.is_file():
        return None
    return SqliteRegistryReader(db)
