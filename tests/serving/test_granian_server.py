"""``mlops serve --http-server granian``: the same answers as on uvicorn, byte for byte, from real servers.

uvicorn is the oracle here: two ``mlops serve`` processes on the same model and flags, one on each HTTP
server, get the same requests — V2 JSON and binary tensors, V1, metadata and health, refusals (bad JSON,
bad shapes, a missing or wrong token, the token repeated, an oversized declared or chunked body, unknown
paths and methods), a percent-encoded path, a query string — and every answer must carry the same status,
body and headers (but the server's name, the date and connection handling, which each server does itself). A real client
(tritonclient) scores through the granian server too. The adapter's lifespan and port checks are pinned
beside them; the two-worker test (``test_workers.py``) runs on both servers.
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from starlette.applications import Starlette

from serving.rsgi import AsgiOnRsgi, LifespanFailed
from serving.workers import bindable_port
from tests.support.serving import (
    MODEL,
    DemoStore,
    ServerProcess,
    clean_env,
    direct,
    encoded,
    running_server,
    serve_command,
    v2_body,
)

pytestmark = pytest.mark.slow
TOKEN = "parity-token"
FLAGS = ("--auth-token", TOKEN, "--max-payload-bytes", "4096", "--reload-interval-s", "0", "--no-request-log")
WRITTEN_BY_THE_SERVER = {"date", "server", "connection"}
"""Headers each HTTP server writes itself: granian also closes a connection whose body the app refused unread
(``connection: close`` on a 413 before the body), where uvicorn reads the rest to keep it."""
AUTH = {"authorization": f"Bearer {TOKEN}"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def servers(store: DemoStore) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with (
        running_server(store, *FLAGS) as uvicorn_server,
        running_server(store, *FLAGS, "--http-server", "granian") as granian_server,
    ):
        yield uvicorn_server, granian_server


def answer(response: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    headers = sorted(
        (k.lower(), v) for k, v in response.headers.multi_items() if k.lower() not in WRITTEN_BY_THE_SERVER
    )
    return response.status_code, response.content, headers


def binary_request(x: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = (
        b'{"inputs":[{"name":"features","shape":[%d,%d],"datatype":"FP32","parameters":{"binary_data_size":%d}}],'
        b'"outputs":[{"name":"probability","parameters":{"binary_data":true}}]}'
        % (x.shape[0], x.shape[1], x.nbytes)
    )
    return header + x.astype("<f4").tobytes(), {
        "inference-header-content-length": str(len(header)),
        "content-type": "application/octet-stream",
    }


def requests(store: DemoStore) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, method path, httpx arguments) of every request both servers get; ``chunks``: a body sent
    without a declared length."""
    x = encoded(store, 3)
    binary, binary_headers = binary_request(x)
    infer = f"/v2/models/{MODEL}/infer"
    rid = {"x-request-id": "parity-1"}
    return [
        ("v2 json", f"POST {infer}", {"json": v2_body(x), "headers": {**AUTH, **rid}}),
        ("v2 json with id", f"POST {infer}", {"json": v2_body(x, "client-id"), "headers": AUTH}),
        (
            "v2 version path",
            f"POST /v2/models/{MODEL}/versions/1/infer",
            {"json": v2_body(x), "headers": {**AUTH, **rid}},
        ),
        ("v2 binary", f"POST {infer}", {"content": binary, "headers": {**AUTH, **rid, **binary_headers}}),
        (
            "v1 predict",
            f"POST /v1/models/{MODEL}:predict",
            {"json": {"instances": x.tolist()}, "headers": {**AUTH, **rid}},
        ),
        (
            "percent-encoded name",
            "POST /v2/models/credit%2Ddefault/infer",
            {"json": v2_body(x), "headers": {**AUTH, **rid}},
        ),
        ("query string", f"POST {infer}?trace=1", {"json": v2_body(x), "headers": {**AUTH, **rid}}),
        ("bad json", f"POST {infer}", {"content": b"{not json", "headers": {**AUTH, **rid}}),
        ("bad shape", f"POST {infer}", {"json": v2_body(x[:, :5]), "headers": {**AUTH, **rid}}),
        ("no token", f"POST {infer}", {"json": v2_body(x), "headers": rid}),
        (
            "wrong token",
            f"POST {infer}",
            {"json": v2_body(x), "headers": {"authorization": "Bearer nope", **rid}},
        ),
        ("declared too large", f"POST {infer}", {"content": b"x" * 5000, "headers": {**AUTH, **rid}}),
        (
            "chunked too large",
            f"POST {infer}",
            {"chunks": [b"x" * 3000, b"y" * 3000], "headers": {**AUTH, **rid}},
        ),
        ("chunked small", f"POST {infer}", {"chunks": [b'{"inputs":', b"[]}"], "headers": {**AUTH, **rid}}),
        ("metadata", f"GET /v2/models/{MODEL}", {"headers": AUTH}),
        ("server metadata", "GET /v2", {"headers": AUTH}),
        ("model ready", f"GET /v2/models/{MODEL}/ready", {}),
        ("live", "GET /v2/health/live", {}),
        ("ready", "GET /v2/health/ready", {}),
        ("unknown path", "GET /nope", {"headers": AUTH}),
        ("wrong method", f"GET {infer}", {"headers": AUTH}),
        ("metadata without token", f"GET /v2/models/{MODEL}", {}),
    ]


