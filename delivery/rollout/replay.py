"""Traffic for a rollout with no live traffic: replay held-out rows through the deployed endpoint.

A :class:`Replayer` is the ``traffic`` callable of
:meth:`~delivery.rollout.controller.RolloutController.run`: for one bake interval it posts
the rows, one V1 ``:predict`` request each with named features, in a loop, with the row's
index as ``X-Request-Key``. A held-out sample carries more than the model reads (the label,
protected attributes, ids) and V1 refuses unknown names, so before the first request the
rows are cut to the ``feature_names`` the server's model metadata lists (so a row lands on the same side every time at a given split).
It goes through the same server, router and metrics as live requests would.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from serving.routing.rollout_router import REQUEST_KEY_HEADER


@dataclass
class Replayer:
    """Posts ``rows`` (feature name → value) to ``url``'s V1 predict route for a given number of seconds."""

    url: str
    model_name: str
    rows: Sequence[Mapping[Any, Any]]
    auth_token: str = ""
    sent: int = 0
    failed: int = 0
    versions: Counter[str] = field(default_factory=Counter)
    """Which version answered, from each response's ``x-model-version`` header."""
    _next: int = 0
    _features_only: bool = False

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("nothing to replay: the held-out sample has no rows")
        self.rows = [{str(k): _json_value(v) for k, v in row.items()} for row in self.rows]

    def __call__(self, seconds: float) -> None:
        """Replay for ``seconds`` over one kept-alive connection (reopened after a failure)."""
        deadline = time.monotonic() + seconds
        parts = urllib.parse.urlsplit(self.url)
        path = f"{parts.path.rstrip('/')}/v1/models/{self.model_name}:predict"
        headers = {"Content-Type": "application/json"}
        if self.auth_token:
            headers["Authorization"] = f"Bearer {self.auth_token}"
        connection: http.client.HTTPConnection | None = None
        try:
            if not self._features_only:
                connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
                self._keep_features(
                    connection, f"{parts.path.rstrip('/')}/v2/models/{self.model_name}", headers
                )
            while time.monotonic() < deadline:
                if connection is None:
                    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
                index = self._next % len(self.rows)
                self._next += 1
                body = json.dumps({"instances": [self.rows[index]]})
                self.sent += 1
                try:
                    connection.request("POST", path, body, {**headers, REQUEST_KEY_HEADER: str(index)})
                    answer = connection.getresponse()
                    answer.read()
                except (OSError, http.client.HTTPException):
                    self.failed += 1
                    connection.close()
                    connection = None
                    continue
                if answer.status == 200:
                    self.versions[answer.getheader("x-model-version", "")] += 1
                else:
                    self.failed += 1
        finally:
            if connection is not None:
                connection.close()

    def _keep_features(
        self, connection: http.client.HTTPConnection, path: str, headers: dict[str, str]
    ) -> None:
        """Cut every row to the model's features (from its V2 metadata); a missing feature stays missing."""
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise ValueError(
                f"cannot read {self.model_name}'s metadata from {self.url} (HTTP {answer.status}): {body[:200]!r}"
            )
        names = json.loads(body)["parameters"]["feature_names"]
        self.rows = [{name: row[name] for name in names if name in row} for row in self.rows]
        self._features_only = True


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value
