"""Reasons served with each score: V1 ``:explain``, V2 ``parameters.explain``, the row limit, and a version
stored without reference rows; over real HTTP (``mlops serve`` in a subprocess) and the in-process app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from starlette.testclient import TestClient

from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.model.onnx_model import OnnxScorer
from mlops.model.row_attribution import attribute
from serving.app import create_app
from serving.config import ServerConfig
from serving.model_source import RegisteredModelSource
from serving.runtime import LoadedModel, load_model
from tests.support.serving import MODEL, DemoStore, encoded, running_server, v2_body

pytestmark = pytest.mark.slow
LIMIT = 3
CONFIG = ServerConfig(
    tracking_uri="sqlite:///unused.db",
    request_log_uri="",
    reload_interval_s=0,
    explain_max_rows=LIMIT,
    explain_top_k=3,
)


def registered(store: DemoStore, name: str, tmp: Path) -> LoadedModel:
    """The latest version of ``name`` as the server loads it: fetched through the registry and verified."""
    registry = RegisteredModelSource(store.tracking, name, tmp)
    return load_model(registry.fetch(registry.version_for("champion")))


@pytest.fixture(scope="module")
def model(store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    return registered(store, MODEL, tmp_path_factory.mktemp("explain-cache"))


@pytest.fixture(scope="module")
def client(model: LoadedModel) -> Iterator[TestClient]:
    with TestClient(create_app(CONFIG, model)) as c:
        yield c


def rows(store: DemoStore, n: int, offset: int = 0) -> list[dict[str, object]]:
    frame = store.holdout.iloc[offset : offset + n][list(SAMPLE_SCHEMA.features)]
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in frame.to_dict("records")
    ]


def explain_v1(client: TestClient, instances: list[object]) -> httpx.Response:
    return client.post(f"/v1/models/{MODEL}:explain", json={"instances": instances})


def test_v1_explain_answers_each_row_its_score_and_top_k_reasons(
    store: DemoStore, client: TestClient, model: LoadedModel
) -> None:
    response = explain_v1(client, rows(store, 2))
    assert response.status_code == 200, response.text
    explanations = response.json()["explanations"]
    assert len(explanations) == 2
    x = encoded(store, 2)
    expected = attribute(model.predict, x, model.reference.x, model.spec.names)  # type: ignore[union-attr]
    for i, row in enumerate(explanations):
        assert row["score"] == pytest.approx(float(model.predict(x[i : i + 1])[0]), abs=1e-6)
        assert len(row["reasons"]) == 3
        assert set(row["reasons"][0]) == {"feature", "value", "contribution", "text"}
        assert [(r["feature"], r["contribution"]) for r in row["reasons"]] == pytest.approx(
            expected.ranked(i)[:3]
        )
        magnitudes = [abs(r["contribution"]) for r in row["reasons"]]
        assert magnitudes == sorted(magnitudes, reverse=True)


def test_reasons_are_the_same_on_a_rerun(store: DemoStore, client: TestClient) -> None:
    first = explain_v1(client, rows(store, 3, offset=5)).json()
    second = explain_v1(client, rows(store, 3, offset=5)).json()
    assert first == second


def test_the_top_reason_moves_when_the_dominant_feature_takes_a_typical_value(
    store: DemoStore, client: TestClient, model: LoadedModel
) -> None:
    row = rows(store, 1, offset=11)[0]
    top = explain_v1(client, [row]).json()["explanations"][0]["reasons"][0]
    feature = top["feature"]
    reference = model.reference.x[:, model.spec.names.index(feature)]  # type: ignore[union-attr]
    if feature in model.spec.categorical:
        vocab = model.spec.vocabularies[model.spec.categorical.index(feature)]
        codes, counts = np.unique(reference[~np.isnan(reference)], return_counts=True)
        typical: object = vocab[int(codes[np.argmax(counts)]) - 1]
    else:
        typical = float(np.nanmedian(reference))
    changed = explain_v1(client, [{**row, feature: typical}]).json()["explanations"][0]["reasons"]
    assert changed[0]["feature"] != feature
    moved = {r["feature"]: abs(r["contribution"]) for r in changed}
    assert moved.get(feature, 0.0) < abs(top["contribution"])


def test_the_row_limit_admits_exactly_the_limit_and_refuses_one_more(
    store: DemoStore, client: TestClient
) -> None:
    assert explain_v1(client, rows(store, LIMIT)).status_code == 200
    refused = explain_v1(client, rows(store, LIMIT + 1))
    assert refused.status_code == 400
    assert f"at most {LIMIT} rows" in refused.json()["error"]
    assert "explain_max_rows" in refused.json()["error"]
    body = v2_body(encoded(store, LIMIT + 1)) | {"parameters": {"explain": True}}
    assert client.post(f"/v2/models/{MODEL}/infer", json=body).status_code == 400
    # without explain the same request is scored: the limit is on reasons, not on scoring
    assert (
        client.post(f"/v1/models/{MODEL}:predict", json={"instances": rows(store, LIMIT + 1)}).status_code
        == 200
    )


def test_v2_explain_adds_a_bytes_output_of_json_reasons(store: DemoStore, client: TestClient) -> None:
    x = encoded(store, 2)
    plain = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x)).json()
    body = v2_body(x) | {"parameters": {"explain": True}}
    answer = client.post(f"/v2/models/{MODEL}/infer", json=body)
    assert answer.status_code == 200, answer.text
    outputs = {o["name"]: o for o in answer.json()["outputs"]}
    assert outputs["probability"]["data"] == plain["outputs"][0]["data"]
    reasons = outputs["reasons"]
    assert (reasons["datatype"], reasons["shape"]) == ("BYTES", [2])
    decoded = [json.loads(text) for text in reasons["data"]]
    v1 = explain_v1(client, rows(store, 2)).json()["explanations"]
    assert decoded == [row["reasons"] for row in v1]
    assert len(plain["outputs"]) == 1  # no reasons unless asked


def test_v2_explain_must_be_a_boolean(store: DemoStore, client: TestClient) -> None:
    body = v2_body(encoded(store, 1)) | {"parameters": {"explain": "yes"}}
    refused = client.post(f"/v2/models/{MODEL}/infer", json=body)
    assert refused.status_code == 400 and "parameters.explain" in refused.json()["error"]


def test_explained_rows_are_counted(store: DemoStore, client: TestClient) -> None:
    def counted() -> float:
        for line in client.get("/metrics").text.splitlines():
            if line.startswith("mlops_serving_explained_rows_total{"):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = counted()
    assert explain_v1(client, rows(store, 2)).status_code == 200
    assert counted() == before + 2
    assert "mlops_serving_explain_latency_seconds_count" in client.get("/metrics").text


def test_a_version_without_reference_rows_serves_but_refuses_explain_with_the_fix(
    store: DemoStore, tmp_path: Path
) -> None:
    from components.register.version_registration import register_onnx_model
    from mlops.vocabulary import Lineage

    name = "no-reference"
    registered_version = register_onnx_model(
        store.onnx_a,
        store.holdout,
        name,
        Lineage("t", "", "d", "1", "0", "r"),
        store.tracking,
        reference_rows=0,
    )
    store.tracking.point_alias(name, "champion", registered_version.version)
    model = registered(store, name, tmp_path)
    assert model.reference is None
    config = ServerConfig.model_validate({**CONFIG.model_dump(), "model_name": name})
    with TestClient(create_app(config, model)) as client:
        instances = rows(store, 1)
        assert client.post(f"/v1/models/{name}:predict", json={"instances": instances}).status_code == 200
        refused = client.post(f"/v1/models/{name}:explain", json={"instances": instances})
        assert refused.status_code == 409
        message = refused.json()["error"]
        assert "no reference rows" in message and "re-register" in message
        body = v2_body(encoded(store, 1)) | {"parameters": {"explain": True}}
        assert client.post(f"/v2/models/{name}/infer", json=body).status_code == 409


def test_mlops_serve_answers_explain_over_http(store: DemoStore) -> None:
    with running_server(
        store, "--explain-max-rows", "2", "--explain-top-k", "2", "--no-request-log"
    ) as server:
        answer = httpx.post(
            f"{server.url}/v1/models/{MODEL}:explain", json={"instances": rows(store, 2)}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        assert [len(r["reasons"]) for r in answer.json()["explanations"]] == [2, 2]
        refused = httpx.post(
            f"{server.url}/v1/models/{MODEL}:explain", json={"instances": rows(store, 3)}, timeout=30
        )
        assert refused.status_code == 400 and "at most 2 rows" in refused.json()["error"]


def test_the_report_and_the_server_attribute_the_same_rows_alike(
    store: DemoStore, model: LoadedModel
) -> None:
    from components.model_validation.explainability import explain_rows
    from components.model_validation.scoring import ModelUnderCheck

    scorer = ModelUnderCheck(model.spec, OnnxScorer.load(store.onnx_a / "model.onnx").predict_encoded)
    frame = store.holdout.iloc[:40]
    x = model.spec.encode(frame)
    references = np.arange(20, 40)
    examples = explain_rows(scorer, frame, x, np.array([0, 1, 2]), references)
    served = attribute(model.predict, x[:3], x[references], model.spec.names)
    for i, example in enumerate(examples):
        assert example.probability == pytest.approx(float(served.scores[i]), abs=1e-7)
        assert [(c.feature, c.contribution) for c in example.contributions] == pytest.approx(served.ranked(i))


def test_the_request_log_marks_explained_requests(
    store: DemoStore, client: TestClient, model: LoadedModel
) -> None:
    from serving.request_log_blocks import Block, decode_blocks, encode_blocks
    from serving.request_log_table import to_table

    recorded: list[tuple[int, bool]] = []

    class Recorder:
        def record(
            self,
            used: LoadedModel,
            x: np.ndarray,
            y: np.ndarray,
            log_id: str,
            explained: bool = False,
            *more: object,  # what else the log keeps per request is not this test's concern
        ) -> bool:
            recorded.append((len(x), explained))
            return True

    plane = client.app.state.plane  # type: ignore[attr-defined]
    plane.request_log = Recorder()
    try:
        assert explain_v1(client, rows(store, 2)).status_code == 200
        assert (
            client.post(f"/v1/models/{MODEL}:predict", json={"instances": rows(store, 1)}).status_code == 200
        )
    finally:
        plane.request_log = None
    assert recorded == [(2, True), (1, False)]

    block = Block(model.version, model.spec, 8)
    x = encoded(store, 3)
    block.add(x[:2], np.zeros(2, np.float32), 1, "a", explained=True)
    block.add(x[2:], np.zeros(1, np.float32), 2, "b")
    (decoded,) = decode_blocks(encode_blocks([block]))
    assert to_table(decoded).column("explained").to_pylist() == [True, True, False]
    plain = Block(model.version, model.spec, 8)
    plain.add(x[:1], np.zeros(1, np.float32), 1, "c")
    assert (
        "explained" not in to_table(plain).column_names
    )  # files without explained requests keep their shape
