"""The test harness's ``running_server`` chooses its ports and chooses again when one was taken first.

A port ``free_port`` found is only free until something binds it: another worker's outgoing connection
draws its local port from the same range. A server that lost its port that way is started again on new
ports; a server that fails for any other reason fails at once.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.support import serving as harness
from tests.support.serving import DemoStore, running_server

pytestmark = pytest.mark.slow


def ports_taken_first(monkeypatch: pytest.MonkeyPatch, taken: int) -> list[int]:
    """Make ``free_port`` answer ``taken`` ports that a listening socket holds, then free ones."""
    holders: list[socket.socket] = []
    handed: list[int] = []
    real = harness.free_port

    def port() -> int:
        if len(holders) < taken:
            holder = socket.socket()
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            holders.append(holder)
            handed.append(holder.getsockname()[1])
        else:
            handed.append(real())
        return handed[-1]

    monkeypatch.setattr(harness, "free_port", port)
    return handed


def test_a_grpc_port_taken_before_the_server_binds_it_is_chosen_again(
    store: DemoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed = ports_taken_first(monkeypatch, taken=2)  # the first start's HTTP and gRPC ports
    with running_server(store, "--no-request-log", "--reload-interval-s", "0", grpc=True) as server:
        assert httpx.get(f"{server.url}/v2/health/ready", timeout=5).status_code == 200
        assert server.grpc_port == handed[3] and server.grpc_port not in handed[:2]


def test_it_gives_up_after_its_attempts_naming_the_port(
    store: DemoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports_taken_first(monkeypatch, taken=10)
    with (
        pytest.raises(harness.PortTaken, match="address already in use"),
        running_server(store, "--no-request-log", attempts=2),
    ):
        pass


def test_any_other_early_exit_fails_at_once(store: DemoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    handed = ports_taken_first(monkeypatch, taken=0)
    with (
        pytest.raises(RuntimeError, match="server exited") as raised,
        running_server(store, "--model-name", "no-such-model", "--no-request-log"),
    ):
        pass
    assert not isinstance(raised.value, harness.PortTaken) and len(handed) == 1
