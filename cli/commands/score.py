"""``mlops score``: score a file or a prefix of CSV/Parquet files with a registered model, in this process.

The model is ``NAME@ALIAS`` from the registry (the workspace's, or ``MLFLOW_TRACKING_URI``),
verified (digest and signature) before it is loaded. The input is read in chunks of
``score.chunk_rows`` rows, checked like a request to ``mlops serve``, scored with ONNX Runtime
and written as Parquet under ``--out``, mirroring the input's partitions (id column,
pass-through columns, ``score``, ``predicted_class``; with ``--explain`` also ``reasons``, each row's
reasons as JSON), with a copy in the request-log format that
``mlops monitor`` reads. A re-run skips the chunks already written. The same job runs on a
cluster as the ``batch_scoring`` pipeline (``mlops run|submit batch_scoring``), in parallel
shards. Every other setting is ``--set score.field=value`` (``mlops run batch_scoring --help``
lists them). Exit 0 when the job finished, 2 when it was refused (bad input, model not verified).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.commands.options import (
    add_entity_table_options,
    add_feature_repo_option,
    add_set_option,
    feature_repo_path,
)
from mlops.workspace import Workspace

if TYPE_CHECKING:
    from rich.progress import Task
    from rich.text import Text

HELP = "score a CSV/Parquet file or prefix with a registered model alias (batch scoring, in this process)"
PIPELINE = "batch_scoring"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help=HELP, description=(__doc__ or "").split("\n\n", 1)[1])
    parser.add_argument(
        "--model",
        default=None,
        help="registered model and alias, NAME@ALIAS (= score.model; default: the workspace's model@champion, "
        "when its registry holds exactly one)",
    )
    parser.add_argument(
        "--data",
        default=None,
        help="a CSV/Parquet file, a folder or an s3:// prefix of them (= score.data_uri); or --features",
    )
    parser.add_argument(
        "--features",
        default=None,
        metavar="SERVICE",
        help="score entity ids: join --entities point-in-time with this feature service (as a training set is "
        "built) and score the joined rows; the id column is the service's entity unless score.id_column says",
    )
    add_entity_table_options(parser, "entity ids and a time column", needed_with="--features")
    add_feature_repo_option(parser, role="with --features: the feature repository")
    parser.add_argument("--out", required=True, help="output folder or s3:// prefix (= score.output_uri)")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="add each row's reasons, a JSON column 'reasons' (= score.explain; how many: score.explain_top_k); "
        "the version must have been registered with reference rows",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in a log file)")
    add_set_option(parser, "any other score setting by its address (repeatable), e.g. score.chunk_rows=50000")
    parser.set_defaults(handler=score_command)


def settings_of(args: argparse.Namespace) -> Any:
    """The ``score`` section from the flags and ``--set`` (flags win); local paths made absolute."""
    from cli.parameters import parse_overrides
    from components.batch_score.config import ScoreSettings
    from mlops.settings import SettingsError, from_addressed
    from pipelines.signature import PipelineForm

    assignments = list(args.overrides or [])
    addresses = [a.partition("=")[0].strip() for a in assignments]
    other = sorted(a for a in addresses if a != "score" and not a.startswith("score."))
    if other:
        raise SettingsError(f"mlops score takes score.* settings only; got {other}")
    # The score section alone (the batch_scoring pipeline's form would import the pipeline, and KFP with it).
    form = PipelineForm(PIPELINE, "mlops score", (ScoreSettings(),))
    given = parse_overrides(form, assignments)
    given.update({"score.model": args.model, "score.data_uri": _absolute(args.data)})
    given["score.output_uri"] = _absolute(args.out)
    if getattr(args, "explain", False):
        given["score.explain"] = True
    try:
        (settings,) = from_addressed(given, form.defaults)
    except SettingsError as exc:  # one line per bad setting, named by its address
        raise SettingsError("; ".join(exc.problems)) from exc
    return settings


def _absolute(uri: str) -> str:
    return uri if "://" in uri else str(Path(uri).expanduser().resolve())


def score_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from dataclasses import asdict

    from cli.summaries.batch_scoring import summary_lines
    from components.batch_score.batch_finish import finish_job
    from components.batch_score.batch_plan import plan_with_model
    from components.batch_score.batch_shard import score_shard
    from mlops.tracking.context import resolve_tracking

    if (args.data is None) == (args.features is None):
        raise ValueError(
            "give either --data FILE (feature values) or --features SERVICE --entities FILE (entity ids)"
        )
    resolved = dict(vars(args))  # what the flags leave open, settled here; the caller's namespace untouched
    if args.model is None:
        from cli.model_choice import workspace_model

        resolved["model"] = (
            workspace_model(None, resolve_tracking(workspace).tracking_uri, "--model") + "@champion"
        )
    if args.features is not None:
        resolved["data"], resolved["overrides"] = _joined_entities(args, workspace)
    settings = settings_of(argparse.Namespace(**resolved))
    # The command's own setting, made at its entry point (as `mlops serve` does): the rows/s bar is the
    # only progress shown, not MLflow's per-file download bars.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    tracking = resolve_tracking(workspace, experiment=PIPELINE)
    tracking.check()
    store = tracking.store
    cache = workspace.root / "serving-cache"
    plan, artifact = plan_with_model(settings, store, cache)
    print(
        f"{plan.model_name}@{plan.alias} = version {plan.version} (verified); {len(plan.files)} input file(s)"
    )
    with _bar(plan.total_rows, disabled=args.no_progress) as advance:
        results = [score_shard(plan, s, store, cache, advance, artifact) for s in range(len(plan.shards))]
    summary = finish_job(
        plan,
        results,
        workspace_root=workspace.root if tracking.workspace_store else None,
        tracking_uri=store.tracking_uri,
    )
    print("\n".join(summary_lines(asdict(summary))))
    return 0


def _joined_entities(args: argparse.Namespace, workspace: Workspace) -> tuple[str, list[str]]:
    """The entity table joined point-in-time with ``--features`` (refusing rows without values within the
    views' TTL, as a training set does), written under the workspace and kept there: it is the job's input,
    which the scoring record names and hashes (the next join of the same service and table replaces it); the
    overrides with the entity as the
    output's id column and the time passed through, unless ``--set`` says otherwise."""
    import hashlib

    from mlops.features import environment
    from mlops.features.config import FeastSettings
    from mlops.features.training_set import build_training_set

    if args.entities is None:
        raise ValueError("--features needs --entities FILE: the entity ids (and their times) to score")
    settings = FeastSettings()
    repo = feature_repo_path(args.feature_repo, workspace)
    digest = hashlib.sha256(f"{args.features}\0{Path(args.entities).resolve()}".encode()).hexdigest()[:12]
    out = workspace.root / "feature-joins" / f"{args.features}-{digest}.parquet"
    built = build_training_set(
        environment.find(settings),
        repo,
        settings,
        service=args.features,
        entities_uri=args.entities,
        out=out,
        timestamp=args.timestamp,
        keep_hint="or leave these ids out of --entities (a model never scores a row without its features)",
    )
    keys = sorted({key for view in built.record["feature_views"].values() for key in view["join_keys"]})
    print(
        f"joined {len(built.frame)} entity row(s) point-in-time with feature service {args.features!r} "
        f"(views {', '.join(built.record['feature_views'])}) into {out} (the job's input, kept; record "
        f"{built.record_path})"
    )
    overrides = list(args.overrides or [])
    given = {item.split("=", 1)[0] for item in overrides}
    if "score.id_column" not in given and len(keys) == 1:
        overrides.append(f"score.id_column={keys[0]}")
    if "score.pass_through_columns" not in given:
        overrides.append(f"score.pass_through_columns={args.timestamp}")
    return str(out), overrides


def _rows_per_second() -> Any:
    """A ``rich`` progress column: rows per second since the job started."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RowsPerSecond(ProgressColumn):
        def render(self, task: Task) -> Text:
            elapsed = task.elapsed or 0.0
            return Text(f"{task.completed / elapsed if elapsed > 0 else 0.0:,.0f} rows/s")

    return RowsPerSecond()


class _bar:  # noqa: N801 - used as a context manager, like open()
    """A progress bar of rows (total unknown for CSV or S3 input: it counts up)."""

    def __init__(self, total: int | None, disabled: bool):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress(
            BarColumn(), MofNCompleteColumn(), _rows_per_second(), TimeElapsedColumn(), disable=disabled
        )
        self.task = self.progress.add_task("rows", total=total)

    def __enter__(self) -> Any:
        self.progress.start()
        return lambda rows: self.progress.advance(self.task, rows)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
