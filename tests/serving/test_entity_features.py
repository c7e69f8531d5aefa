"""Requests by entity id against the session's real ``feast serve`` (tests/support/feast_store.py).

A model trained on the churn-like feature table's four features answers a request carrying only
``customerID`` exactly as it answers the same rows sent as values, on V1 and V2 (the raw-ASGI scoring path
and Starlette's routes) and gRPC; the request log holds the looked-up values and the id as the subject; a
missing id and a stale value are 400s naming the id, a feature server that is down a 503 naming it, an
entity request to a server without a feature store a 400 saying how to start one; /metrics shows the
lookup's histogram and its failures by reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from mlops.data.dataset import DatasetSchema
from mlops.features.online import FeatureServer, free_port
from mlops.features.repository import FeatureRepo, read_repository
from mlops.origin_facts import file_sha256
from serving.app import create_app
from serving.config import ServerConfig
from serving.fast_path import ServingApp
from serving.model_source import ModelArtifact
from serving.runtime import LoadedModel, load_model
from tests.support.feast_table import EARLY, LATE, STALE_ONLY, TTL, churn_features

pytestmark = pytest.mark.slow
MODEL = "churn"
ENTITY = "customerID"
FEATURES = ("tenure", "MonthlyCharges", "TotalCharges", "Contract")
LATEST = {
    EARLY: {"tenure": 12, "MonthlyCharges": 56.95, "TotalCharges": 999.0, "Contract": "One year"},
    LATE: {"tenure": 13, "MonthlyCharges": 57.95, "TotalCharges": 1000.0, "Contract": "One year"},
}
"""What the online store holds for two customers: their newest rows of the table (feast_table.py)."""
V1 = f"/v1/models/{MODEL}:predict"
V2 = f"/v2/models/{MODEL}/infer"


@pytest.fixture(scope="module")
def churn_model(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    """A small TabularNet on the table's four features (customerID its subject key), as ONNX."""
    from tests.support.model_factory import fit_tabular_net
    from training.onnx_export import export_onnx

    frame = churn_features().drop(columns=["event_timestamp"])
    frame["Churn"] = (np.arange(len(frame)) % 2).astype(int)
    schema = DatasetSchema(
        label="Churn",
        numeric_features=FEATURES[:3],
        categorical_features=FEATURES[3:],
        ignored_columns=(ENTITY,),
        subject_key=ENTITY,
    )
    path = tmp_path_factory.mktemp("churn-model") / "model.onnx"
    export_onnx(fit_tabular_net(frame, steps=20, schema=schema), path)
    loaded = load_model(ModelArtifact(MODEL, "1", path, file_sha256(path), {}))
    assert loaded.spec.subject == ENTITY and tuple(sorted(loaded.spec.names)) == tuple(sorted(FEATURES))
    return loaded


def config(feature_repo: FeatureRepo, address: str, **changes: Any) -> ServerConfig:
    values: dict[str, Any] = {
        "model_name": MODEL,
        "tracking_uri": "sqlite:///unused.db",
        "reload_interval_s": 0,
        "features": feature_repo.service,
        "feature_server": address,
        "feature_entity": feature_repo.entity,
        "feature_max_age_s": 0.0,
        "feature_timeout_s": 5.0,
        "request_log_flush_s": 60.0,
    }
    values.update(changes)
    return ServerConfig(**values)


