"""The rollout router of test_rollout_router_plans.py and test_rollout_router_answers.py, without HTTP or
ONNX: models are :class:`~serving.runtime.LoadedModel` objects whose session is a stand-in returning scores
chosen by the test, behind real :class:`~serving.backend.ModelBackend` objects and a real
:class:`~serving.metrics.ServingMetrics`; requests are stand-ins carrying only a path and headers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from mlops.data.features import FeatureSpec
from serving.backend import ModelBackend
from serving.config import ServerConfig
from serving.metrics import ServingMetrics
from serving.reload import ModelHolder
from serving.routing.rollout_router import RolloutRouter
from serving.runtime import LoadedModel

NAME = "credit-default"
SPEC = FeatureSpec(
    numeric=("age", "income"),
    medians=(40.0, 50.0),
    means=(41.0, 52.0),
    stds=(10.0, 20.0),
    categorical=("region",),
    vocabularies=(("north", "south"),),
)
T = TypeVar("T")


class _Session:
    """Stands in for an ONNX Runtime session: ``score(x)`` is the model's answer (it may raise)."""

    def __init__(self, score: Callable[[np.ndarray], np.ndarray]):
        self.score = score
        self.calls = 0

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.calls += 1
        (x,) = feeds.values()
        return [self.score(x)]


def model(version: str, score: Callable[[np.ndarray], np.ndarray], spec: FeatureSpec = SPEC) -> LoadedModel:
    return LoadedModel(NAME, version, f"sha-{version}", spec, _Session(score), "fp32")


def constant(value: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.full(len(x), value, dtype=np.float32)


X = np.zeros((3, 3), dtype=np.float32)


@dataclass
class _Request:
    path_params: dict[str, Any] = field(default_factory=lambda: {"name": NAME})
    headers: dict[str, Any] = field(default_factory=dict)


def pinned(version: str, name: str = NAME) -> _Request:
    return _Request(path_params={"name": name, "version": version})


@dataclass
class Setup:
    router: RolloutRouter
    metrics: ServingMetrics
    loads: list[str]
    batches: list[tuple[str, int]]

    def count(self, version: str, role: str, outcome: str) -> float:
        return self.sample("mlops_serving_scored_requests_total", version=version, role=role, outcome=outcome)

    def sample(self, metric: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(metric, {"model": NAME, **labels})
        return 0.0 if value is None else value

    async def answer(self, request: _Request | None = None, x: np.ndarray = X) -> tuple[np.ndarray, str]:
        scorer, version = self.router.select(request or _Request())
        y, used = await scorer.predict(x, version)
        return y, used.version


def setup(
    models: dict[str, LoadedModel] | None = None,
    champion: LoadedModel | None = None,
    with_registry: bool = True,
    max_batch_size: int = 1,
    queue_delay_s: float = 0.001,
) -> Setup:
    metrics = ServingMetrics()
    loads: list[str] = []
    batches: list[tuple[str, int]] = []
    available = {"2": model("2", constant(0.8))} if models is None else models

    def load(version: str) -> LoadedModel:
        loads.append(version)
        if version not in available:
            raise ValueError(f"model {NAME!r} has no version {version!r}")
        return available[version]

    primary = ModelBackend(
        ModelHolder(champion or model("1", constant(0.2))),
        max_batch_size,
        queue_delay_s,
        False,
        lambda used, rows: batches.append((used.version, rows)),
    )
    config = ServerConfig(tracking_uri="sqlite:///unused.db", request_log_uri="")
    router = RolloutRouter(config, primary, metrics, load if with_registry else None)
    return Setup(router, metrics, loads, batches)


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())
