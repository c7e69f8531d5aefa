"""The rollout router and its admin route, in-process under uvicorn with real models.

create_app's default router is the RolloutRouter; challengers are loaded through the
``load`` the app is given (here: ONNX files of the demo store, digest-checked by load_model).
"""

from __future__ import annotations

import time
from collections import Counter

import httpx
import numpy as np
import pytest
from starlette.applications import Starlette

from serving.app import create_app
from serving.config import ServerConfig
from serving.model_source import RegistryError
from serving.routing.rollout_router import ContractMismatch, check_contract
from serving.runtime import LoadedModel
from tests.serving.test_model_router import local_model, serving
from tests.support.serving import MODEL, DemoStore, direct, encoded, v2_body

pytestmark = pytest.mark.slow
ROLLOUT = f"/v2/models/{MODEL}/rollout"


def app_for(store: DemoStore, token: str = "", admin_token: str = "") -> Starlette:
    models = {"1": local_model(store.onnx_a, "1"), "2": local_model(store.onnx_b, "2")}

    def load(version: str) -> LoadedModel:
        if version not in models:
            raise RegistryError(f"model {MODEL!r} has no version {version!r}")
        return models[version]

    config = ServerConfig(
        tracking_uri="sqlite:///unused.db", request_log_uri="", auth_token=token, admin_token=admin_token
    )
    return create_app(config, models["1"], load=load)


def test_split_is_sticky_per_key_and_falls_back_to_the_whole_champion(store: DemoStore) -> None:
    x = encoded(store, 1, offset=5)
    with serving(app_for(store)) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get(ROLLOUT).json() == {
            "name": MODEL,
            "champion": "1",
            "challenger": None,
            "percent": 0,
            "shadow": False,
            "agreement_threshold": 0.5,
        }
        assert client.put(ROLLOUT, json={"challenger": "2", "percent": 50}).json()["percent"] == 50
        by_key = {
            key: {
                client.post(
                    f"/v2/models/{MODEL}/infer", json=v2_body(x), headers={"x-request-key": key}
                ).headers["x-model-version"]
                for _ in range(5)
            }
            for key in (f"client-{n}" for n in range(30))
        }
        assert all(len(versions) == 1 for versions in by_key.values())  # sticky
        assert Counter(v for (v,) in by_key.values()).keys() == {"1", "2"}  # and split
        answer = client.post(f"/v2/models/{MODEL}/versions/2/infer", json=v2_body(x))  # pinned challenger
        assert answer.headers["x-model-version"] == "2"
        np.testing.assert_allclose(answer.json()["outputs"][0]["data"], direct(store.onnx_b, x), rtol=1e-6)
        metrics = client.get("/metrics").text
        assert client.put(ROLLOUT, json={"challenger": None}).json()["challenger"] is None
        after = {
            client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x)).headers["x-model-version"]
            for _ in range(20)
        }
    assert after == {"1"}
    assert (
        f'mlops_serving_scored_requests_total{{model="{MODEL}",outcome="ok",role="challenger",version="2"}}'
        in metrics
    )