@pytest.fixture(scope="module")
def app_and_log(
    churn_model: LoadedModel,
    feature_repo: FeatureRepo,
    feature_server: FeatureServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[ServingApp, Path]:
    logs = tmp_path_factory.mktemp("entity-request-log")
    app = create_app(config(feature_repo, feature_server.address, request_log_uri=str(logs)), churn_model)
    assert isinstance(app, ServingApp)
    return app, logs


@pytest.fixture(scope="module")
def client(app_and_log: tuple[ServingApp, Path]) -> Iterator[TestClient]:
    with TestClient(app_and_log[0]) as c:
        yield c


def through_both(app: ServingApp, client: TestClient, path: str, body: Any) -> list[Any]:
    """The response of the raw-ASGI scoring path and of Starlette's route."""
    scoring, answers = app.scoring, []
    for through in (scoring, None):
        app.scoring = through
        try:
            answers.append(client.post(path, json=body))
        finally:
            app.scoring = scoring
    return answers


def v2_entity(ids: list[str]) -> dict[str, Any]:
    return {"inputs": [{"name": ENTITY, "datatype": "BYTES", "shape": [len(ids)], "data": ids}]}


def test_entity_requests_score_what_the_same_rows_sent_as_values_score(
    app_and_log: tuple[ServingApp, Path], client: TestClient
) -> None:
    app = app_and_log[0]
    ids = [EARLY, LATE]
    by_value = client.post(V1, json={"instances": [LATEST[i] for i in ids]})
    assert by_value.status_code == 200, by_value.text
    expected = by_value.json()["predictions"]
    for response in through_both(app, client, V1, {"instances": [{ENTITY: i} for i in ids]}):
        assert response.status_code == 200, response.text
        assert response.json()["predictions"] == expected
    for response in through_both(app, client, V2, v2_entity(ids)):
        assert response.status_code == 200, response.text
        assert response.json()["outputs"][0]["data"] == pytest.approx(expected, rel=1e-6)


def grpc_keyed(code: str) -> Any:
    """What the gRPC face reads from an entity request, in a fresh interpreter: protobuf refuses
    ``serving.proto`` in a process that already holds tritonclient's messages of the same names (other test
    modules import them). From there the request goes the way V1's and V2's do (the data plane's one lookup,
    tested above through both REST doors)."""
    import json
    import subprocess
    import sys

    program = (
        "import json\n"
        "from serving.grpc_service import GrpcInputs\n"
        "from serving.proto import grpc_predict_v2_pb2 as pb\n"
        f"request = pb.ModelInferRequest(model_name={MODEL!r})\n" + code + "\n"
        "print(json.dumps(GrpcInputs(request).keyed()))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_grpc_entity_requests_are_read_as_the_entitys_ids() -> None:
    as_text = f"""
tensor = request.inputs.add(name={ENTITY!r}, datatype="BYTES", shape=[2])
tensor.contents.bytes_contents.extend([{EARLY!r}.encode(), {LATE!r}.encode()])"""
    assert grpc_keyed(as_text) == [ENTITY, [EARLY, LATE]]
    as_numbers = """
tensor = request.inputs.add(name="account", datatype="INT64", shape=[2])
tensor.contents.int64_contents.extend([7, 9])"""
    assert grpc_keyed(as_numbers) == ["account", [7, 9]]
    with_values = (
        as_text
        + """
other = request.inputs.add(name="tenure", datatype="INT64", shape=[1])
other.contents.int64_contents.extend([3])"""
    )
    assert grpc_keyed(with_values) is None  # more than one input: values, not an entity request


def test_a_missing_id_is_a_400_naming_it_and_counted(
    app_and_log: tuple[ServingApp, Path], client: TestClient
) -> None:
    for response in through_both(
        app_and_log[0], client, V1, {"instances": [{ENTITY: EARLY}, {ENTITY: "0000-NOPE"}]}
    ):
        assert response.status_code == 400
        assert "0000-NOPE" in response.json()["error"] and "materialize" in response.json()["error"]
    response = client.post(V2, json=v2_entity(["0000-NOPE"]))
    assert response.status_code == 400 and "0000-NOPE" in response.json()["error"]


def test_metrics_show_the_lookups_latency_and_failures(
    app_and_log: tuple[ServingApp, Path], client: TestClient
) -> None:
    client.post(V1, json={"instances": [{ENTITY: EARLY}]})
    client.post(V1, json={"instances": [{ENTITY: "0000-GONE"}]})
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(client.get("/metrics").text)
        for s in family.samples
    }
    assert samples[("mlops_serving_feature_lookup_seconds_count", (("model", MODEL),))] >= 1
    assert (
        samples[("mlops_serving_feature_lookups_failed_total", (("model", MODEL), ("reason", "missing")))]
        >= 1
    )
    assert (
        samples[
            ("mlops_serving_errors_total", (("model", MODEL), ("reason", "unknown_entity"), ("version", "1")))
        ]
        >= 1
    )


def test_the_request_log_holds_the_looked_up_values_and_the_id(
    app_and_log: tuple[ServingApp, Path], churn_model: LoadedModel, feature_repo: FeatureRepo, tmp_path: Path
) -> None:
    """A server of its own, so its log is flushed at its end; the values are what the store held."""
    app = create_app(
        config(
            feature_repo, app_and_log[0].state.plane.entities.settings.address, request_log_uri=str(tmp_path)
        ),
        churn_model,
    )
    with TestClient(app) as c:
        assert (
            c.post(
                V1, json={"instances": [{ENTITY: EARLY}, {ENTITY: LATE}]}, headers={"x-request-id": "r1"}
            ).status_code
            == 200
        )
    frame = pd.concat(pd.read_parquet(f) for f in (tmp_path / MODEL).glob("*.parquet"))
    frame = frame.sort_values("request_row").reset_index(drop=True)
    assert frame[ENTITY].tolist() == [EARLY, LATE]
    for name in FEATURES:  # the model's float32 values, as every logged row holds them
        expected = [LATEST[EARLY][name], LATEST[LATE][name]]
        assert frame[name].tolist() == (
            expected if name == "Contract" else pytest.approx(expected, rel=1e-6)
        ), name


def test_a_stale_value_is_a_400_naming_the_id(
    churn_model: LoadedModel, feature_repo: FeatureRepo, feature_server: FeatureServer
) -> None:
    """STALE_ONLY's one value is 20 days old; the newest of the others 10: a 15-day limit refuses only it."""
    limit = timedelta(days=15).total_seconds()
    app = create_app(config(feature_repo, feature_server.address, feature_max_age_s=limit), churn_model)
    with TestClient(app) as c:
        assert c.post(V1, json={"instances": [{ENTITY: EARLY}]}).status_code == 200
        response = c.post(V1, json={"instances": [{ENTITY: STALE_ONLY}]})
        assert response.status_code == 400
        assert STALE_ONLY in response.json()["error"] and "TTL" in response.json()["error"]
        assert 'reason="stale"' in c.get("/metrics").text


def test_a_feature_server_that_is_down_is_a_503_naming_it(
    churn_model: LoadedModel, feature_repo: FeatureRepo
) -> None:
    address = f"127.0.0.1:{free_port()}"
    app = create_app(config(feature_repo, address), churn_model)
    with TestClient(app) as c:
        for response in through_both(app, c, V1, {"instances": [{ENTITY: EARLY}]}):
            assert response.status_code == 503
            assert address in response.json()["error"]
        assert 'reason="unavailable"' in c.get("/metrics").text


def test_an_entity_request_to_a_server_without_a_feature_store_says_how_to_start_one(
    churn_model: LoadedModel,
) -> None:
    app = create_app(
        ServerConfig(model_name=MODEL, tracking_uri="sqlite:///unused.db", reload_interval_s=0), churn_model
    )
    assert app.state.plane.entities is None
    with TestClient(app) as c:
        for body, path in (({"instances": [{ENTITY: EARLY}]}, V1), (v2_entity([EARLY]), V2)):
            response = c.post(path, json=body)
            assert response.status_code == 400
            assert "mlops serve --features" in response.json()["error"] and ENTITY in response.json()["error"]
        # a request naming a feature is refused as before, without the hint
        response = c.post(V1, json={"instances": [{"tenure": 3}]})
        assert response.status_code == 400 and "--features" not in response.json()["error"]


def test_the_repository_is_read_back_for_serve(feature_repo: FeatureRepo) -> None:
    read = read_repository(feature_repo.path)
    assert read == dataclasses.replace(feature_repo, path=feature_repo.path)
    assert read.ttl == TTL and read.entity == ENTITY


def test_serve_fills_the_store_from_the_repository_and_refuses_a_model_it_does_not_cover(
    churn_model: LoadedModel, feature_repo: FeatureRepo, feature_server: FeatureServer, tmp_path: Path
) -> None:
    import argparse
    from contextlib import ExitStack
    from types import SimpleNamespace

    from cli.commands.serve import _feature_store
    from mlops.workspace import Workspace

    def args(service: str) -> argparse.Namespace:
        return argparse.Namespace(
            features=service,
            feature_repo=feature_repo.path,
            feature_entity=None,
            feature_max_age_s=None,
            feature_server=feature_server.address,
        )

    given = args(feature_repo.service)
    with ExitStack() as stack:
        check = _feature_store(given, Workspace(tmp_path), stack)
    assert given.feature_entity == ENTITY and given.feature_max_age_s == TTL.total_seconds()
    assert given.feature_server == feature_server.address  # a running server named: none started
    check(churn_model)
    with pytest.raises(ValueError, match=r"lacks the model's input feature\(s\) \['age'\]"):
        check(SimpleNamespace(spec=SimpleNamespace(names=(*FEATURES, "age"))))
    with pytest.raises(ValueError, match="declares service"):
        _feature_store(args("nope"), Workspace(tmp_path), ExitStack())
