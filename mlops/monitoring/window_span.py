"""The span of the request log a drift check reads: ``since`` and ``until`` as ISO 8601 times, by
default the last :data:`DEFAULT_SPAN` up to now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mlops.monitoring.drift_settings import WindowSettings
from mlops.monitoring.request_window import WindowError

DEFAULT_SPAN = timedelta(hours=24)


def parse_instant(text: str, name: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise WindowError(f"{name} {text!r} is not an ISO 8601 time; use e.g. 2026-11-23T15:00:00Z") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def window_bounds(settings: WindowSettings, now: datetime | None = None) -> tuple[datetime, datetime]:
    end = parse_instant(settings.until, "until") if settings.until else (now or datetime.now(UTC))
    start = parse_instant(settings.since, "since") if settings.since else end - DEFAULT_SPAN
    if start >= end:
        raise WindowError(
            f"since {start.isoformat()} is not before until {end.isoformat()}; the window is empty"
        )
    return start, end
