"""Feast's own commands on a feature repository: ``feast apply``, ``feast materialize(-incremental)``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mlops.features.config import FeastSettings
from mlops.features.environment import FeastEnvironment, FeastError
from mlops.features.repository import STORE_FILE


def check_repo(repo: Path) -> Path:
    repo = repo.expanduser().resolve()
    if not (repo / STORE_FILE).is_file():
        raise FeastError(
            f"{repo} is not a feature repository (no {STORE_FILE}); write one with `mlops features init`"
        )
    return repo


def apply(env: FeastEnvironment, repo: Path, settings: FeastSettings) -> str:
    """Registers the repository's definitions (entities, sources, views, services) in its registry."""
    repo = check_repo(repo)
    return env.run(
        [str(env.feast), "apply"],
        cwd=repo,
        timeout_s=settings.command_timeout_s,
        what=f"feast apply in {repo}",
    )


def materialize(
    env: FeastEnvironment,
    repo: Path,
    settings: FeastSettings,
    end: datetime | None = None,
    start: datetime | None = None,
) -> str:
    """Loads the offline values up to ``end`` (default now) into the online store: from where the last run
    stopped (``materialize-incremental``), or over ``[start, end]`` when a start is given."""
    repo = check_repo(repo)
    end = end or datetime.now(UTC)
    if start is not None and start >= end:
        raise FeastError(f"--start {start.isoformat()} is not before --end {end.isoformat()}")
    args = [str(env.feast), "materialize-incremental", iso(end)]
    if start is not None:
        args = [str(env.feast), "materialize", iso(start), iso(end)]
    return env.run(args, cwd=repo, timeout_s=settings.command_timeout_s, what=f"feast {args[1]} in {repo}")


def iso(moment: datetime) -> str:
    """The ISO form Feast's CLI parses; a naive time is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def parse_time(text: str, option: str) -> datetime:
    """A CLI time (``2024-05-01``, ``2024-05-01T12:00``, with or without zone; naive is UTC)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise FeastError(
            f"{option} {text!r} is not an ISO date/time such as 2024-05-01 or 2024-05-01T12:00:00"
        ) from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
