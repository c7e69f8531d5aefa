"""``mlops features init``: a Feast feature repository written from one table.

The repository is plain Feast, meant to be read, edited and versioned: ``feature_store.yaml`` (the local
provider: a file offline store under ``data/`` and, by default, a SQLite online store there too, or a
PostgreSQL one, ``online_store``), the table copied as
Parquet into ``data/`` (so the repository does not depend on where the table was), and ``features.py``
defining the entity, the FileSource, a FeatureView of the table's feature columns and a FeatureService.
Every name reaches the generated Python as a string literal (``repr``), never as code; a column Feast
refers to by name (``view:feature`` references, join keys) must be a plain identifier, else it is refused.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.features.environment import FeastError
from mlops.features.online_store import SQLITE, online_store_yaml

if TYPE_CHECKING:
    import pandas as pd

FEATURES_FILE = "features.py"
STORE_FILE = "feature_store.yaml"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What Feast can refer to by name: feature references are ``view:feature``, join keys become SQL/pandas
columns of its stores, and a generated FeatureView field must round-trip through all of them."""
TTL_PATTERN = re.compile(r"^(\d+)\s*([smhdw]?)$")
TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class FeatureRepo:
    """What ``init`` wrote: where, and the names a later command needs."""

    path: Path
    project: str
    entity: str
    timestamp: str
    view: str
    service: str
    features: tuple[str, ...]
    ttl: timedelta


