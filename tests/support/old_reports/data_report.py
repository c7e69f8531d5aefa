"""The string-built page before it moved to a Jinja2 template, kept only to compare with. Render a :class:`DataValidationResult` as a self-contained HTML page and as JSON.

The HTML is what an operator opens from the KFP UI or MLflow when a run stops at
validation, so failures come first and every row shows the rule's arguments
next to what was observed. No scripts or external assets: it must render from
an artifact store as a single file.
"""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.data_validation.check_results import CheckResult, DataValidationResult

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
.badge { display: inline-block; padding: .2rem .7rem; border-radius: .3rem; color: #fff; font-weight: 600; }
.badge.pass { background: #2e7d32; } .badge.fail { background: #c62828; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr.pass td.status { background: #e8f5e9; color: #2e7d32; }
tr.fail td { background: #ffebee; } tr.fail td.status { color: #c62828; font-weight: 600; }
code { font-size: .85rem; word-break: break-word; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }
dl.summary dt { font-weight: 600; }
"""


def _kwargs_text(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in kwargs.items() if k != "column")


def _rows(numbered: list[tuple[int, CheckResult]]) -> str:
    rows = []
    for number, check in numbered:
        status = "pass" if check.success else "fail"
        rows.append(
            f'<tr class="{status}"><td>{number}</td><td class="status">{status.upper()}</td>'
            f"<td><code>{escape(check.expectation)}</code></td><td>{escape(check.column or '(table)')}</td>"
            f"<td><code>{escape(_kwargs_text(check.kwargs))}</code></td>"
            f"<td>{escape(check.observed_text)}</td><td>{escape(check.notes or '')}</td></tr>"
        )
    return "\n".join(rows)


def _table(numbered: list[tuple[int, CheckResult]]) -> str:
    header = (
        "<tr><th>#</th><th>Status</th><th>Expectation</th><th>Column</th><th>Arguments</th>"
        "<th>Observed</th><th>Notes</th></tr>"
    )
    return f"<table>\n{header}\n{_rows(numbered)}\n</table>"


def render_html(result: DataValidationResult) -> str:
    failed = result.failed
    numbered = list(enumerate(result.checks, 1))
    verdict = "PASSED" if result.success else "FAILED"
    suite = f"{result.suite_name} {result.suite_version}" if result.suite_name else "(not loaded)"
    summary = {
        "Suite": suite,
        "Data": result.source,
        "SHA-256": result.dataset_digest or "(not read)",
        "Rows × columns": f"{result.rows} × {result.columns}",
        "Checks": f"{len(result.checks) - len(failed)} passed, {len(failed)} failed of {len(result.checks)}",
        "Validation time": f"{result.duration_s:.3f} s",
    }
    summary_html = "\n".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in summary.items())
    notes = (
        "<h2>Notes</h2>\n<ul>\n" + "\n".join(f"<li>{escape(n)}</li>" for n in result.notes) + "\n</ul>"
        if result.notes
        else ""
    )
    failures = (
        f"<h2>Failed checks ({len(failed)})</h2>\n{_table([(n, c) for n, c in numbered if not c.success])}"
        if failed
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Data validation {verdict}: {escape(result.source)}</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>Data validation <span class="badge {"pass" if result.success else "fail"}">{verdict}</span></h1>
<dl class="summary">
{summary_html}
</dl>
{notes}
{failures}
<h2>All checks</h2>
{_table(numbered)}
</body>
</html>
"""


def render_json(result: DataValidationResult) -> str:
    """The full result plus ``success`` and counts; strict JSON (no NaN) so any parser accepts it."""
    document = {
        "success": result.success,
        "n_checks": len(result.checks),
        "n_failed": len(result.failed),
        **result.model_dump(mode="json"),
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
