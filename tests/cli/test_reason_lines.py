"""A gate reason is shown whole: wrapped, never cut before its figures and interval."""

from cli.console.figures import REASON_WIDTH, split_reasons
from cli.summaries.common import decision_lines


def test_a_long_first_reason_keeps_its_interval() -> None:
    first = (
        "model_validation gate: fairness: sex demographic parity difference 0.2154 exceeds the allowed 0.1000 "
        "over groups female (n=812), male (n=1661) (95% interval 0.1790-0.2518)"
    )
    reason = f"{first}; metrics gate: test_auc 0.6500 is below the floor 0.7000"
    lines = decision_lines("reject", reason)
    shown = " ".join(" ".join(line.split()) for line in lines[1:])
    assert "(95% interval 0.1790-0.2518)" in shown  # the old display cut it at 150 characters with …
    assert "…" not in shown
    assert lines[1].startswith("    - model_validation gate: fairness")
    assert sum(line.startswith("    - ") for line in lines) == len(split_reasons(reason)) == 2
    assert all(len(line) <= REASON_WIDTH + 6 for line in lines)
