"""Webhook alerts against a local HTTP receiver: Slack's JSON, the secret kept out of everything, retries."""

from __future__ import annotations

import logging
import socket

import pytest

from mlops.governance.alerts import AlertSettings, send
from mlops.governance.secrets import REDACTED
from tests.support.webhook_receiver import webhook_receiver

SECRET = "T0KEN-s3cr3t-value"


def settings(url: str, **extra: object) -> AlertSettings:
    values = {"alert_webhook_url": url, "alert_webhook_secret": SECRET, "alert_backoff_s": 0.01, **extra}
    return AlertSettings(**values)  # type: ignore[arg-type]


def test_an_alert_is_slack_json_with_a_bearer_secret() -> None:
    with webhook_receiver() as receiver:
        sent = send("rollback", "credit-default/7", "challenger worse on realised AUC", {"stage": "5"},
                    settings(f"{receiver.url}/hook"))  # fmt: skip
    assert sent and len(receiver.posts) == 1
    post = receiver.posts[0]
    assert post.path == "/hook" and post.headers["Authorization"] == f"Bearer {SECRET}"
    assert post.body["text"].startswith("[mlops] rollback: credit-default/7: challenger worse")
    block = post.body["blocks"][0]
    assert block["type"] == "section" and block["text"]["type"] == "mrkdwn"
    assert "• stage: 5" in block["text"]["text"]


def test_the_secret_goes_where_the_url_says_and_never_into_the_body(caplog: pytest.LogCaptureFixture) -> None:
    with (
        webhook_receiver(failures=(500, 500, 500)) as receiver,
        caplog.at_level(logging.WARNING, "mlops.alerts"),
    ):
        sent = send("drift", "m/1", f"pasted {SECRET} by mistake", {"token": SECRET},
                        settings(f"{receiver.url}/services/{{secret}}"))  # fmt: skip
    assert not sent and len(receiver.posts) == 3
    assert (
        receiver.posts[0].path == f"/services/{SECRET}" and "Authorization" not in receiver.posts[0].headers
    )
    body = str(receiver.posts[0].body)
    assert SECRET not in body and REDACTED in body
    assert SECRET not in caplog.text and f"/services/{REDACTED}" in caplog.text and "HTTP 500" in caplog.text


def test_a_failed_post_is_retried_with_doubling_backoff() -> None:
    waits: list[float] = []
    with webhook_receiver(failures=(503, 429)) as receiver:
        assert send("retrain_triggered", "m", "retraining started", None,
                    settings(receiver.url, alert_backoff_s=0.5), sleep=waits.append)  # fmt: skip
    assert len(receiver.posts) == 3 and waits == [0.5, 1.0]


@pytest.mark.parametrize(("failures", "posts"), [((400,), 1), ((503, 503, 503, 503), 4)])
def test_a_refused_or_persistently_failing_alert_returns_false_and_is_logged(
    failures: tuple[int, ...], posts: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A 4xx (the body is wrong) is not retried; a 5xx is, up to alert_attempts; neither raises."""
    with webhook_receiver(failures=failures) as receiver, caplog.at_level(logging.WARNING, "mlops.alerts"):
        assert not send(
            "gate_rejected", "m/2", "AUC below floor", None, settings(receiver.url, alert_attempts=4)
        )
    assert len(receiver.posts) == posts
    assert f"not delivered to {receiver.url} after {posts} attempt(s)" in caplog.text


def test_an_unreachable_receiver_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="mlops.alerts"):
        assert not send("drift", "m", "x", None, settings(f"http://127.0.0.1:{port}/h", alert_timeout_s=1))
    assert "ConnectError" in caplog.text and "after 3 attempt(s)" in caplog.text


def test_no_url_or_a_filtered_event_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLOPS_ALERT_WEBHOOK_URL", raising=False)
    assert not send("drift", "m", "x")  # alerts off by default
    with webhook_receiver() as receiver:
        assert not send("drift", "m", "x", None, settings(receiver.url, alert_events=("rollback",)))
        monkeypatch.setenv("MLOPS_ALERT_WEBHOOK_URL", receiver.url)
        monkeypatch.setenv("MLOPS_ALERT_EVENTS", "drift")
        assert send("drift", "m", "x")  # the environment is the configuration
    assert len(receiver.posts) == 1


def test_bad_settings_in_the_environment_are_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MLOPS_ALERT_WEBHOOK_URL", "http://127.0.0.1:9/x")
    monkeypatch.setenv("MLOPS_ALERT_EVENTS", "drfit")
    with caplog.at_level(logging.WARNING, logger="mlops.alerts"):
        assert not send("drift", "m", "x")
    assert "unknown alert event(s) ['drfit']" in caplog.text
