"""Behavioural tests: does the model react to inputs the way a domain expert says it must?

Aggregate metrics can hide a model that learned something absurd (default risk
that falls as delinquencies rise, or that depends on the applicant's region).
Each test perturbs real test rows and compares the model's probabilities
before and after. Rows where the tested feature is missing are left out of
shift and directional tests (adding to a missing value changes nothing, which
would pass them for free); the number of rows used is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from components.model_validation.checks import Violation
from components.model_validation.config import BehaviouralSuite, DirectionalTest, InvarianceTest

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from components.model_validation.scoring import ModelUnderCheck


@dataclass(frozen=True)
class BehaviouralResult:
    name: str
    kind: Literal["invariance", "directional"]
    feature: str
    n_rows: int
    """Rows the test was measured on."""
    mean_change: float
    """Mean signed change in probability (perturbed minus original)."""
    mean_abs_change: float
    max_abs_change: float
    pass_fraction: float
    """Directional: share of rows meeting the expectation; invariance: share within ``max_abs_change``."""
    violations: tuple[Violation, ...]

    @property
    def passed(self) -> bool:
        return not self.violations

    @classmethod
    def measured(
        cls,
        test: InvarianceTest | DirectionalTest,
        delta: np.ndarray,
        pass_fraction: float,
        violations: list[Violation],
    ) -> BehaviouralResult:
        """The result of ``test`` from its per-row probability changes ``delta``."""
        import numpy as np

        return cls(
            name=test.name,
            kind="invariance" if isinstance(test, InvarianceTest) else "directional",
            feature=test.feature,
            n_rows=len(delta),
            mean_change=float(delta.mean()),
            mean_abs_change=float(np.abs(delta).mean()),
            max_abs_change=float(np.abs(delta).max()),
            pass_fraction=pass_fraction,
            violations=tuple(violations),
        )


def _require_feature(scorer: ModelUnderCheck, test: InvarianceTest | DirectionalTest, numeric: bool) -> None:
    if test.feature not in scorer.features:
        raise ValueError(
            f"behavioural test {test.name!r}: the model has no feature {test.feature!r}; "
            f"its features are {list(scorer.features)}. Fix the test or drop it for this dataset."
        )
    if numeric and test.feature not in scorer.spec.numeric:
        raise ValueError(
            f"behavioural test {test.name!r} adds a number to {test.feature!r}, which is categorical; "
            f"use an invariance test with perturbation 'permute', or one of the numeric features "
            f"{list(scorer.spec.numeric)}"
        )


def _present_rows(frame: pd.DataFrame, test: InvarianceTest | DirectionalTest) -> pd.DataFrame:
    present = frame[frame[test.feature].notna()]
    if present.empty:
        raise ValueError(f"behavioural test {test.name!r}: {test.feature!r} is missing in every test row")
    return present


def _changes(scorer: ModelUnderCheck, before: pd.DataFrame, after: pd.DataFrame) -> np.ndarray:
    import numpy as np

    return np.asarray(scorer.predict(after), np.float64) - np.asarray(scorer.predict(before), np.float64)


def run_invariance(
    scorer: ModelUnderCheck, frame: pd.DataFrame, test: InvarianceTest, seed: int
) -> BehaviouralResult:
    import numpy as np

    _require_feature(scorer, test, numeric=test.perturbation == "shift")
    if test.perturbation == "shift":
        before = _present_rows(frame, test)
        after = before.copy()
        after[test.feature] = before[test.feature].astype(float) + test.shift
    else:
        before, after = frame, frame.copy()
        after[test.feature] = np.random.default_rng(seed).permutation(frame[test.feature].to_numpy())
    delta = _changes(scorer, before, after)
    mean_abs, max_abs = float(np.abs(delta).mean()), float(np.abs(delta).max())
    worst = int(np.argmax(np.abs(delta)))
    where = f"{len(delta)} rows; largest change {delta[worst]:+.4f} at row {before.index[worst]}"
    violations = []
    if mean_abs > test.max_mean_abs_change:
        violations.append(
            Violation(
                "behavioural", test.name, "mean_abs_change", mean_abs, test.max_mean_abs_change, "max", where
            )
        )
    if max_abs > test.max_abs_change:
        violations.append(
            Violation("behavioural", test.name, "max_abs_change", max_abs, test.max_abs_change, "max", where)
        )
    return BehaviouralResult.measured(
        test, delta, float(np.mean(np.abs(delta) <= test.max_abs_change)), violations
    )


def run_directional(scorer: ModelUnderCheck, frame: pd.DataFrame, test: DirectionalTest) -> BehaviouralResult:
    import numpy as np

    _require_feature(scorer, test, numeric=True)
    before = _present_rows(frame, test)
    after = before.copy()
    after[test.feature] = before[test.feature].astype(float) + test.delta
    delta = _changes(scorer, before, after)
    against = -delta if test.expectation == "non_decreasing" else delta
    pass_fraction = float(np.mean(against <= test.tolerance))
    violations = []
    if pass_fraction < test.min_pass_fraction:
        worst = int(np.argmax(against))
        detail = (
            f"{int(np.sum(against > test.tolerance))} of {len(delta)} rows moved the wrong way by more than "
            f"{test.tolerance:g}; worst {delta[worst]:+.4f} at row {before.index[worst]}; "
            f"mean change {delta.mean():+.4f}"
        )
        violations.append(
            Violation(
                "behavioural",
                test.name,
                "pass_fraction",
                pass_fraction,
                test.min_pass_fraction,
                "min",
                detail,
            )
        )
    return BehaviouralResult.measured(test, delta, pass_fraction, violations)


def check_suite(scorer: ModelUnderCheck, suite: BehaviouralSuite) -> None:
    """Fail before any scoring when a test names a feature the model lacks or cannot perturb."""
    for inv in suite.invariance:
        _require_feature(scorer, inv, numeric=inv.perturbation == "shift")
    for direc in suite.directional:
        _require_feature(scorer, direc, numeric=True)


def run_suite(
    scorer: ModelUnderCheck, frame: pd.DataFrame, suite: BehaviouralSuite, seed: int
) -> tuple[BehaviouralResult, ...]:
    check_suite(scorer, suite)
    invariance = [run_invariance(scorer, frame, t, seed + i) for i, t in enumerate(suite.invariance)]
    directional = [run_directional(scorer, frame, t) for t in suite.directional]
    return (*invariance, *directional)
