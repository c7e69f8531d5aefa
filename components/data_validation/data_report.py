"""Render a :class:`DataValidationResult` as a self-contained HTML page and as JSON.

The HTML is what an operator opens from the KFP UI or MLflow when a run stops at
validation, so failures come first and every row shows the rule's arguments
next to what was observed. No scripts or external assets: it must render from
an artifact store as a single file. The page is templates/data_report.html.j2, autoescaped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

if TYPE_CHECKING:
    from components.data_validation.check_results import DataValidationResult


def _kwargs_text(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in kwargs.items() if k != "column")


_PAGE = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,  # column names, values and notes are the user's data
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)
_PAGE.filters["arguments"] = _kwargs_text


def render_html(result: DataValidationResult) -> str:
    """The page (templates/data_report.html.j2): verdict, summary, notes, failed checks, then all checks."""
    failed = result.failed
    numbered = list(enumerate(result.checks, 1))
    suite = f"{result.suite_name} {result.suite_version}" if result.suite_name else "(not loaded)"
    summary = {
        "Suite": suite,
        "Data": result.source,
        "SHA-256": result.dataset_digest or "(not read)",
        "Rows × columns": f"{result.rows} × {result.columns}",
        "Checks": f"{len(result.checks) - len(failed)} passed, {len(failed)} failed of {len(result.checks)}",
        "Validation time": f"{result.duration_s:.3f} s",
    }
    return _PAGE.get_template("data_report.html.j2").render(
        result=result,
        verdict="PASSED" if result.success else "FAILED",
        summary=summary,
        numbered=numbered,
        failed=[(n, c) for n, c in numbered if not c.success],
    )


def render_json(result: DataValidationResult) -> str:
    """The full result plus ``success`` and counts; strict JSON (no NaN) so any parser accepts it."""
    document = {
        "success": result.success,
        "n_checks": len(result.checks),
        "n_failed": len(result.failed),
        **result.model_dump(mode="json"),
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
