"""The browser check catches what it claims to: an uncaught exception, console.error, a resource that
failed to load and an image that does not decode each fail a page; a clean page has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import open_page

pytestmark = pytest.mark.browser
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def test_a_page_with_deliberate_errors_reports_each(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><body><h1>broken</h1>"
        '<img alt="missing" src="missing.png"><img alt="bad" src="data:image/png;base64,AAAA">'
        '<script>console.log("just-a-log"); console.error("boom")</script>'
        "<script>undefinedFunction()</script></body></html>"
    )
    found = open_page(page, tmp_path / "broken.png")
    errors = "\n".join(found.errors)
    assert "ReferenceError: undefinedFunction is not defined" in errors
    assert "console.error: boom" in errors
    assert "missing.png" in errors  # the failed load, from the browser's own log
    assert "just-a-log" not in errors  # console.log is no error
    assert found.dom["img"] == 2 and found.dom["broken_img"] == 2 and found.dom["script"] == 2


def test_a_clean_page_has_no_errors_and_its_figures_are_counted(tmp_path: Path) -> None:
    page = tmp_path / "clean.html"
    page.write_text(
        f'<!doctype html><html><head><title>clean</title></head><body><img alt="dot" src="data:image/png;base64,{PNG}">'
        '<svg width="10" height="10"></svg><canvas></canvas></body></html>'
    )
    found = open_page(page, tmp_path / "clean.png")
    assert found.errors == []
    assert (found.dom["img"], found.dom["svg"], found.dom["canvas"], found.dom["broken_img"]) == (1, 1, 1, 0)
    assert found.figures == 3 and found.dom["title"] == "clean"
    assert found.screenshot.read_bytes().startswith(b"\x89PNG")


def test_without_chromium_the_test_fails_and_names_the_install_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support import browser

    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    with pytest.raises(pytest.fail.Exception, match="run `bash infra/testing/install_chromium.sh`"):
        open_page(tmp_path / "any.html", tmp_path / "any.png")
