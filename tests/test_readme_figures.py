"""Every performance figure the READMEs quote is one ``benchmarks/RESULTS.md`` records.

A figure is a number followed by a unit of speed or cost (req/s, calls/s, rows/s, µs, ms, ×); it is found
when RESULTS.md holds a number that, rounded to as many decimals as the README writes, is the same (the
README may write 43 µs for RESULTS' 43.2, 5.9× for its 5.91×). A figure measured by hand and recorded
nowhere fails here: record it in RESULTS.md (with its command and load) or leave it out of the README.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
READMES = ("README.md", "serving/README.md")
NUMBER = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(rf"({NUMBER})\s*(req/s|calls/s|rows/s|µs|ms\b|×)")


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def recorded(figure: str, results: str) -> bool:
    decimals = len(figure.split(".", 1)[1]) if "." in figure else 0
    wanted = _value(figure)
    return any(round(_value(number), decimals) == wanted for number in re.findall(NUMBER, results))


def unrecorded_figures(readme: str, results: str) -> list[str]:
    """``line N: <figure with its unit>`` for each figure of ``readme`` that ``results`` does not hold."""
    return [
        f"line {readme[: match.start()].count(chr(10)) + 1}: {match.group(0)}"
        for match in FIGURE.finditer(readme)
        if not recorded(match.group(1), results)
    ]


@pytest.mark.parametrize("readme", READMES)
def test_each_quoted_figure_is_recorded_in_results(readme: str) -> None:
    missing = unrecorded_figures((ROOT / readme).read_text(), RESULTS.read_text())
    assert missing == [], f"{readme} quotes figures benchmarks/RESULTS.md does not record: {missing}"


def test_a_figure_is_matched_at_the_precision_it_is_written() -> None:
    results = "| ours | 8,467 req/s | 5.91× | 43.2 µs/call |"
    assert recorded("8,467", results) and recorded("5.9", results) and recorded("43", results)
    assert not recorded("8,468", results) and not recorded("5.8", results) and not recorded("43.3", results)


def test_an_unrecorded_figure_is_named_with_its_line() -> None:
    readme = "fast:\n2,252 req/s and 445 µs\nthen 9× the peer"
    assert unrecorded_figures(readme, "2,252 and 445") == ["line 3: 9×"]
