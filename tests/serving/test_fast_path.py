"""The inference routes answered in front of Starlette (serving/fast_path.py) answer exactly as Starlette's routes do.

Each request is sent twice to the same app: once through the scoring path, once with it switched off
(``app.scoring = None``), which sends it through Starlette's route table, middleware and handlers.
Status, body and headers (names, values, order) must be identical, and so must what the metrics counted.
Also pinned: which paths the scoring path takes (the same as Starlette's path table would), and that a
request alone is scored without the batcher's queue while overlapping ones still share batches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Match
from starlette.testclient import TestClient

from serving.app import create_app
from serving.batching import IN_FLIGHT, LONE_STREAK, PROBE_EVERY, Batcher, InFlight, VersionGone
from serving.config import ServerConfig
from serving.fast_path import ServingApp, match
from serving.handlers import Handlers
from serving.reload import ModelHolder
from serving.routes import route_table
from serving.runtime import LoadedModel
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, direct, encoded, v2_body

pytestmark = pytest.mark.slow
TOKEN = "s3cret-token"
CONFIG = ServerConfig(
    tracking_uri="sqlite:///unused.db",
    request_log_uri="",
    reload_interval_s=0,
    auth_token=TOKEN,
    max_payload_bytes=4096,
)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def model(store: DemoStore) -> LoadedModel:
    return local_model(store.onnx_a, "1")


@pytest.fixture(scope="module")
def app(model: LoadedModel) -> Iterator[ServingApp]:
    built = create_app(CONFIG, model)
    assert isinstance(built, ServingApp) and built.scoring is not None
    yield built


@pytest.fixture(scope="module")
def client(app: ServingApp) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


def counted(app: ServingApp) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every requests/errors counter sample of the app's registry."""
    text = app.state.plane.metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        if family.name in ("mlops_serving_requests", "mlops_serving_errors")
        for s in family.samples
        if s.name.endswith("_total")
    }


