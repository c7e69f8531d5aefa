"""What the model card page must keep showing (it is a Jinja2 template, templates/model_card.html.j2):
every section, every table's columns, the figures, and the user's names escaped, never markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlops.governance.card_html import render
from tests.support import report_inputs
from tests.support.browser import headings, open_report
from tests.support.page_shape import visible_text

XSS = "<script>alert(1)</script>"
SECTIONS = [
    "Intended use",
    "Training data",
    "Evaluation (held-out test split)",
    "Fairness",
    "Explanations",
    "Gate decisions",
    "Limits in force",
    "Lineage",
    "Deployment history",
    "Approval",
]


@pytest.fixture(scope="module")
def page() -> str:
    return render(*report_inputs.card_inputs(XSS))


def test_the_card_shows_every_section_and_table(page: str) -> None:
    assert headings(page, "h1") == ["Model card: credit version 7 (champion)"]
    assert headings(page, "h2") == SECTIONS
    assert headings(page, "h3") == [
        "Uses", "Users", "Out of scope", "Limitations", "Ethical considerations", "Human oversight",
        "Per slice", "Scores",
    ]  # fmt: skip
    columns = headings(page, "th")
    for header in (
        ["numeric feature", "missing", "mean", "std"],
        ["slice", "rows", "roc_auc [interval]", "accuracy [interval]", "note"],
        ["attribute", "disparity", "value", "interval", "limit", "status"],
        ["attribute", "group", "rows", "selection rate", "TPR", "FPR", "note"],
        ["rank", "feature", "importance", "std"],
        ["setting", "value", "default", "source", "set by"],
        ["decision", "by", "key id", "at", "why", "audit record"],
    ):
        assert " | ".join(header) in " | ".join(columns)
    assert page.count("<table>") == 12 and page.count('alt="calibration"') == 1


def test_the_card_shows_the_facts_it_was_given(page: str) -> None:
    text = visible_text(page)
    for shown in (
        "Ranks loan applications for manual review.",
        "card.intended_users is empty",
        "Owners: risk team; contact: ; licence: proprietary",
        "dataset s3://data/credit.csv",
        "validation passed at t0 (audit record 3)",
        "roc_auc 0.8125 500",
        f"{XSS} = a 240 0.8000 [0.7400, 0.8600] n/a [n/a, n/a]",
        "Not conclusive on the test rows (neither pass nor fail):",
        "too small: decided nothing",
        "3 limit(s) changed from the platform default: model_validation.explainability.permutation_repeats = 1 (default 3)",
        "champion 7 t3 now",
        "approved alice",
        "read <b>it</b>",  # the approver's words, as text
    ):
        assert shown in text, shown
    assert '<span class="not_conclusive">not conclusive</span>' in page


def test_the_users_names_are_escaped(page: str) -> None:
    assert XSS not in page and "<b>it</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'alt="&lt;script&gt;alert(1)&lt;/script&gt; rates by group"' in page


def test_without_limits_slices_or_explanations_the_card_says_so() -> None:
    card, facts = report_inputs.card_inputs()
    text = visible_text(render(card, {**facts, "limits": [], "explanations": {}, "slices": {}, "scores": {}}))
    assert "No record of the limits the gates used." in text
    assert "no slices declared (schema file slices: )" in text
    assert "no explanation report recorded" in text and "Scores" not in text


@pytest.mark.browser
def test_the_card_opens_in_chromium_with_its_charts_and_no_errors(
    page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = open_report(page, tmp_path, "model_card", capsys, images=3, tables=12)
    assert (
        XSS in found.dom["text"]
    )  # the column's name shown as text, not run; figures: rates by group, calibration, scores
