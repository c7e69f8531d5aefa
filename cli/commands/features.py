"""``mlops features``: a Feast feature repository in the workspace, and training sets built from it.

Feast runs in its own venv (``mlops features setup``); everything here goes through ``mlops.features``,
which runs Feast's CLI and its Python API in that venv.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.commands.options import add_entity_table_options, add_feature_repo_option, feature_repo_path

if TYPE_CHECKING:
    from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "features",
        help="a Feast feature store: init/apply/materialize a feature repository, build point-in-time training sets",
        description="Feast as the feature store (its own venv; `mlops features setup` builds it once per machine).",
    )
    commands = parser.add_subparsers(dest="features_command", required=True)
    setup = commands.add_parser("setup", help="build Feast's own venv (idempotent, cached per machine)")
    setup.set_defaults(handler=setup_command)

    init = commands.add_parser(
        "init",
        help="write a feature repository from a table (entity, FileSource, FeatureView, FeatureService)",
        description="Copy a CSV/Parquet table into a Feast feature repository (local provider: file offline store, "
        "SQLite online store) with one feature view of its columns. Then: mlops features apply",
    )
    init.add_argument(
        "--data", required=True, help="the feature table: CSV or Parquet, a local path or s3:// URI"
    )
    init.add_argument("--entity", required=True, help="the entity id column, e.g. customer_id")
    init.add_argument("--timestamp", default="event_timestamp", help="the column of each row's event time")
    init.add_argument("--ttl", default="30d", help="how long a value stays valid: 30d, 12h, 90m, 0 = forever")
    init.add_argument(
        "--exclude", default="", help="columns to leave out of the feature view, comma-separated"
    )
    init.add_argument("--project", default="mlops", help="the Feast project name (an identifier)")
    init.add_argument("--force", action="store_true", help="overwrite an existing feature repository")
    init.add_argument(
        "--online-store",
        default="sqlite",
        help="sqlite (a file in the repository, the default) or postgresql://USER@HOST[:PORT]/DATABASE"
        "[?sslmode=MODE&schema=NAME]; the password only from $MLOPS_FEAST_ONLINE_PASSWORD, never in the URL",
    )
    _repo_option(init)
    init.set_defaults(handler=init_command)

    apply = commands.add_parser("apply", help="`feast apply`: register the repository's definitions")
    _repo_option(apply)
    apply.set_defaults(handler=apply_command)

    materialize = commands.add_parser(
        "materialize", help="load offline values into the online store (`feast materialize-incremental`)"
    )
    materialize.add_argument("--end", default=None, help="up to this time (ISO; default now; naive is UTC)")
    materialize.add_argument(
        "--start",
        default=None,
        help="from this time (`feast materialize START END`); default: where the last run ended",
    )
    _repo_option(materialize)
    materialize.set_defaults(handler=materialize_command)

    training = commands.add_parser(
        "training-set",
        help="entity table (ids, times, labels) -> point-in-time join with a feature service -> Parquet",
        description="Join each entity row with the latest feature values dated at or before its time (within the "
        "views' TTL); writes OUT and OUT's .features.json lineage record.",
    )
    training.add_argument("--service", required=True, help="the feature service to join")
    add_entity_table_options(training, "ids, timestamps, labels")
    training.add_argument("--out", required=True, type=Path, help="the training set to write (.parquet)")
    training.add_argument(
        "--allow-missing",
        action="store_true",
        help="keep rows with no feature values within the TTL (null features, counted in the record) instead of refusing",
    )
    _repo_option(training)
    training.set_defaults(handler=training_set_command)

    skew = commands.add_parser(
        "skew",
        help="served feature values against the offline store's at the same entity and time, per feature",
        description="Join each served row (entity id, request time, the feature values the server used) "
        "point-in-time with the feature service offline and count, per feature, the rows whose values differ. "
        "Exit 0: no feature skewed; 1: a feature skewed; 3: not conclusive (too few rows had an offline value).",
    )
    skew.add_argument("--service", required=True, help="the feature service the server looked up")
    skew.add_argument(
        "--served",
        required=True,
        help="the served rows: CSV or Parquet, or a model's request-log folder (<workspace>/request-logs/<model>, "
        "or its s3:// prefix)",
    )
    skew.add_argument(
        "--since",
        default="",
        help="with a request-log folder: only rows logged at or after this time, ISO 8601 (default: the whole log)",
    )
    skew.add_argument("--entity", required=True, help="the entity id column")
    skew.add_argument("--timestamp", default="timestamp", help="the column of each request's time")
    skew.add_argument(
        "--features", default="", help="features to compare, comma-separated (default: the service's)"
    )
    for flag, field, kind in SKEW_FLAGS:
        skew.add_argument(f"--{flag}", type=kind, default=None, help=_policy_help(field))
    _repo_option(skew)
    skew.set_defaults(handler=skew_command)


def _repo_option(parser: argparse.ArgumentParser) -> None:
    add_feature_repo_option(parser, "--repo")


def _repo(args: argparse.Namespace, workspace: Workspace) -> Path:
    return feature_repo_path(args.repo, workspace)


def setup_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.features import environment
    from mlops.features.config import FeastSettings

    started = time.monotonic()
    env = environment.install(FeastSettings())
    print(f"Feast environment: {env.venv} ({time.monotonic() - started:.1f} s)")
    return 0


def init_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.data.dataset import load_table
    from mlops.features.repository import init_repository, parse_ttl

    table, _ = load_table(args.data)
    repo = init_repository(
        table,
        table_name=Path(args.data).name,
        out=_repo(args, workspace),
        entity=args.entity,
        timestamp=args.timestamp,
        ttl=parse_ttl(args.ttl),
        project=args.project,
        exclude=tuple(name.strip() for name in args.exclude.split(",") if name.strip()),
        force=args.force,
        online_store=args.online_store,
    )
    print(f"wrote feature repository {repo.path}")
    print(
        f"  entity {repo.entity!r}, feature view {repo.view!r} ({len(repo.features)} features, ttl {args.ttl})"
    )
    print(f"  feature service {repo.service!r}")
    print("next: mlops features apply && mlops features materialize")
    return 0


def apply_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.features import environment, feast_cli
    from mlops.features.config import FeastSettings

    settings = FeastSettings()
    print(feast_cli.apply(environment.find(settings), _repo(args, workspace), settings).rstrip())
    return 0


def materialize_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.features import environment, feast_cli
    from mlops.features.config import FeastSettings

    settings = FeastSettings()
    end = feast_cli.parse_time(args.end, "--end") if args.end else None
    start = feast_cli.parse_time(args.start, "--start") if args.start else None
    env = environment.find(settings)
    print(feast_cli.materialize(env, _repo(args, workspace), settings, end=end, start=start).rstrip())
    return 0


def training_set_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.features import environment
    from mlops.features.config import FeastSettings
    from mlops.features.training_set import build_training_set

    settings = FeastSettings()
    built = build_training_set(
        environment.find(settings),
        _repo(args, workspace),
        settings,
        service=args.service,
        entities_uri=args.entities,
        out=args.out,
        timestamp=args.timestamp,
        allow_missing=args.allow_missing,
    )
    views = ", ".join(built.record["feature_views"])
    print(f"wrote {built.out} ({len(built.frame)} rows; feature views {views}) and {built.record_path}")
    if built.record["rows_without_features"]:
        print(
            f"  {built.record['rows_without_features']} row(s) without feature values kept with nulls (--allow-missing)"
        )
    return 0


SKEW_FLAGS = (
    ("max-share", "max_share", float),
    ("min-rows", "min_rows", int),
    ("sample", "sample_rows", int),
)
"""The skew command's policy flags and the SkewPolicy fields they set."""


