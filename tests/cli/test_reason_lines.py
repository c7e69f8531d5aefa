"""A gate reason is shown whole: wrapped, never cut before its figures and interval."""

from cli.console.figures import REASON_WIDTH, split_reasons
from cli.summaries.run_outline import decision_lines


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


UNDECIDED = [
    "model_validation: race demographic_parity_difference 0.2200 is beyond the max 0.1000, but its 95% "
    "interval 0.0500..0.3900 reaches across it: not conclusive on these rows; test on more rows to decide",
    "model_validation: sex equalized_odds_difference 0.0400 is within the max 0.1000, but its 95% interval "
    "0.0000..0.1300 reaches across it: not conclusive on these rows; test on more rows to decide",
]


def test_a_promote_with_undecided_checks_lists_each_on_its_own_line() -> None:
    lines = decision_lines(
        "promote", "promoted with 2 check(s) not conclusive …", "not_conclusive", UNDECIDED
    )
    assert lines[0] == "  decision          promote, not conclusive"
    assert "all gates passed" not in "\n".join(lines)
    assert lines[1].startswith("  not conclusive    2 check(s) the test rows could not decide, passed as not")
    shown = " ".join(" ".join(line.split()) for line in lines[2:])
    assert "race demographic_parity_difference 0.2200 is beyond the max 0.1000" in shown
    assert "sex equalized_odds_difference 0.0400 is within the max 0.1000" in shown
    assert sum(line.startswith("    - ") for line in lines) == 2


def test_a_held_verdict_gives_its_reasons_then_the_undecided_checks() -> None:
    lines = decision_lines(
        "reject", "model_validation gate: not conclusive: x; y", "not_conclusive", UNDECIDED[:1]
    )
    assert lines[0] == "  decision          reject, not conclusive"
    assert any("held back" in line for line in lines)
    assert lines[-1].strip().endswith("test on more rows to decide")


def test_a_plain_pass_stays_on_one_line_with_its_status() -> None:
    assert decision_lines("promote", "all gates passed: metrics, model_validation", "pass") == [
        "  decision          promote, pass (all gates passed: metrics, model_validation)"
    ]
