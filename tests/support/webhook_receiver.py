"""A local HTTP server that receives webhook posts (a real socket, real HTTP), for the alert tests.

It records every post (path, headers, JSON body) and answers the status codes it is told to,
one per post, then 200: ``failures=(503, 503)`` fails the first two posts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Receiver:
    url: str
    posts: list[Received] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)


@contextmanager
def webhook_receiver(failures: tuple[int, ...] = ()) -> Iterator[Receiver]:
    receiver = Receiver("", failures=list(failures))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            receiver.posts.append(Received(self.path, dict(self.headers), body))
            status = receiver.failures.pop(0) if receiver.failures else 200
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"no")

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
