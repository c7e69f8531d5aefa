"""A served request goes down through the packages: the server's start and one V2 request, traced.

The same tracing as ``tests/test_call_paths.py``: no call from a lower layer up into a higher one, from
the scoring path in front of Starlette through the data plane and the model to the bottom package.
"""

from __future__ import annotations

import io
import logging

import pytest
from starlette.testclient import TestClient

from serving.app import create_app
from serving.config import ServerConfig
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, encoded, v2_body
from tests.test_call_paths import bounces, traced

pytestmark = pytest.mark.slow


def test_a_v2_request_goes_down_from_the_scoring_path_to_the_model(
    store: DemoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's log lines go to a handler of this test's own: a handler an earlier in-process `mlops run` left
    # on the root logger writes to that run's console streams (cli.console.streams), a call into cli that is the
    # test session's, not the server's.
    monkeypatch.setattr(logging.getLogger(), "handlers", [logging.StreamHandler(io.StringIO())])
    config = ServerConfig(tracking_uri="sqlite:///unused.db", request_log_uri="", reload_interval_s=0)
    model = local_model(store.onnx_a, "1")
    with traced() as crossings, TestClient(create_app(config, model)) as client:
        answer = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(encoded(store, 1)))
    assert answer.status_code == 200, answer.text
    assert bounces(crossings) == []
    entered = {callee.split(".")[0] for _, callee, _ in crossings}
    assert {"serving", "mlops"} <= entered and not entered & {"cli", "pipelines", "components", "delivery"}
    assert any(callee == "serving.fast_path" for _, callee, _ in crossings), "answered by the scoring path"
