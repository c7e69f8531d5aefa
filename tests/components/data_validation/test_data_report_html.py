"""What the data-validation page must keep showing (a Jinja2 template, templates/data_report.html.j2):
the verdict, the summary, notes, failed checks first and then every check, the user's values escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.data_validation.data_report import render_html
from tests.support import report_inputs
from tests.support.browser import headings, open_report
from tests.support.page_shape import visible_text

XSS = "<script>alert(1)</script>"
COLUMNS = ["#", "Status", "Expectation", "Column", "Arguments", "Observed", "Notes"]


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(report_inputs.data_result(XSS))


def test_the_report_shows_the_verdict_summary_and_failures_first(page: str) -> None:
    assert headings(page, "h2") == ["Notes", "Failed checks (2)", "All checks"]
    assert headings(page, "th") == COLUMNS * 2
    assert '<span class="badge fail">FAILED</span>' in page
    text = visible_text(page)
    for shown in (
        "Data validation FAILED: s3://data/bank.csv",
        "Suite bank 3 Data s3://data/bank.csv SHA-256 " + "ab" * 32,
        "Rows × columns 800 × 17 Checks 2 passed, 2 failed of 4 Validation time 1.234 s",
        "column(s) ['region'] are in the data but not in the schema file: dropped",
        f'2 FAIL expect_column_values_to_be_in_set {XSS} value_set=["admin.", "retired"], mostly=1.0 '
        "2 rows outside the set: 'pilot', '<i>x</i>' categories seen in the reference data",
        "3 FAIL expect_column_values_to_be_between age min_value=18, max_value=100 min -5 < 18",
        "1 PASS dataset_schema (table) 17 columns as declared",
    ):
        assert shown in text, shown
    assert text.count("FAIL expect_column_values_to_be_between") == 2  # in the failures, and among all checks


def test_a_passing_run_has_no_failures_section() -> None:
    result = report_inputs.data_result()
    passed = render_html(result.model_copy(update={"checks": result.checks[:1], "notes": ()}))
    assert headings(passed, "h2") == ["All checks"] and '<span class="badge pass">PASSED</span>' in passed


def test_the_users_values_are_escaped(page: str) -> None:
    assert XSS not in page and "<i>x</i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.browser
def test_the_report_opens_in_chromium_without_errors(
    page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = open_report(page, tmp_path, "data_validation", capsys, images=0, tables=2)
    assert found.figures == 0  # the data report has no figures: its tables are the content
    assert XSS in found.dom["text"] and "FAILED" in found.dom["title"]
