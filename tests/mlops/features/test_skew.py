"""Training/serving skew: served feature values against the offline store's at the same entity and time.

The comparison and the verdict are pinned at their edges without Feast; the check itself runs against the
session's real feature repository (conftest: tests/support/feast_store.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from mlops.features.config import SkewPolicy
from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.repository import FeatureRepo
from mlops.features.skew import _same, judge, measure_skew
from tests.support.feast_table import BASE, EARLY, LATE, SETTINGS, STALE_ONLY, TTL, churn_features

FEATURES = ["tenure", "MonthlyCharges", "TotalCharges", "Contract"]


@pytest.mark.parametrize(
    ("online", "offline", "same"),
    [
        (1.0, 1.0000009, True),  # within the relative tolerance (1e-6)
        (1.0, 1.0000011, False),
        (12, np.int64(12), True),
        (0.0, 1e-300, False),  # no absolute tolerance: zero is not "close" to a value
        (None, np.nan, True),  # none served, none offline
        (None, 3.0, False),
        (3.0, None, False),
        (True, np.bool_(True), True),
        (True, 1, False),  # a boolean served for a number is a type that changed on the way
        ("One year", "One year", True),
        ("One year", "one year", False),
        ("None", None, False),  # the text "None" served where the store has no value
        (1.0, True, False),  # a boolean where a number was (bool is an int in Python)
        ("1e3", 1000.0, False),  # a number arriving as text is a type that changed on the way
    ],
)
def test_values_compare_by_kind(online: object, offline: object, same: bool) -> None:
    assert _same(online, offline, 1e-6) is same


@pytest.mark.parametrize(
    ("compared", "differing", "verdict"),
    [(19, 0, "not conclusive"), (20, 0, "pass"), (100, 1, "pass"), (100, 2, "fail"), (20, 20, "fail")],
)
def test_the_verdict_needs_enough_rows_and_fails_above_the_share(
    compared: int, differing: int, verdict: str
) -> None:
    assert judge(compared, differing, SkewPolicy(max_share=0.01, min_rows=20)) == verdict


def served_rows(times: dict[str, datetime]) -> pd.DataFrame:
    """What a correct online store serves for each id at its time: the newest value dated at or before it."""
    table = churn_features()
    rows = []
    for customer, moment in times.items():
        history = table[(table["customerID"] == customer) & (table["event_timestamp"] <= moment)]
        newest = history.sort_values("event_timestamp").iloc[-1]
        rows.append({"customerID": customer, "requested_at": moment, **{f: newest[f] for f in FEATURES}})
    return pd.DataFrame(rows)


def scored_times() -> dict[str, datetime]:
    """EARLY and LATE a day after their newer value; every filler an hour after its one value (all in TTL)."""
    times = {EARLY: BASE + timedelta(days=11), LATE: BASE + timedelta(days=11)}
    for number in range(20):
        times[f"{1000 + number}-FILLR"] = BASE + timedelta(days=number % 10, hours=1)
    return times


def check(
    env: FeastEnvironment, repo: FeatureRepo, served: pd.DataFrame, policy: SkewPolicy
) -> dict[str, object]:
    report = measure_skew(
        env,
        repo.path,
        SETTINGS,
        service=repo.service,
        served=served,
        entity="customerID",
        timestamp="requested_at",
        features=FEATURES,
        policy=policy,
    )
    return {"report": report, **{skew.feature: skew for skew in report.features}}


def test_values_served_as_the_offline_store_holds_them_show_no_skew(
    feast_environment: FeastEnvironment, feature_repo: FeatureRepo
) -> None:
    found = check(feast_environment, feature_repo, served_rows(scored_times()), SkewPolicy(min_rows=22))
    for name in FEATURES:
        assert (found[name].compared, found[name].differing, found[name].verdict) == (22, 0, "pass")  # type: ignore[attr-defined]
    assert found["report"].verdict == "pass"  # type: ignore[attr-defined]


def test_a_stale_online_value_is_skew_named_with_its_entity_and_both_values(
    feast_environment: FeastEnvironment, feature_repo: FeatureRepo
) -> None:
    """EARLY served its old tenure (2, from BASE) at BASE+11d, when the offline store says 12 (BASE+10d): an
    online store materialized before the newer value. STALE_ONLY, scored past its value's TTL, has no offline
    value and is left out of the comparison, not counted as agreeing."""
    served = served_rows(scored_times())
    served.loc[served["customerID"] == EARLY, "tenure"] = 2
    late = BASE + TTL + timedelta(days=2)
    stale = {
        "customerID": STALE_ONLY,
        "requested_at": late,
        "tenure": 4,
        "MonthlyCharges": 31.85,
        "TotalCharges": 102.0,
        "Contract": "Month-to-month",
    }
    served = pd.concat([served, pd.DataFrame([stale])], ignore_index=True)
    found = check(feast_environment, feature_repo, served, SkewPolicy(max_share=0.04, min_rows=22))
    tenure = found["tenure"]
    assert (tenure.compared, tenure.differing, tenure.verdict) == (22, 1, "fail")  # type: ignore[attr-defined]  # 1/22 > 4 %
    assert tenure.examples == [  # type: ignore[attr-defined]
        {"entity": EARLY, "time": str(pd.Timestamp(BASE + timedelta(days=11))), "online": 2, "offline": 12}
    ]
    assert found["Contract"].verdict == "pass"  # type: ignore[attr-defined]
    report = found["report"]
    assert report.verdict == "fail" and report.rows_served == 23  # type: ignore[attr-defined]
    assert f"e.g. {EARLY!s}" in "\n".join(report.lines())  # type: ignore[attr-defined]


def test_served_rows_without_the_columns_the_check_needs_are_refused(
    feast_environment: FeastEnvironment, feature_repo: FeatureRepo
) -> None:
    served = served_rows(scored_times()).drop(columns=["requested_at"])
    with pytest.raises(FeastError, match=r"no column\(s\) \['requested_at'\]"):
        check(feast_environment, feature_repo, served, SkewPolicy())
