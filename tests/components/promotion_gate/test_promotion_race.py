"""Two runs promoting at once on one registry: one consistent champion history.

Two processes (``spawn``, released together) each promote their own versions of one model,
several rounds each, through :func:`components.promotion_gate.promotion.promote`. Afterwards
the ``alias.moved`` records form one chain (each move *from* the version the previous move went
*to*, no version replaced twice), the registry's ``replaced_by`` tags agree with it, and the
champion is the last move's target. What was lost is reported (asserted to be nothing).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from typing import Any

import mlflow
import pytest

from components.promotion_gate.promotion import promote
from mlops.governance import audit
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION, REPLACED_BY_TAG

ROUNDS = 6
MODEL = "raced-model"


def _promoter(settings: dict[str, str], env: dict[str, str], versions: list[str], go: Any, done: Any) -> None:
    os.environ.update(env)
    store = TrackingStore(**settings)
    go.wait(60)
    try:
        for version in versions:
            promote(MODEL, version, store)
    except Exception as exc:
        done.put(f"promoting {versions} failed: {exc!r}")
        return
    done.put("ok")


def race(store: TrackingStore, env: dict[str, str], source: str) -> list[str]:
    client = store._client
    with contextlib.suppress(mlflow.exceptions.MlflowException):
        client.create_registered_model(MODEL)
    versions = [str(client.create_model_version(MODEL, source=source).version) for _ in range(2 * ROUNDS)]
    context = multiprocessing.get_context("spawn")
    go, done = context.Event(), context.Queue()
    settings = {
        "tracking_uri": store.tracking_uri,
        "experiment": "race",
        "pipeline_run_id": "race",
        "artifact_root": store.artifact_root,
    }
    workers = [
        context.Process(target=_promoter, args=(settings, env, versions[w::2], go, done)) for w in range(2)
    ]
    for worker in workers:
        worker.start()
    go.set()
    outcomes = [done.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert outcomes == ["ok", "ok"], outcomes
    return versions


def check_history(store: TrackingStore, versions: list[str]) -> None:
    moves = [
        e.details
        for e in audit.read_events(tracking_uri=store.tracking_uri)
        if e.action == "alias.moved" and e.subject.startswith(f"{MODEL}/") and e.details["alias"] == CHAMPION
    ]
    forks = len(moves) - len({m["from"] for m in moves})
    broken = [
        (before["to"], after["from"])
        for before, after in zip(moves, moves[1:], strict=False)
        if after["from"] != before["to"]
    ]
    print(f"promotion race: {len(moves)} moves, {forks} forked, {len(broken)} broken links")
    assert len(moves) == len(versions) and sorted(m["to"] for m in moves) == sorted(versions)
    assert moves[0]["from"] == "" and not broken and forks == 0, broken
    client = store._client
    assert str(client.get_model_version_by_alias(MODEL, CHAMPION).version) == moves[-1]["to"]
    for move in moves[1:]:
        assert client.get_model_version(MODEL, move["from"]).tags.get(REPLACED_BY_TAG) == move["to"]


def test_two_runs_promoting_at_once_on_a_local_registry(
    tracking: TrackingStore, monkeypatch, tmp_path
) -> None:
    monkeypatch.delenv(audit.AUDIT_URI_ENV, raising=False)
    versions = race(tracking, {}, source="file:///dev/null")
    check_history(tracking, versions)


@pytest.mark.remote_tracking
def test_two_runs_promoting_at_once_on_an_mlflow_server(mlflow_server, monkeypatch, tmp_path) -> None:
    from mlops.storage import s3 as s3_store

    env = {**mlflow_server.s3.env, audit.AUDIT_URI_ENV: f"s3://{mlflow_server.s3.bucket}/audit-promotion"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s3_store._bucket_region.cache_clear()
    store = TrackingStore(tracking_uri=mlflow_server.tracking_uri, experiment="race", pipeline_run_id="race")
    versions = race(store, env, source=f"s3://{mlflow_server.s3.bucket}/race-model")
    check_history(store, versions)
