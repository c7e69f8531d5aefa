"""Alerts to people: a webhook that speaks Slack's incoming-webhook JSON, for the events someone must see.

Events: ``drift``, ``estimated_drop`` (a performance drop, estimated or realised), ``bias_drift``,
``gate_rejected``, ``rollback`` and ``retrain_triggered``. Any receiver of Slack's JSON works
(Slack, Mattermost, Rocket.Chat, Teams workflows, a test server): the body is ``{"text": …,
"blocks": [a section in mrkdwn]}``.

Settings (:class:`AlertSettings`, ``MLOPS_<FIELD>`` each, as every setting the platform's
processes share through the environment): the URL, and the secret, which comes from the
environment only (a Kubernetes Secret in a pod). The secret is sent as a bearer token, or put
where the URL says ``{secret}`` (Slack puts its token in the path). It never reaches anything
written down: the body, every log line and every error pass through
:func:`mlops.governance.secrets.redact` with the secret added to the values it blanks.

Delivery retries a failed post (a transport error, 429 or 5xx) with exponential backoff; a
failure that persists is logged and the call returns False. An alert never fails the run
that raises it: :func:`send` does not raise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from mlops.governance.secrets import redact, secret_values
from mlops.settings import EnvSettings

Event = Literal["drift", "estimated_drop", "bias_drift", "gate_rejected", "rollback", "retrain_triggered"]
EVENTS: tuple[str, ...] = (
    "drift",
    "estimated_drop",
    "bias_drift",
    "gate_rejected",
    "rollback",
    "retrain_triggered",
)
SECRET_SLOT = "{secret}"
_LOG = logging.getLogger("mlops.alerts")


class AlertSettings(EnvSettings):
    """Where alerts go (``MLOPS_ALERT_WEBHOOK_URL``) and the secret that opens it; empty URL: no alerts."""

    env_subject: ClassVar[str] = "alert settings"

    alert_webhook_url: str = ""
    """Webhook URL taking Slack's JSON. May hold ``{secret}`` where the secret belongs. Empty: alerts off."""
    alert_webhook_secret: SecretStr = SecretStr("")
    """The webhook's secret, from the environment only (``MLOPS_ALERT_WEBHOOK_SECRET``): sent as
    ``Authorization: Bearer`` unless the URL has ``{secret}``; redacted from everything written."""
    alert_events: tuple[str, ...] = EVENTS
    """Events that are sent (comma-separated in the environment); the others are dropped."""
    alert_attempts: int = Field(default=3, ge=1, le=10)
    """Posts tried per alert before giving up (logged, never raised)."""
    alert_backoff_s: float = Field(default=0.5, ge=0)
    """Wait before the second try; doubled before each further one."""
    alert_timeout_s: float = Field(default=5.0, gt=0)
    """Seconds one post may take."""

    @field_validator("alert_events", mode="before")
    @classmethod
    def _known_events(cls, value: object) -> object:
        names = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
        unknown = [n for n in names if n not in EVENTS] if isinstance(names, list | tuple) else []
        if unknown:
            raise ValueError(f"unknown alert event(s) {unknown}; choose from {', '.join(EVENTS)}")
        return tuple(names) if isinstance(names, list) else names


def message(
    event: str, subject: str, summary: str, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Slack-compatible body: a one-line ``text`` (notification preview) and one mrkdwn section."""
    lines = [f"*[mlops] {event.replace('_', ' ')}*: `{subject}`", summary]
    lines += [f"• {key}: {value}" for key, value in (details or {}).items()]
    return {
        "text": f"[mlops] {event}: {subject}: {summary}"[:3000],
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:3000]}}],
    }


def send(
    event: Event,
    subject: str,
    summary: str,
    details: Mapping[str, Any] | None = None,
    settings: AlertSettings | None = None,
    post: Callable[..., Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Post one alert; True when the receiver took it. Never raises: a failure is logged (redacted)."""
    try:
        settings = settings or AlertSettings.from_env()
    except ValueError as exc:
        _LOG.warning("alert %s not sent: %s", event, redact(str(exc)))
        return False
    if not settings.alert_webhook_url or event not in settings.alert_events:
        return False
    secret = settings.alert_webhook_secret.get_secret_value()
    hidden = ([secret] if secret else []) + secret_values()
    body = redact(message(event, subject, summary, details), hidden)
    url = settings.alert_webhook_url
    headers = {}
    if SECRET_SLOT in url:
        url = url.replace(SECRET_SLOT, secret)
    elif secret:
        headers["Authorization"] = f"Bearer {secret}"
    if post is None:
        import httpx

        post = httpx.post
    problem = ""
    for attempt in range(settings.alert_attempts):
        if attempt:
            sleep(settings.alert_backoff_s * 2 ** (attempt - 1))
        try:
            answer = post(url, json=body, headers=headers, timeout=settings.alert_timeout_s)
        except Exception as exc:  # noqa: BLE001 - any transport failure is retried, then logged
            problem = f"{type(exc).__name__}: {exc}"
            continue
        status = int(answer.status_code)
        if 200 <= status < 300:
            return True
        problem = f"HTTP {status}: {str(answer.text)[:200]}"
        if status != 429 and status < 500:
            break  # the receiver refused this body; sending it again will not help
    _LOG.warning(
        "alert %s for %s not delivered to %s after %d attempt(s): %s",
        event,
        subject,
        redact(url, hidden),
        attempt + 1,
        redact(problem, hidden),
    )
    return False
