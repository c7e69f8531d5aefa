"""What the model-validation page must keep showing (a Jinja2 template, templates/gate_report.html.j2):
the decision, every section and table, each figure, and the user's names escaped, never markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.model_validation.gate_report import render_html
from tests.support import report_inputs
from tests.support.browser import headings, open_report
from tests.support.page_shape import visible_text

XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(report_inputs.gate_result(XSS), "credit", "7")


def test_the_report_shows_every_section_table_and_figure(page: str) -> None:
    assert headings(page, "h2") == [
        "Violations", "Not conclusive", "Fairness", "Scores", "Explainability", "Behavioural tests", "Configuration",
    ]  # fmt: skip
    assert headings(page, "h3") == [XSS, "Stability", "Per-example explanations"]
    assert [h.split(":")[0] for h in headings(page, "h4")] == ["row 408", "row 420"]
    columns = " | ".join(headings(page, "th"))
    for header in (
        "group | rows | positives | negatives | base rate | selection rate | favourable rate | TPR | FPR | precision"
        " | AUC | status | notes",
        "metric | value | interval | threshold | status",
        "rank | feature | importance | ± std | AUC drop",
        "Spearman | Kendall | top-2 overlap | rows per half | min Spearman | status",
        "feature | value | contribution",
    ):
        assert header in columns
    # rates by group, calibration, score distribution, feature importance, two explained rows
    assert page.count("<img ") == 6 and page.count("<table>") == 6


def test_the_report_shows_the_decision_and_the_numbers(page: str) -> None:
    assert '<span class="badge promote">PROMOTE</span> <span class="badge status-not_conclusive">' in page
    assert "<h2>Not conclusive</h2><p>3 check(s) not decided" in page
    text = visible_text(page)
    for shown in (
        "500 test rows; label y .",
        "Favourable outcome: prediction 1 (the favourable rate and the demographic-parity ratio count it).",
        "Intervals: 95% score intervals",
        "tiny 6 2 4 0.3333",
        "too small for selection/favourable rate, TPR, FPR: not decided on",
        "demographic_parity_difference 0.0762 0.0000 .. 0.1627 max 0.1 not conclusive",
        "No behavioural tests declared.",
        '"pass_not_conclusive": "estimate_within_limit"',
    ):
        assert shown in text, shown
    row = page.split("<td>demographic_parity_difference</td>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="not_conclusive">not conclusive</span>' in row


def test_the_users_names_are_escaped(page: str) -> None:
    assert XSS not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'alt="&lt;script&gt;alert(1)&lt;/script&gt; rates by group"' in page


@pytest.mark.browser
def test_the_report_opens_in_chromium_with_its_charts_and_no_errors(
    page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = open_report(page, tmp_path, "model_validation", capsys, images=6, tables=6)
    assert XSS in found.dom["text"] and found.dom["title"] == "Model validation credit v7"
