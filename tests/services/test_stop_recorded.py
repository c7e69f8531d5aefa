"""An interrupted test run stops what it started: the ledger ``./test.sh`` keeps and ``stop_recorded.sh``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.services.kubernetes import _k8s_ports
from tests.services.plugin import LEDGER_ENV, SCRIPTS, _start

REPO = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.kubernetes
def test_a_recorded_service_left_running_is_stopped_from_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As after Ctrl-C: the API server was started and its teardown never ran; the ledger stops it."""
    state = Path(tempfile.mkdtemp(prefix="mlops-test-ledger-"))
    try:
        _stop_from_the_ledger(state, tmp_path, monkeypatch)
    finally:
        subprocess.run(
            ["bash", str(SCRIPTS / "stop_k8s.sh")], env={**os.environ, "DIR": str(state)}, check=False
        )
        shutil.rmtree(state, ignore_errors=True)  # etcd's data: tens of MB per run


def _stop_from_the_ledger(state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    env = {"DIR": str(state), **_k8s_ports(), "KCM": "0"}
    _start("kube-apiserver", "start_k8s.sh", env, timeout_s=120, setup="bash infra/testing/build_k8s.sh")
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert entries == [{"stop": str(SCRIPTS / "stop_k8s.sh"), "env": env}]
    pids = [int((state / f"{name}.pid").read_text()) for name in ("etcd", "apiserver")]
    assert all(alive(p) for p in pids)
    done = subprocess.run(
        ["bash", str(SCRIPTS / "stop_recorded.sh"), str(ledger)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "stopped the 1 service(s)" in done.stdout
    assert gone_within(pids, 30), f"still running after the ledger's stop: {[p for p in pids if alive(p)]}"


def test_nothing_is_recorded_without_a_ledger_or_for_a_script_without_a_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.services.plugin import _record_for_stop

    monkeypatch.delenv(LEDGER_ENV, raising=False)
    _record_for_stop("start_postgres.sh", {"DIR": "x"})  # no ledger named: nothing to write, no error
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    _record_for_stop("build_image.sh", {})  # a build, not a service
    assert not ledger.exists()
    _record_for_stop("start_postgres.sh", {"DIR": "x"})
    assert json.loads(ledger.read_text()) == {"stop": str(SCRIPTS / "stop_postgres.sh"), "env": {"DIR": "x"}}


def test_a_line_cut_short_by_a_kill_does_not_stop_the_others(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    stop = tmp_path / "stop_fake.sh"
    stop.write_text(f'echo "$WHO" >> {marker}\n')
    ledger = tmp_path / "ledger.jsonl"
    good = [json.dumps({"stop": str(stop), "env": {"WHO": who}}) for who in ("first", "second")]
    ledger.write_text(f'{good[0]}\n{good[1]}\n{{"stop": "/x", "en')
    done = subprocess.run(
        ["bash", str(SCRIPTS / "stop_recorded.sh"), str(ledger)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text().split() == ["second", "first"]  # newest first


def test_test_sh_stops_the_recorded_services_when_interrupted_or_done() -> None:
    script = (REPO / "test.sh").read_text()
    assert f"export {LEDGER_ENV}" in script
    assert "stop_recorded.sh" in script
    assert "trap " in script and " INT TERM" in script
