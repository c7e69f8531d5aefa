"""``mlops serve --workers 2``, on uvicorn and on granian: two real server processes on one port, one request log, metrics summed.

Once ``/metrics`` shows both workers up (``mlops_serving_process_up``, one series per worker: the health
route answers as soon as the first is), eight client threads open a new connection per request, so the
kernel hands connections to both workers. Then: every answer is the model's, ``/metrics`` counts every answered request whichever worker
answered it (prometheus_client's multiprocess files), both workers wrote their own request-log files,
and after SIGTERM the log holds exactly the answered requests.
"""

from __future__ import annotations

import re
import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from serving.config import ServerConfig
from tests.support.serving import MODEL, DemoStore, direct, encoded, running_server, v2_body

CLIENTS, PER_CLIENT = 8, 25
UP = r'^mlops_serving_process_up\{pid="\d+"\} 1\.0$'
"""One series per worker that answers (prometheus_client's multiprocess ``liveall`` gauge)."""


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.parametrize("http_server", ["uvicorn", "granian"])
def test_two_workers_answer_on_one_port_log_every_request_and_sum_their_metrics(
    store: DemoStore, tmp_path: Path, http_server: str
) -> None:
    logs = tmp_path / "logs"
    flags = (
        "--workers", "2", "--no-rollout-admin", "--request-log-uri", str(logs),
        "--request-log-flush-s", "3600", "--reload-interval-s", "0", "--http-server", http_server,
    )  # fmt: skip
    x = encoded(store, 1)
    expected = float(direct(store.onnx_a, x)[0])
    answered: list[str] = []
    wrong: list[str] = []
    lock = threading.Lock()

    with running_server(store, *flags) as server:
        assert "(2 workers)" in server.log()
        # /v2/health/ready answers once one worker does: the load starts when both are up.
        deadline = time.monotonic() + 120
        while len(re.findall(UP, httpx.get(f"{server.url}/metrics").text, re.M)) < 2:
            assert time.monotonic() < deadline, f"the second worker never came up:\n{server.log()}"
            time.sleep(0.2)

        def client() -> None:
            for _ in range(PER_CLIENT):
                rid = uuid.uuid4().hex
                response = httpx.post(  # a new connection each time: the kernel picks the worker
                    f"{server.url}/v2/models/{MODEL}/infer", json=v2_body(x), headers={"x-request-id": rid}
                )
                with lock:
                    if response.status_code != 200:
                        wrong.append(f"{response.status_code} {response.text[:200]}")
                        continue
                    answered.append(rid)
                    (output,) = response.json()["outputs"]
                    if not np.isclose(output["data"][0], expected, atol=1e-6):
                        wrong.append(f"{rid}: {output['data']} != {expected}")

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not wrong, wrong[:3]
        assert len(answered) == CLIENTS * PER_CLIENT
        assert len(children(server.process.pid)) >= 2, server.log()  # two workers (and spawn's tracker)

        metrics = httpx.get(f"{server.url}/metrics").text
        counted = re.findall(r'^mlops_serving_requests_total\{[^}]*code="200"[^}]*\} (\S+)$', metrics, re.M)
        assert sum(float(v) for v in counted) == len(answered), (counted, metrics[:2000])
        assert re.search(r'^mlops_serving_model_info\{[^}]*version="1"[^}]*\} 1\.0$', metrics, re.M), metrics

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) in (0, -signal.SIGTERM), server.log()

    files = sorted((logs / MODEL).glob("*.parquet"))
    assert len(files) >= 2, f"each worker writes its own log files: {files}"
    logged = pd.concat([pd.read_parquet(f, columns=["request_id"]) for f in files])["request_id"]
    assert sorted(logged) == sorted(answered), "SIGTERM: every answered request is in the log, once"


@pytest.mark.parametrize("workers", [2, 8])
def test_several_workers_need_the_rollout_admin_route_off(workers: int) -> None:
    with pytest.raises(
        ValueError, match=rf"workers {workers} with the rollout admin route.*--no-rollout-admin"
    ):
        ServerConfig(tracking_uri="sqlite:///x.db", workers=workers)
    assert (
        ServerConfig(tracking_uri="sqlite:///x.db", workers=workers, rollout_admin=False).workers == workers
    )
    assert ServerConfig(tracking_uri="sqlite:///x.db", workers=1).rollout_admin