def parse_ttl(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``3600s`` or seconds; ``0`` is Feast's "no TTL" (values never expire)."""
    match = TTL_PATTERN.match(text.strip().lower())
    if not match:
        raise FeastError(
            f"--ttl {text!r} is not a duration; write it as 30d, 12h, 90m, 3600s (0: never expires)"
        )
    return timedelta(seconds=int(match.group(1)) * TTL_UNITS[match.group(2)])


def check_identifier(name: str, role: str) -> None:
    if not IDENTIFIER.match(name):
        raise FeastError(
            f"{role} {name!r} is not a plain identifier (letters, digits, _; not starting with a digit), which "
            "Feast needs to refer to it by name; rename the column in the table"
            + (", or leave it out with --exclude" if role == "feature column" else "")
        )


def feast_type(series: pd.Series) -> str:
    """The feast.types name of a column's values (Parquet keeps the pandas dtype the copy was written with)."""
    import pandas as pd

    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "Bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "Int64"
    if pd.api.types.is_float_dtype(dtype):
        return "Float64"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "UnixTimestamp"
    return "String"


def to_utc(values: pd.Series) -> pd.Series:
    """Times as UTC datetimes: ISO 8601 text (a CSV's) read fast, other spellings one by one; naive is UTC."""
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return pd.to_datetime(values, utc=True)
    try:
        return pd.to_datetime(values, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "could not infer format": mixed is asked for
            return pd.to_datetime(values, utc=True, format="mixed")


def prepared_table(table: pd.DataFrame, entity: str, timestamp: str, features: list[str]) -> pd.DataFrame:
    """The copy Feast reads: timestamps as UTC datetimes, text columns as strings (nulls kept), bools as bools."""

    frame = table[[entity, timestamp, *features]].copy()
    try:
        stamps = to_utc(frame[timestamp])
    except (ValueError, TypeError) as exc:
        raise FeastError(
            f"timestamp column {timestamp!r} does not read as dates/times ({exc}); pick --timestamp"
        ) from exc
    if stamps.isna().any():
        row = int(stamps.isna().to_numpy().nonzero()[0][0])
        raise FeastError(
            f"timestamp column {timestamp!r} is empty at row {row}; every feature row needs its time"
        )
    frame[timestamp] = stamps
    if frame[entity].isna().any():
        raise FeastError(f"entity column {entity!r} has empty ids; every feature row needs its entity")
    for column in [entity, *features]:
        if feast_type(frame[column]) == "String":
            frame[column] = frame[column].astype("string").astype(object)
    return frame


def init_repository(
    table: pd.DataFrame,
    *,
    table_name: str,
    out: Path,
    entity: str,
    timestamp: str,
    ttl: timedelta,
    project: str = "mlops",
    exclude: tuple[str, ...] = (),
    force: bool = False,
    online_store: str = SQLITE,
) -> FeatureRepo:
    """Writes the repository for ``table`` into ``out``; refuses to overwrite one unless ``force``."""
    for column, role in ((entity, "--entity"), (timestamp, "--timestamp")):
        if column not in table.columns:
            raise FeastError(
                f"{role} {column!r} is not a column of the table; its columns are {list(table.columns)}"
            )
    unknown = [name for name in exclude if name not in table.columns]
    if unknown:
        raise FeastError(f"--exclude names {unknown}, not columns of the table")
    check_identifier(entity, "entity column")
    check_identifier(timestamp, "timestamp column")
    check_identifier(project, "project name (--project)")
    features = [str(c) for c in table.columns if c not in (entity, timestamp) and c not in exclude]
    if not features:
        raise FeastError("the table has no feature columns besides the entity and the timestamp")
    for name in features:
        check_identifier(name, "feature column")
    view = safe_name(table_name)
    store = store_yaml(project, online_store)  # refuses a bad online store before anything is written
    if (out / STORE_FILE).exists() and not force:
        raise FeastError(f"{out / STORE_FILE} exists; pass --force to overwrite the feature repository")
    frame = prepared_table(table, entity, timestamp, features)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(data / f"{view}.parquet", index=False)
    (out / STORE_FILE).write_text(store)
    types = {name: feast_type(frame[name]) for name in features}
    entity_type = "INT64" if feast_type(frame[entity]) == "Int64" else "STRING"
    service = f"{view}_service"
    (out / FEATURES_FILE).write_text(
        features_py(view, service, entity, entity_type, timestamp, types, ttl, f"{view}.parquet")
    )
    (out / ".feastignore").write_text("data/\n")
    return FeatureRepo(out, project, entity, timestamp, view, service, tuple(features), ttl)


def safe_name(table_name: str) -> str:
    """The feature view's name from the table's file name: an identifier (other characters become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", Path(table_name).name.split(".")[0]).strip("_") or "features"
    return f"t_{name}" if name[0].isdigit() else name


def store_yaml(project: str, online_store: str = SQLITE) -> str:
    online = online_store_yaml(online_store)
    where = "one SQLite file" if "type: sqlite" in online else "PostgreSQL"
    head = (
        f"# Feast's local provider: the offline store is the Parquet under data/, the online store {where}.\n"
    )
    body = f"project: {project}\nregistry: data/registry.db\nprovider: local\n"
    return head + body + online + "offline_store:\n  type: file\nentity_key_serialization_version: 3\n"


def features_py(
    view: str,
    service: str,
    entity: str,
    entity_type: str,
    timestamp: str,
    types: dict[str, str],
    ttl: timedelta,
    parquet: str,
) -> str:
    used = sorted(set(types.values()))
    fields = "".join(f"        Field(name={name!r}, dtype={kind}),\n" for name, kind in types.items())
    return f'''"""Feature definitions written by `mlops features init`; edit them, then `mlops features apply`."""

from datetime import timedelta
from pathlib import Path

from feast import Entity, FeatureService, FeatureView, Field, FileSource, ValueType
from feast.types import {", ".join(used)}

DATA = Path(__file__).resolve().parent / "data"

entity = Entity(name={entity!r}, join_keys=[{entity!r}], value_type=ValueType.{entity_type})

source = FileSource(
    name={view + "_source"!r},
    path=str(DATA / {parquet!r}),
    timestamp_field={timestamp!r},
)

view = FeatureView(
    name={view!r},
    entities=[entity],
    ttl=timedelta(seconds={int(ttl.total_seconds())}),
    schema=[
{fields}    ],
    source=source,
    online=True,
)

service = FeatureService(name={service!r}, features=[view])
'''


def read_repository(path: Path) -> FeatureRepo:
    """The names a repository declares, read back from its ``features.py`` without importing Feast: the
    entity's join key, the timestamp field, the view (its TTL and features) and the service, as ``init``
    writes them (string literals); a file edited past that shape is refused naming what was not found."""
    source = path / FEATURES_FILE
    if not source.is_file():
        raise FeastError(f"{path} holds no {FEATURES_FILE}: not a feature repository (`mlops features init`)")
    calls: dict[str, list[ast.Call]] = {}
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append(node)

    def one(kind: str) -> ast.Call:
        found = calls.get(kind, [])
        if len(found) != 1:
            raise FeastError(f"{source} declares {len(found)} {kind}s; serving by entity reads exactly one")
        return found[0]

    def literal(call: ast.Call, name: str) -> object:
        for keyword in call.keywords:
            if keyword.arg == name:
                try:
                    return ast.literal_eval(keyword.value)
                except ValueError:
                    break
        raise FeastError(f"{source}: {call.func.id}(...) has no literal {name}=")  # type: ignore[attr-defined]

    view = one("FeatureView")
    ttl = timedelta(0)
    for keyword in view.keywords:
        if keyword.arg == "ttl" and isinstance(keyword.value, ast.Call):
            ttl = timedelta(**{k.arg: ast.literal_eval(k.value) for k in keyword.value.keywords if k.arg})
    fields = [call for call in calls.get("Field", [])]
    keys = literal(one("Entity"), "join_keys")
    if not isinstance(keys, list) or len(keys) != 1:
        raise FeastError(f"{source}: the entity has join keys {keys!r}; serving by entity reads exactly one")
    project = "mlops"
    store = path / STORE_FILE
    if store.is_file():
        for line in store.read_text().splitlines():
            if line.startswith("project:"):
                project = line.split(":", 1)[1].strip()
    return FeatureRepo(
        path,
        project,
        str(keys[0]),
        str(literal(one("FileSource"), "timestamp_field")),
        str(literal(view, "name")),
        str(literal(one("FeatureService"), "name")),
        tuple(str(literal(field, "name")) for field in fields),
        ttl,
    )
