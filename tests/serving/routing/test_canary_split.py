"""The canary split at a realistic 10 %: a flipped split (90 % to the challenger) is caught, through the
split function and through the real app, and the key-hash split is pinned at its edge."""

from __future__ import annotations

import random
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from serving.routing.rollout_router import REQUEST_KEY_HEADER, _to_challenger
from tests.serving.routing.test_rollout_router import ROLLOUT, app_for
from tests.serving.test_model_router import serving
from tests.support.serving import MODEL, DemoStore, encoded, v2_body


@dataclass
class _Request:
    headers: dict[str, Any] = field(default_factory=dict)
    path_params: dict[str, Any] = field(default_factory=lambda: {"name": MODEL})


def _keyed(key: str) -> _Request:
    return _Request(headers={REQUEST_KEY_HEADER: key})


def test_ten_percent_of_keys_go_to_the_challenger_not_ninety() -> None:
    keys = [f"customer-{n}" for n in range(5000)]
    share = sum(_to_challenger(_keyed(k), 10) for k in keys) / len(keys)
    # Binomial sd at n=5000, p=0.1 is 0.42 %: 8.5-11.5 % is over 3.5 sd; a flipped split gives ~90 %.
    assert 0.085 <= share <= 0.115, share


def test_ten_percent_of_unkeyed_requests_go_to_the_challenger() -> None:
    random.seed(27)
    share = sum(_to_challenger(_Request(), 10) for _ in range(5000)) / 5000
    assert 0.085 <= share <= 0.115, share


def _key_with_bucket(bucket: int) -> str:
    return next(f"k{n}" for n in range(100_000) if zlib.crc32(f"k{n}".encode()) % 100 == bucket)


@pytest.mark.parametrize(
    ("bucket", "percent", "challenger"),
    [(9, 10, True), (10, 10, False), (0, 1, True), (0, 0, False), (99, 99, False), (99, 100, True)],
    ids=["just-inside", "at-edge", "lowest-1pct", "zero", "top-99pct", "all"],
)
def test_key_bucket_edge(bucket: int, percent: int, challenger: bool) -> None:
    assert _to_challenger(_keyed(_key_with_bucket(bucket)), percent) is challenger


@pytest.mark.slow
def test_a_ten_percent_canary_served_over_http_sends_about_ten_percent(store: DemoStore) -> None:
    x = encoded(store, 1, offset=7)
    keys = [f"client-{n}" for n in range(200)]
    expected = sum(zlib.crc32(k.encode()) % 100 < 10 for k in keys)
    with serving(app_for(store)) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.put(ROLLOUT, json={"challenger": "2", "percent": 10}).json()["percent"] == 10
        versions = Counter(
            client.post(
                f"/v2/models/{MODEL}/infer", json=v2_body(x), headers={REQUEST_KEY_HEADER: key}
            ).headers["x-model-version"]
            for key in keys
        )
    assert versions["2"] == expected and versions["1"] == len(keys) - expected
    assert 10 <= versions["2"] <= 30, versions  # ~10 % of 200, far from the 180 of a flipped split