def test_every_answer_is_uvicorns_byte_for_byte(
    servers: tuple[ServerProcess, ServerProcess], store: DemoStore
) -> None:
    uvicorn_server, granian_server = servers
    assert "over granian's RSGI" in granian_server.log() and "granian" not in uvicorn_server.log()
    differences = []
    for label, line, arguments in requests(store):
        method, path = line.split(" ", 1)
        answers = []
        for server in (uvicorn_server, granian_server):
            given = dict(arguments)
            if "chunks" in given:  # a body without a declared length, sent chunk by chunk
                given["content"] = iter(given.pop("chunks"))
            answers.append(answer(httpx.request(method, server.url + path, timeout=10, **given)))
        if answers[0] != answers[1]:
            differences.append(f"{label}:\n  uvicorn {answers[0]}\n  granian {answers[1]}")
    assert not differences, "\n".join(differences)


def test_the_granian_server_scores_what_onnx_runtime_scores(
    servers: tuple[ServerProcess, ServerProcess], store: DemoStore
) -> None:
    from tritonclient.http import InferenceServerClient, InferInput

    _, granian_server = servers
    x = encoded(store, 4).astype(np.float32)
    client = InferenceServerClient(granian_server.url.removeprefix("http://"))
    features = InferInput("features", list(x.shape), "FP32")
    features.set_data_from_numpy(x, binary_data=True)
    result = client.infer(MODEL, [features], headers=dict(AUTH))  # tritonclient adds its own headers to it
    np.testing.assert_allclose(result.as_numpy("probability"), direct(store.onnx_a, x), rtol=1e-5, atol=1e-6)


def test_a_client_gone_mid_body_is_counted_closed_by_the_client(
    servers: tuple[ServerProcess, ServerProcess],
) -> None:
    _, granian_server = servers
    port = int(granian_server.url.rsplit(":", 1)[1])
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                'Content-Length: 3000\r\n\r\n{"inputs": ['.encode()  # under the 4096-byte limit
            )
            time.sleep(0.05)
    deadline = time.monotonic() + 10
    while True:
        metrics = httpx.get(f"{granian_server.url}/metrics", headers=AUTH).text
        closed = re.search(r'mlops_serving_requests_total\{[^}]*code="499"[^}]*\} (\S+)', metrics)
        if (closed and float(closed.group(1)) >= 3) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert closed and float(closed.group(1)) >= 3, metrics
    assert 'code="500"' not in metrics and 'reason="internal"' not in metrics


def test_a_port_another_server_holds_stops_the_start_with_its_error(store: DemoStore) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run(
            serve_command(store, port, "--http-server", "granian"),
            cwd=store.workspace.root,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode != 0
    assert f"error while attempting to bind on address ('127.0.0.1', {port}): address already in use" in (
        result.stdout + result.stderr
    )


def test_bindable_port_names_a_held_port_and_resolves_port_zero() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(
            ValueError, match=rf"\('127.0.0.1', {port}\): address already in use; stop the process"
        ):
            bindable_port("127.0.0.1", port)
    with pytest.raises(ValueError, match=r"cannot assign requested address; pass a --host this machine has"):
        bindable_port("192.0.2.1", 8080)  # TEST-NET-1: never an address of this machine
    free = bindable_port("127.0.0.1", 0)
    assert 0 < free < 65536
    assert bindable_port("127.0.0.1", free) == free


def test_the_adapter_runs_the_apps_lifespan_and_names_a_refusal() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        events.append("start")
        yield
        events.append("stop")

    good = AsgiOnRsgi(Starlette(lifespan=lifespan))
    loop = asyncio.new_event_loop()
    try:
        good.__rsgi_init__(loop)
        assert events == ["start"]
        good.__rsgi_del__(loop)
        assert events == ["start", "stop"]

        @asynccontextmanager
        async def refusing(app: Starlette) -> Any:
            raise RuntimeError("the model cache is unreadable")
            yield

        with pytest.raises(LifespanFailed, match="the model cache is unreadable"):
            AsgiOnRsgi(Starlette(lifespan=refusing)).__rsgi_init__(loop)
    finally:
        loop.close()


def test_sigterm_drains_the_granian_server(store: DemoStore) -> None:
    with running_server(store, "--http-server", "granian", "--no-request-log") as server:
        x = encoded(store, 1)
        assert httpx.post(f"{server.url}/v2/models/{MODEL}/infer", json=v2_body(x)).status_code == 200
        started = time.monotonic()
        server.process.terminate()
        assert server.process.wait(timeout=60) == 0, server.log()
        assert time.monotonic() - started < 30


def test_the_adapter_streams_reads_chunks_and_answers_a_failing_route_with_a_500(tmp_path: Path) -> None:
    port = bindable_port("127.0.0.1", 0)
    granian = Path(sys.executable).with_name("granian")
    command = [
        str(granian),
        "--interface",
        "rsgi",
        "--port",
        str(port),
        "--factory",
        "--log-level",
        "warning",
    ]
    log = tmp_path / "granian.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, "tests.serving.rsgi_streaming_app:app"], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                streamed = httpx.get(f"{base}/stream")
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        assert (streamed.status_code, streamed.text, streamed.headers["x-parts"]) == (
            200,
            "part 0;part 1;part 2;",
            "3",
        )
        echoed = httpx.post(f"{base}/echo?a=%20b", content=iter([b"x" * 10, b"y" * 5]))
        assert echoed.text == "15 bytes, /echo, a=%20b"
        failed = httpx.get(f"{base}/fail")
        assert (failed.status_code, failed.text) == (500, "Internal Server Error")
    finally:
        process.terminate()
        process.wait(timeout=30)