def _policy_help(field: str) -> str:
    """A policy flag's help: the field's docstring and its default, read from SkewPolicy itself."""
    from mlops.features.config import SkewPolicy

    info = SkewPolicy.model_fields[field]
    return f"{(info.description or '').rstrip('.')} (default {info.default})"


SKEW_EXIT = {"pass": 0, "fail": 1, "not conclusive": 3}


def skew_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.features import environment, feast_cli
    from mlops.features.config import FeastSettings, SkewPolicy
    from mlops.features.skew import measure_skew

    given = {field: getattr(args, flag.replace("-", "_")) for flag, field, _ in SKEW_FLAGS}
    policy = SkewPolicy(**{key: value for key, value in given.items() if value is not None})
    settings = FeastSettings()
    since = feast_cli.parse_time(args.since, "--since") if args.since else None
    served = served_rows(args.served, since)
    report = measure_skew(
        environment.find(settings),
        _repo(args, workspace),
        settings,
        service=args.service,
        served=served,
        entity=args.entity,
        timestamp=args.timestamp,
        features=[name.strip() for name in args.features.split(",") if name.strip()] or None,
        policy=policy,
    )
    print("\n".join(report.lines()))
    return SKEW_EXIT[report.verdict]


def served_rows(where: str, since: datetime | None = None) -> Any:
    """A table of served rows (CSV or Parquet), or a model's request log: the Parquet files of a folder or an
    ``s3://`` prefix (``<request-logs>/<model>``), each request's looked-up features with the entity id and
    the time, read as the monitor reads them (files written before ``since`` skipped unopened)."""
    import pandas as pd

    from mlops.data.dataset import load_table
    from mlops.monitoring.logs import log_files, read_log

    if Path(where).is_file():
        return load_table(where)[0]
    root, _, model = where.rstrip("/").rpartition("/")
    files = log_files(root or ".", model, since or datetime.min.replace(tzinfo=UTC)) if model else []
    if not files:
        raise ValueError(
            f"--served {where}: neither a CSV/Parquet file nor a request-log folder holding requests-*.parquet"
            + (f" written at or after {since.isoformat()}" if since else "")
            + " (a served model's log is <workspace>/request-logs/<model>)"
        )
    return pd.concat([read_log(uri, since).to_pandas() for uri in files], ignore_index=True)