def both_ways(app: ServingApp, client: TestClient, method: str, path: str, **kwargs: Any) -> Any:
    """The response through the scoring path and through Starlette, and what each counted."""
    scoring = app.scoring
    answers = []
    for through in (scoring, None):
        app.scoring = through
        before = counted(app)
        try:
            response = client.request(method, path, **kwargs)
        finally:
            app.scoring = scoring
        after = counted(app)
        delta = {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
        answers.append((response.status_code, response.content, list(response.headers.items()), delta))
    return answers


def rows(store: DemoStore, n: int) -> np.ndarray:
    return encoded(store, n)


def binary_body(x: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = orjson.dumps(
        {
            "inputs": [
                {
                    "name": "features",
                    "datatype": "FP32",
                    "shape": list(x.shape),
                    "parameters": {"binary_data_size": x.nbytes},
                }
            ],
            "outputs": [{"name": "probability", "parameters": {"binary_data": True}}],
        }
    )
    return header + x.astype("<f4").tobytes(), {"Inference-Header-Content-Length": str(len(header))}


CASES: list[tuple[str, str, str, dict[str, str]]] = [
    # (what, path, body kind, extra headers)
    ("v2 one row", f"/v2/models/{MODEL}/infer", "v2", {}),
    ("v2 three rows, client id", f"/v2/models/{MODEL}/infer", "v2-id", {}),
    ("v2 pinned version", f"/v2/models/{MODEL}/versions/1/infer", "v2", {}),
    ("v2 unknown version", f"/v2/models/{MODEL}/versions/9/infer", "v2", {}),
    ("v2 unknown model", "/v2/models/nope/infer", "v2", {}),
    ("v2 binary", f"/v2/models/{MODEL}/infer", "binary", {}),
    ("v2 bad json", f"/v2/models/{MODEL}/infer", "bad-json", {}),
    ("v2 empty body", f"/v2/models/{MODEL}/infer", "empty", {}),
    ("v2 wrong shape", f"/v2/models/{MODEL}/infer", "wrong-shape", {}),
    ("v2 too large", f"/v2/models/{MODEL}/infer", "huge", {}),
    ("v2 header id", f"/v2/models/{MODEL}/infer", "v2", {"x-request-id": "caf\xe9 1"}),
    ("v1 predict", f"/v1/models/{MODEL}:predict", "v1", {"x-request-id": "abc"}),
    ("v1 bad instances", f"/v1/models/{MODEL}:predict", "v1-bad", {}),
    ("v1 explain without reference", f"/v1/models/{MODEL}:explain", "v1", {}),
    ("v1 unknown model", "/v1/models/other:predict", "v1", {}),
]


def body_of(kind: str, store: DemoStore) -> tuple[bytes, dict[str, str]]:
    x = rows(store, 3)
    if kind == "v2":
        return orjson.dumps(v2_body(x[:1])), {}
    if kind == "v2-id":
        return orjson.dumps(v2_body(x, "id-42")), {}
    if kind == "binary":
        return binary_body(x)
    if kind == "bad-json":
        return b'{"inputs": [NaN', {}
    if kind == "empty":
        return b"", {}
    if kind == "wrong-shape":
        body = v2_body(x[:1])
        body["inputs"][0]["shape"] = [1, 3]  # type: ignore[index]
        return orjson.dumps(body), {}
    if kind == "huge":
        return orjson.dumps(v2_body(rows(store, 40))), {}
    if kind == "v1":
        return orjson.dumps({"instances": x[:2].tolist()}), {}
    if kind == "v1-bad":
        return orjson.dumps({"instances": "nope"}), {}
    raise AssertionError(kind)


@pytest.mark.parametrize(("what", "path", "kind", "extra"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("auth", ["token", "no token", "wrong token"])
def test_the_scoring_path_answers_and_counts_exactly_as_starlette(
    app: ServingApp,
    client: TestClient,
    store: DemoStore,
    what: str,
    path: str,
    kind: str,
    extra: dict[str, str],
    auth: str,
) -> None:
    body, plain = body_of(kind, store)
    headers: dict[str, Any] = {**plain, **{k: v.encode("latin-1") for k, v in extra.items()}}
    if auth == "token":
        headers.update(AUTH)
    elif auth == "wrong token":
        headers["Authorization"] = "bearer nope"
    fast, slow = both_ways(app, client, "POST", path, content=body, headers=headers)
    fast_headers = [
        (k, v) for k, v in fast[2] if k != "x-request-id" or "x-request-id" in extra or kind == "v2-id"
    ]
    slow_headers = [
        (k, v) for k, v in slow[2] if k != "x-request-id" or "x-request-id" in extra or kind == "v2-id"
    ]
    assert (fast[0], fast[1], fast_headers, fast[3]) == (slow[0], slow[1], slow_headers, slow[3]), what
    assert [k for k, _ in fast[2]] == [k for k, _ in slow[2]]  # every header, in Starlette's order
    if auth != "token":
        assert fast[0] == 401 and ("www-authenticate", "Bearer") in fast[2]


def test_the_scoring_path_scores_what_onnx_runtime_scores(client: TestClient, store: DemoStore) -> None:
    x = rows(store, 3)
    answer = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x, "r1"), headers=AUTH)
    assert answer.status_code == 200
    assert answer.headers["x-request-id"] == "r1"
    got = np.array(answer.json()["outputs"][0]["data"], dtype=np.float32)
    np.testing.assert_allclose(got, direct(store.onnx_a, x), rtol=1e-6)


def test_other_routes_and_methods_still_go_to_starlette(client: TestClient) -> None:
    assert client.get(f"/v2/models/{MODEL}/infer", headers=AUTH).status_code == 405
    assert client.get("/v2/health/ready").json() == {"ready": True}
    assert client.post(f"/v2/models/{MODEL}/infer/", headers=AUTH).status_code != 200
    assert client.get("/metrics").status_code == 401


PATHS = [
    f"/v2/models/{MODEL}/infer",
    f"/v2/models/{MODEL}/versions/3/infer",
    "/v2/models//infer",
    "/v2/models/a/b/infer",
    "/v2/models/a/versions//infer",
    "/v2/models/a/versions/1/2/infer",
    "/v2/models/a/version/1/infer",
    "/v2/models/infer",
    "/v2/models/a:b/infer",
    f"/v1/models/{MODEL}:predict",
    f"/v1/models/{MODEL}:explain",
    "/v1/models/:predict",
    "/v1/models/a:b:predict",
    "/v1/models/a/b:predict",
    "/v1/models/a:predictx",
    "/v1/models/a",
    "/v2/models/a/ready",
    "/v2/models/a/rollout",
    "/metrics",
    "/",
]


@pytest.mark.parametrize("path", PATHS)
def test_the_scoring_path_takes_exactly_the_paths_of_starlettes_inference_routes(path: str) -> None:
    handlers = Handlers.__new__(Handlers)  # only the bound methods' identity is read
    routes = route_table(handlers)
    inference = {handlers.v2_infer, handlers.v1_predict, handlers.v1_explain}
    expected = None
    for route in routes:
        found, child = route.matches({"type": "http", "path": path, "method": "POST", "root_path": ""})
        if found is Match.FULL:
            if route.endpoint in inference:
                proto = "v2" if route.endpoint == handlers.v2_infer else "v1"
                expected = (proto, child["path_params"], route.endpoint == handlers.v1_explain)
            break
    assert match(path) == expected


# --- the batcher: a request alone skips the queue, overlapping ones share batches ---


class CountingModel:
    """A model stand-in recording each call's row count (the real session is behind it)."""

    def __init__(self, model: LoadedModel):
        self.model = model
        self.calls: list[int] = []
        self.version = model.version

    def predict(self, x: np.ndarray) -> np.ndarray:
        self.calls.append(len(x))
        return self.model.predict(x)


def answered_at_once(coroutine: Any) -> Any:
    """The coroutine's result if it finished without yielding to the loop, else None (then closed)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    return None


def test_a_request_alone_is_scored_inline_and_overlapping_ones_are_batched(
    model: LoadedModel, store: DemoStore
) -> None:
    counting = CountingModel(model)
    holder = ModelHolder(counting)  # type: ignore[arg-type]
    batches: list[int] = []
    x = rows(store, 3).astype(np.float32)

    async def scenario() -> None:
        batcher = Batcher(holder, 32, 0.0, False, on_batch=lambda used, n: batches.append(n))
        batcher.start()
        load = InFlight()
        token = IN_FLIGHT.set(load)
        try:
            load.count = 1
            # until LONE_STREAK lone batches, a request alone still goes through the queue
            for _ in range(LONE_STREAK):
                assert answered_at_once(batcher.submit(x[:1])) is None
                await asyncio.sleep(0.01)
            answer = answered_at_once(batcher.submit(x[:1]))
            assert answer is not None, "a request alone after lone batches waited for the worker"
            y, used = answer
            np.testing.assert_allclose(y, direct(store.onnx_a, x[:1]), rtol=1e-6)
            assert used is counting and batches[-1] == 1
            with pytest.raises(VersionGone):
                await batcher.submit(x[:1], version="999")
            # one inline-eligible request in PROBE_EVERY goes through the queue
            queued = 0
            for _ in range(PROBE_EVERY):
                queued += answered_at_once(batcher.submit(x[:1])) is None
                await asyncio.sleep(0.01)  # the probe's lone batch is scored
            assert queued == 1
            await asyncio.sleep(0.01)
            # another request in flight: it queues even after lone batches
            load.count = 2
            assert answered_at_once(batcher.submit(x[:1])) is None
            await asyncio.sleep(0.01)
            # overlapping requests queue and share one ONNX Runtime call, which ends the lone streak
            load.count = 3
            results = await asyncio.gather(*(batcher.submit(x[i : i + 1]) for i in range(3)))
            assert batches[-1] == 3 and counting.calls[-1] == 3
            for i, (y, _) in enumerate(results):
                np.testing.assert_allclose(y, direct(store.onnx_a, x[i : i + 1]), rtol=1e-6)
            load.count = 1
            assert answered_at_once(batcher.submit(x[:1])) is None
        finally:
            IN_FLIGHT.reset(token)
        await asyncio.sleep(0.01)
        # no transport count: the batcher queues as it always did
        results = await asyncio.gather(*(batcher.submit(x[i : i + 1]) for i in range(3)))
        assert batches[-1] == 3
        await batcher.stop()

    asyncio.run(scenario())


def test_a_queue_delay_or_a_worker_thread_keeps_every_request_queued(
    model: LoadedModel, store: DemoStore
) -> None:
    x = rows(store, 1).astype(np.float32)

    async def queued(delay: float, in_thread: bool) -> int:
        batcher = Batcher(ModelHolder(model), 32, delay, in_thread)
        batcher.start()
        load = InFlight()
        load.count = 1
        token = IN_FLIGHT.set(load)
        try:
            coroutine = batcher.submit(x)
            coroutine.send(None)  # StopIteration here would mean it was answered inline
            waiting = len(batcher._queue)
            coroutine.close()
        finally:
            IN_FLIGHT.reset(token)
            await batcher.stop()
        return waiting

    assert asyncio.run(queued(0.001, False)) == 1
    assert asyncio.run(queued(0.0, True)) == 1


@pytest.mark.parametrize("client_id", [None, "r-1", 'quote " and é', 7])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_pre_encoded_v2_body_is_the_protocols_byte_for_byte(
    app: ServingApp, client_id: Any, n: int
) -> None:
    from serving import protocol
    from serving.dataplane import InferResponse

    assert app.scoring is not None
    y = np.random.default_rng(n).random(n).astype(np.float32)
    for version in ("1", 'v"2'):
        answer = InferResponse(MODEL, version, client_id, y)
        assert app.scoring._v2_json(answer) == protocol.v2_response(answer, False)[0]
