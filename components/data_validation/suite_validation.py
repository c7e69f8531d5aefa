"""Validate a dataset against a versioned expectation suite with Great Expectations 1.x.

The schema check (columns, numeric dtypes, 0/1 labels) runs first and GE runs
anyway, so one report lists every problem instead of the first. Reports are
written whether or not validation passes: a failed pipeline step is only
actionable if its report says which rule broke and by how much.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from components.data_validation.check_results import CheckResult, DataValidationResult, ValidationFailed
from components.data_validation.data_report import render_html, render_json
from components.data_validation.gx_run import run_suite
from components.data_validation.numeric_cells import BadCells, coerce_numeric
from components.data_validation.suite import DEFAULT_SUITE_PATH, Suite, SuiteError, load_suite
from components.data_validation.suite_scope import NOT_NULL, scope_suite, text_as_missing_columns
from mlops.data.dataset import DatasetError, DatasetSchema, label_text, labels_text, load_table, read_missing
from mlops.tracking.store import TrackingStore

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

__all__ = [
    "DEFAULT_SUITE_PATH",
    "CheckResult",
    "DataValidationResult",
    "Suite",
    "SuiteError",
    "ValidationFailed",
    "load_suite",
    "run_validation",
    "validate",
    "write_reports",
]

SCHEMA_CHECK = "dataset_schema"


def _fallback_table(frame: pd.DataFrame, schema: DatasetSchema) -> pd.DataFrame:
    """The table the suite checks when the schema check failed: markers read, the declared columns that
    are present, and the label encoded 0/1 when it holds only the two declared values (so a problem
    elsewhere does not add false failures on the label)."""
    declared = set(schema.columns)
    table = schema.read_missing(frame.loc[:, [c for c in frame.columns if c in declared]])
    if schema.label in table.columns and table[schema.label].notna().all():
        text = labels_text(table[schema.label])
        positive, negative = label_text(schema.positive_label), label_text(schema.negative_label)
        if set(text) <= {positive, negative}:
            table[schema.label] = (text == positive).astype("int64")
    return table


def _schema_check(
    frame: pd.DataFrame, schema: DatasetSchema, source: str, bad: dict[str, BadCells] | None = None
) -> tuple[CheckResult, pd.DataFrame]:
    """The schema check, and the table the suite then checks: the prepared one (markers read as
    missing, declared columns, label 0/1) or, when the schema check fails, the best-effort one."""
    try:
        table = schema.prepare(frame, source)
    except DatasetError as exc:
        ok, text = False, str(exc)
        table = _fallback_table(frame, schema)
    else:
        ok, text = (
            True,
            f"all {len(schema.columns)} declared columns present and numeric as declared; label "
            f"{schema.label!r} holds {schema.positive_label!r} (1) and {schema.negative_label!r} (0)",
        )
    if bad:
        text += "; read as missing (bounded by the suite's null expectation): " + "; ".join(
            f"{column}: {cells.describe()}" for column, cells in bad.items()
        )
    check = CheckResult(
        expectation=SCHEMA_CHECK,
        column=None,
        success=ok,
        observed=text,
        observed_text=text,
        kwargs={
            "label": schema.label,
            "positive_label": schema.positive_label,
            "numeric_features": len(schema.numeric_features),
            "categorical_features": len(schema.categorical_features),
            "protected_attributes": list(schema.protected_attributes),
            "ignored_columns": list(schema.ignored_columns),
            "missing_values": list(schema.missing_values),
        },
    )
    return check, table


def _with_bad_cells(check: CheckResult, bad: dict[str, BadCells]) -> CheckResult:
    """A null check on a column whose text cells were read as missing names those cells."""
    cells = bad.get(check.column or "")
    if cells is None or check.expectation != NOT_NULL:
        return check
    return check.model_copy(update={"observed_text": f"{check.observed_text}; of which {cells.describe()}"})


def validate(
    frame: pd.DataFrame, schema: DatasetSchema, suite: Suite, source: str = "dataset", digest: str = ""
) -> DataValidationResult:
    """Run the schema check and the suite; never raises for bad data, only reports it.

    The suite checks the prepared table (what training reads), so a generated suite's label
    expectations are about 0/1 whatever the label's values are in the file.
    """
    result, _ = validate_and_prepare(frame, schema, suite, source, digest)
    return result


def validate_and_prepare(
    frame: pd.DataFrame, schema: DatasetSchema, suite: Suite, source: str = "dataset", digest: str = ""
) -> tuple[DataValidationResult, pd.DataFrame]:
    """:func:`validate`, and the prepared table it checked."""
    started = time.perf_counter()
    scoped = scope_suite(suite, schema, [str(c) for c in frame.columns])
    # A protected attribute that is numbers but for a marker (an age with '?') is read as numbers, as
    # `mlops data init` read it when it proposed a range for it.
    numbers = (*schema.numeric_features, *schema.protected_attributes)
    read = read_missing(frame, schema.missing_values, numbers)
    marked, bad = coerce_numeric(read, text_as_missing_columns(scoped.suite, schema))
    schema_check, table = _schema_check(marked, schema, source, bad)
    checks = [schema_check, *(_with_bad_cells(c, bad) for c in run_suite(table, scoped.suite))]
    result = DataValidationResult(
        suite_name=suite.name,
        suite_version=suite.version,
        source=source,
        dataset_digest=digest,
        rows=len(frame),
        columns=len(frame.columns),
        duration_s=round(time.perf_counter() - started, 4),
        checks=tuple(checks),
        notes=scoped.notes,
    )
    return result, table


def write_reports(result: DataValidationResult, html_path: Path, json_path: Path) -> None:
    for path, text in ((html_path, render_html(result)), (json_path, render_json(result))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _setup_failure(stage: str, exc: Exception, source: str, suite: Suite | None) -> DataValidationResult:
    """A result for data or a suite that could not even be loaded, so the reports still explain why."""
    return DataValidationResult(
        suite_name=suite.name if suite else "",
        suite_version=suite.version if suite else "",
        source=source,
        rows=0,
        columns=0,
        duration_s=0.0,
        checks=(
            CheckResult(
                expectation=stage,
                column=None,
                success=False,
                observed=str(exc),
                observed_text=str(exc),
                kwargs={},
            ),
        ),
    )


def _log_reports(result: DataValidationResult, html_path: Path, json_path: Path) -> None:
    """Log the written reports, with summary metrics, to the active MLflow run."""
    import mlflow

    mlflow.log_text(html_path.read_text(encoding="utf-8"), "validation/report.html")
    mlflow.log_text(json_path.read_text(encoding="utf-8"), "validation/report.json")
    mlflow.log_metrics(
        {
            "rows": result.rows,
            "columns": result.columns,
            "n_expectations": len(result.checks),
            "n_failed_expectations": len(result.failed),
            "success": float(result.success),
            "validation_seconds": result.duration_s,
        }
    )


def run_validation(
    data_uri: str,
    schema: DatasetSchema,
    suite_path: str | Path | None,
    store: TrackingStore,
    dataset_out_path: Path,
    html_path: Path,
    json_path: Path,
    source_settings: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """Validate ``data_uri`` and return ``(dataset_digest, suite_version)``.

    ``source_settings``: the run's data settings by address (``data.uri``, ``validation.schema_uri``; empty
    ones left out), logged as parameters so a triggered retraining can train on the same source.

    Both reports are written and logged in every outcome; the validated, prepared table
    (declared columns only, missing markers as NaN, label 0/1) is written as Parquet only on
    success, so nothing downstream can read rejected data.

    The data is validated before the tracking store is first asked anything: the first task of a local
    run that tracks starts beside the run's tracking server, which then comes up while the suite runs
    instead of keeping the task waiting. What was learnt is logged afterwards, in the task's MLflow run
    (which ends FAILED when validation failed or could not run).

    Raises:
        SuiteError: the suite file is missing or malformed.
        DatasetError: the data cannot be read or parsed.
        ValidationFailed: the data broke the schema or the suite.
    """
    import mlflow

    params = {"data_uri": data_uri, **{k: v for k, v in (source_settings or {}).items() if v}}
    suite: Suite | None = None
    digest = ""
    table: pd.DataFrame | None = None
    result: DataValidationResult | None = None
    failure: Exception | None = None
    try:
        suite = load_suite(suite_path or DEFAULT_SUITE_PATH)
        params.update({"suite_name": suite.name, "suite_version": suite.version})
        frame, digest = load_table(data_uri)
        params["dataset_digest"] = digest
        result, table = validate_and_prepare(frame, schema, suite, source=data_uri, digest=digest)
    except (SuiteError, DatasetError) as exc:
        stage = "load_suite" if isinstance(exc, SuiteError) else "load_table"
        result, failure = _setup_failure(stage, exc, data_uri, suite), exc
    except Exception as exc:  # noqa: BLE001 - re-raised below, inside the task's MLflow run
        failure = exc
    if result is not None:
        write_reports(result, html_path, json_path)
    with store.task_run("data_validation"):
        mlflow.log_params(params)
        if result is not None:
            _log_reports(result, html_path, json_path)
        if failure is not None:
            raise failure
        assert result is not None and suite is not None and table is not None
        for note in result.notes:
            print(f"note: {note}", flush=True)
        from mlops.governance.audit import record_in_run

        record_in_run(
            "data.validated",
            data_uri,
            {
                "success": result.success,
                "dataset_digest": digest,
                "suite": suite.name,
                "suite_version": suite.version,
            },
            pipeline_run_id=store.pipeline_run_id,
        )
        if not result.success:
            raise ValidationFailed(result)
        dataset_out_path.parent.mkdir(parents=True, exist_ok=True)
        table.to_parquet(dataset_out_path, index=False)
    return digest, suite.version
