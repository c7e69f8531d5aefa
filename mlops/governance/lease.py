"""A short exclusive lease beside the audit trail: one holder at a time for a read-then-write on the registry.

Two pipeline runs promoting at once each read the champion, then move it: without a lease both
read version 1, and the history records two moves *from* 1 (a fork; the version replaced first
never learns it was replaced). The lease is one object created only if absent
(:func:`mlops.storage.create_bytes`: S3 ``If-None-Match: *``, a hard link locally), beside the
trail (``<trail>.leases/<name>.json``), so it works wherever the audit trail does, on a cluster
too. A holder killed mid-way leaves it behind: it is broken after ``stale_s`` seconds.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from mlops.governance.audit import AuditError, audit_location


@contextmanager
def lease(
    name: str,
    *,
    workspace_root: str | Path | None = None,
    tracking_uri: str = "",
    wait_s: float = 120.0,
    stale_s: float = 300.0,
) -> Iterator[None]:
    """Hold the lease ``name`` for the block; wait up to ``wait_s`` for another holder to let go."""
    from mlops import storage

    uri = f"{audit_location(workspace_root, tracking_uri).rstrip('/')}.leases/{name}.json"
    deadline = time.monotonic() + wait_s
    while True:
        body = {"holder": f"{socket.gethostname()}:{os.getpid()}", "since": time.time()}
        try:
            storage.create_bytes(uri, json.dumps(body).encode())
            break
        except storage.AlreadyExists:
            _break_if_stale(uri, stale_s)
            if time.monotonic() > deadline:
                raise AuditError(
                    f"lease {uri} is held by another run for over {wait_s:.0f} s; wait for it to finish, or "
                    f"delete {uri} if its holder is gone"
                ) from None
            time.sleep(0.05)
    try:
        yield
    finally:
        storage.delete(uri)


def _break_if_stale(uri: str, stale_s: float) -> None:
    from mlops import storage

    try:
        held = json.loads(storage.read_bytes(uri))
    except (storage.ObjectNotFound, ValueError):
        return  # released (or half-written) meanwhile: try again
    if time.time() - float(held.get("since", 0)) > stale_s:
        since = datetime.fromtimestamp(float(held.get("since", 0)), UTC).isoformat()
        print(f"breaking stale lease {uri} held by {held.get('holder')} since {since}", flush=True)
        storage.delete(uri)
