"""Training/serving skew: do the feature values a server looked up online equal what the offline store says
they were at the same moment?

A served row (its entity id, the time it was scored, the feature values the model saw) is joined
point-in-time with the same feature service offline (``historical_join``: the newest value dated at or
before that time, within the view's TTL) — the value a training set built for that moment would hold. A
feature is skewed where the two differ: numbers beyond a relative tolerance, text (and booleans) when not
equal, a value on one side and none on the other. Causes it catches: a materialization that lags behind
the offline data (the online store serves yesterday's value), a transformation computed differently
online, a type that changed on the way.

The verdict per feature is ``pass`` (differing share at or below ``max_share``), ``fail`` (above), or
``not conclusive`` when fewer than ``min_rows`` rows could be compared (the offline join found no value
for the rest: outside the TTL, or an entity the offline data lacks); never a pass for what was not
compared.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mlops.features.config import FeastSettings, SkewPolicy
from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.repository import to_utc
from mlops.features.training_set import FEAST_TIMESTAMP, historical_join

if TYPE_CHECKING:
    import pandas as pd

Verdict = Literal["pass", "fail", "not conclusive"]
SHOWN = 3


@dataclass(frozen=True)
class FeatureSkew:
    feature: str
    compared: int
    """Served rows whose offline join found a value (or found none where none was served)."""
    differing: int
    verdict: Verdict
    examples: list[dict[str, Any]] = field(default_factory=list)
    """Up to three differing rows: entity id, time, online value, offline value."""

    @property
    def share(self) -> float:
        return self.differing / self.compared if self.compared else math.nan


@dataclass(frozen=True)
class SkewReport:
    service: str
    rows_served: int
    rows_compared: int
    """Served rows in the sample (each joined offline; a row may still lack an offline value for a view)."""
    features: list[FeatureSkew]

    @property
    def verdict(self) -> Verdict:
        verdicts = {skew.verdict for skew in self.features}
        if "fail" in verdicts:
            return "fail"
        return "not conclusive" if "not conclusive" in verdicts or not verdicts else "pass"

    def lines(self) -> list[str]:
        head = (
            f"skew of feature service {self.service!r}: {self.verdict} "
            f"({self.rows_compared} of {self.rows_served} served rows joined offline)"
        )
        body = []
        for skew in self.features:
            share = "-" if skew.compared == 0 else f"{skew.share:.1%}"
            line = (
                f"  {skew.verdict:<15} {skew.feature}: {skew.differing} of {skew.compared} differ ({share})"
            )
            if skew.examples:
                first = skew.examples[0]
                line += f"; e.g. {first['entity']} at {first['time']}: online {first['online']!r}, offline {first['offline']!r}"
            body.append(line)
        return [head, *body]


def _is_bool(value: Any) -> bool:
    import numpy as np

    return isinstance(value, bool | np.bool_)  # numpy's, from the offline Parquet


def _same(online: Any, offline: Any, tolerance: float) -> bool:
    import pandas as pd

    missing_online, missing_offline = bool(pd.isna(online)), bool(pd.isna(offline))
    if missing_online or missing_offline:
        return missing_online and missing_offline
    if _is_bool(online) or _is_bool(offline):
        return _is_bool(online) and _is_bool(offline) and bool(online) == bool(offline)
    if isinstance(online, numbers.Real) and isinstance(offline, numbers.Real):
        return math.isclose(float(online), float(offline), rel_tol=tolerance, abs_tol=0.0)
    return str(online) == str(offline)


def judge(compared: int, differing: int, policy: SkewPolicy) -> Verdict:
    """``not conclusive`` under ``min_rows`` compared; else ``fail`` above ``max_share`` differing, ``pass``."""
    if compared < policy.min_rows:
        return "not conclusive"
    return "fail" if differing / compared > policy.max_share else "pass"


def measure_skew(
    env: FeastEnvironment,
    repo: Path,
    settings: FeastSettings,
    *,
    service: str,
    served: pd.DataFrame,
    entity: str,
    timestamp: str,
    features: list[str] | None = None,
    policy: SkewPolicy | None = None,
) -> SkewReport:
    """Compare ``served`` (one row per scored entity: ``entity``, ``timestamp``, the looked-up ``features``;
    by default every column the service serves) with the offline store's values for the same entities and
    times."""
    policy = policy or SkewPolicy()
    absent = [column for column in (entity, timestamp, *(features or ())) if column not in served.columns]
    if absent:
        raise FeastError(
            f"the served rows have no column(s) {absent} (they have {list(served.columns)}); a skew check needs "
            "the entity id, the time of each request and the features the server looked up"
        )
    served = served[served[entity].notna()]  # rows scored from values sent inline: nothing was looked up
    if served.empty:
        return SkewReport(
            service, 0, 0, [FeatureSkew(name, 0, 0, "not conclusive") for name in features or ()]
        )
    sample = served.sample(n=min(policy.sample_rows, len(served)), random_state=policy.seed).reset_index(
        drop=True
    )
    keys = sample[[entity]].copy()
    keys[FEAST_TIMESTAMP] = to_utc(sample[timestamp])
    joined, description = historical_join(env, repo, settings, service=service, frame=keys)
    known = {name for view in description["feature_views"].values() for name in view["features"]}
    if features is None:
        features = [name for name in served.columns if name in known]
        if not features:
            raise FeastError(
                f"the served rows have none of feature service {service!r}'s features ({sorted(known)})"
            )
    unknown = [name for name in features if name not in known]
    if unknown:
        raise FeastError(
            f"feature service {service!r} does not serve {unknown}; the served rows' features must be the service's"
        )
    views = {name: view for view in description["feature_views"].values() for name in view["features"]}
    results = []
    for name in features:
        view_columns = [f for f in views[name]["features"] if f in joined.columns]
        found = ~joined[view_columns].isna().all(axis=1)  # the offline join found this view's row
        differing = []
        for index in found[found].index:
            online, offline = sample.at[index, name], joined.at[index, name]
            if not _same(online, offline, policy.relative_tolerance):
                differing.append(
                    {
                        "entity": sample.at[index, entity],
                        "time": str(keys.at[index, FEAST_TIMESTAMP]),
                        "online": _plain(online),
                        "offline": _plain(offline),
                    }
                )
        compared = int(found.sum())
        verdict = judge(compared, len(differing), policy)
        results.append(FeatureSkew(name, compared, len(differing), verdict, differing[:SHOWN]))
    return SkewReport(service, len(served), len(sample), results)


def _plain(value: Any) -> Any:
    """A JSON-able value (numpy scalars as Python's)."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value