def shadow_rows(metrics: str) -> dict[str, float]:
    """``mlops_serving_shadow_rows_total`` by its ``agreement`` label."""
    return {
        line.split("}")[0].split('agreement="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("mlops_serving_shadow_rows_total{")
    }


def test_shadow_answers_with_the_champion_and_counts_the_challengers_agreement(store: DemoStore) -> None:
    x = encoded(store, 4, offset=20)
    with serving(app_for(store)) as url, httpx.Client(base_url=url, timeout=30) as client:
        client.put(ROLLOUT, json={"challenger": "2", "shadow": True}).raise_for_status()
        answers = [client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x)) for _ in range(10)]
        # Shadow copies are scored after each answer, off the response path: give the last one time.
        deadline = time.monotonic() + 10
        while (
            sum((rows := shadow_rows(client.get("/metrics").text)).values()) < 40
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
    assert {a.headers["x-model-version"] for a in answers} == {"1"}
    for answer in answers:
        np.testing.assert_allclose(answer.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)
    expected = (direct(store.onnx_a, x) >= 0.5) != (direct(store.onnx_b, x) >= 0.5)
    assert sum(rows.values()) == 40  # every copy was scored, none dropped or counted twice
    assert rows.get("disagree", 0.0) == 10 * int(expected.sum())


def test_bad_plans_are_refused_with_the_fix_and_change_nothing(store: DemoStore) -> None:
    with serving(app_for(store, token="s3cret")) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.put(ROLLOUT, json={"challenger": "2", "percent": 5}).status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        cases = [
            (b"{not json", 400, "bad rollout plan"),
            (b'{"challenger": "2", "percent": 10, "shadow": true}', 400, "exclude each other"),
            (b'{"challenger": "2", "percent": 101}', 400, "less than or equal to 100"),
            (b'{"percent": 10}', 400, "name the challenger version"),
            (b'{"challenger": "1", "percent": 10}', 409, "already the champion"),
            (b'{"challenger": "9", "percent": 10}', 409, "cannot load challenger version 9: model"),
        ]
        for body, status, message in cases:
            answer = client.put(ROLLOUT, content=body, headers=auth)
            assert answer.status_code == status and message in answer.json()["error"], answer.text
        assert client.put("/v2/models/other/rollout", json={}, headers=auth).status_code == 404
        assert client.get(ROLLOUT, headers=auth).json()["challenger"] is None


def test_a_challenger_reading_requests_differently_is_refused(store: DemoStore) -> None:
    champion = local_model(store.onnx_a, "1")
    spec = champion.spec
    renamed = spec.model_copy(update={"numeric": ("income_k", *spec.numeric[1:])})
    other = LoadedModel(MODEL, "2", "", renamed, champion.session, "fp32")
    with pytest.raises(
        ContractMismatch,
        match=r"version 2 reads requests differently from the champion \(version 1\).*differing in \[.*'income_k'",
    ):
        check_contract(champion, other)
    check_contract(champion, LoadedModel(MODEL, "3", "", spec, champion.session, "fp32"))


def test_the_admin_route_opens_to_its_own_token_only(store: DemoStore) -> None:
    """Least privilege: a client allowed to score cannot move traffic, and the admin token scores nothing."""
    inference, admin = {"Authorization": "Bearer score-me"}, {"Authorization": "Bearer move-traffic"}
    plan = {"challenger": "2", "percent": 10}
    app = app_for(store, token="score-me", admin_token="move-traffic")
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        for method in ("GET", "PUT"):
            refused = client.request(method, ROLLOUT, json=plan, headers=inference)
            assert refused.status_code == 403, refused.text
            assert "needs the admin token" in refused.json()["error"]
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic move-traffic"}):
                assert client.request(method, ROLLOUT, json=plan, headers=headers).status_code == 401
        assert client.get(ROLLOUT, headers=admin).json()["challenger"] is None, (
            "nothing refused changed the plan"
        )
        assert client.put(ROLLOUT, json=plan, headers=admin).json()["percent"] == 10
        assert (
            client.put(
                ROLLOUT, json={"challenger": None}, headers={"authorization": "bearer move-traffic"}
            ).status_code
            == 200
        )
        x = encoded(store, 1)
        assert client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x), headers=admin).status_code == 401
        assert client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x), headers=inference).status_code == 200
        metrics = client.get("/metrics", headers=inference).text
    assert 'reason="forbidden"' in metrics


def test_without_an_admin_token_on_loopback_the_inference_token_guards_the_route(store: DemoStore) -> None:
    with serving(app_for(store, token="score-me")) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get(ROLLOUT).status_code == 401
        assert client.get(ROLLOUT, headers={"Authorization": "Bearer score-me"}).status_code == 200
