"""FeatureBounds.admit's plain-Python pass on small inputs decides exactly as the array checks do.

The array checks (:meth:`FeatureBounds._admit_array`, also what every input over ``SMALL_INPUT`` values
takes) are the oracle: on random small matrices built from the values at the checks' edges, ``admit``
must return the same matrix or refuse with the same message, and the Python pass must call a matrix clean
only when the array checks leave it unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlops.data.features import FeatureSpec
from serving.errors import InvalidInput
from serving.tensors import SMALL_INPUT, FeatureBounds
from tests.serving.test_tensors_edges import BOUNDS, NUMERIC_ONLY, SPEC

EDGES = [0.0, -0.0, 1.0, 2.0, 3.0, 7.0, 8.0, -1.0, 2.5, 1e-7, math.nan, math.inf, -math.inf, 1e300, 3.4e38]
"""Codes at and beyond each vocabulary's ends, fractions, NaN (missing), infinities, an FP32 overflow."""


def outcome(bounds: FeatureBounds, values: np.ndarray, array_checks: bool) -> tuple[str, object]:
    x = values.astype(np.float32)
    try:
        if array_checks:
            admitted = bounds._admit_array(x, values, "input 'features'")
        else:
            admitted = bounds.admit(values, "input 'features'")
    except InvalidInput as exc:
        return "refused", exc.message
    return "admitted", admitted.tobytes()


@pytest.mark.parametrize(
    "bounds", [BOUNDS, FeatureBounds(NUMERIC_ONLY)], ids=["categoricals", "numeric only"]
)
def test_admit_on_small_inputs_answers_as_the_array_checks(bounds: FeatureBounds) -> None:
    rng = np.random.default_rng(3)
    width = bounds.width
    decided = {"admitted": 0, "refused": 0}
    for _ in range(3000):
        rows = int(rng.integers(0, 5))
        clean = rng.random() < 0.5  # half the draws valid throughout, so the Python pass answers them itself
        values = rng.choice([0.0, 1.0, 2.0, 3.0] if clean else EDGES, size=(rows, width))
        got, want = outcome(bounds, values, False), outcome(bounds, values, True)
        assert got == want, values
        decided[got[0]] += 1
    assert decided["admitted"] > 1000 and decided["refused"] > 500, decided


def test_the_python_pass_calls_clean_only_what_the_array_checks_leave_unchanged() -> None:
    for row in ([40.0, 1.0, 3.0, 7.0], [40.0, 1.0, 0.0, 0.0], [-1e30, 2.0, 1.0, 1.0]):
        x = np.array([row], dtype=np.float32)
        assert BOUNDS._clean(x)
        assert BOUNDS._admit_array(x, x, "w").tobytes() == x.tobytes()
    for row in (
        [40.0, 1.0, 4.0, 1.0],  # region has 3 codes
        [40.0, 1.0, 1.0, 8.0],  # plan has 7
        [40.0, 1.0, -1.0, 1.0],
        [40.0, 1.0, 1.5, 1.0],
        [40.0, 1.0, math.nan, 1.0],  # a missing code is changed to 0
        [math.inf, 1.0, 1.0, 1.0],
        [40.0, -math.inf, 1.0, 1.0],
    ):
        assert not BOUNDS._clean(np.array([row], dtype=np.float32)), row


def test_inputs_over_the_small_size_take_the_array_checks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(FeatureBounds, "_clean", lambda self, x: calls.append(x.size) or True)
    rows = SMALL_INPUT // SPEC.n_features
    BOUNDS.admit(np.ones((rows, SPEC.n_features)), "w")
    BOUNDS.admit(np.ones((rows + 1, SPEC.n_features)), "w")
    assert calls == [rows * SPEC.n_features]


def test_a_spec_without_categoricals_still_refuses_an_infinity_on_the_small_path() -> None:
    bounds = FeatureBounds(FeatureSpec(numeric=("a",), medians=(0.0,), means=(0.0,), stds=(1.0,)))
    with pytest.raises(InvalidInput, match="not a finite FP32 number"):
        bounds.admit(np.array([[math.inf]]), "input 'features'")
    assert bounds.admit(np.array([[math.nan]]), "w").shape == (1, 1)
