"""A page as a browser shows it: its elements, their attributes and their visible text, whitespace
collapsed and entities decoded, so two renderings compare equal exactly when a reader sees the same page
(``&#x27;`` and ``&#39;`` are the same apostrophe; line breaks between tags are no content)."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _Shape(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[str, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.events.append(("<", tag, *(f"{k}={v}" for k, v in sorted(attrs, key=lambda a: a[0]))))

    def handle_endtag(self, tag: str) -> None:
        self.events.append((">", tag))

    def handle_data(self, data: str) -> None:
        text = re.sub(r"\s+", " ", data).strip()
        if text:
            self.events.append(("text", text))

    def handle_decl(self, decl: str) -> None:
        self.events.append(("decl", decl.lower()))


def page_shape(html: str) -> list[tuple[str, ...]]:
    parser = _Shape()
    parser.feed(html)
    parser.close()
    return parser.events


def visible_text(html: str) -> str:
    """The page's text as one line: what a reader sees, without the markup."""
    return " ".join(e[1] for e in page_shape(html) if e[0] == "text")
