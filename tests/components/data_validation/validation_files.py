"""The files the data_validation tests write and read back: a suite file from a document, and an HTML
report parsed and checked to be whole (test_validation_suite.py and test_run_validation.py)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path


class _Tags(HTMLParser):
    """Collects tags and fails on unbalanced table markup, so 'valid HTML' means something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.open_tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.open_tables += tag == "table"

    def handle_endtag(self, tag: str) -> None:
        self.open_tables -= tag == "table"


def _parse_html(path: Path) -> tuple[str, _Tags]:
    text = path.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    parser.close()
    assert text.startswith("<!DOCTYPE html>") and parser.open_tables == 0
    assert {"html", "head", "body", "table", "tr", "td"} <= set(parser.tags)
    return text, parser


def _suite_file(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path
