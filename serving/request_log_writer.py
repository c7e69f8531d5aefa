"""The request log's writer process: ``python -m serving.request_log_writer <uri> <model-name>``.

Started by :class:`serving.request_log_process.WriterProcess`, one per server. It reads framed
batches of :class:`~serving.request_log_blocks.Block` from stdin, encodes each as Parquet and
writes it (:func:`serving.request_log_table.write_blocks`), and answers each batch with one JSON
line on stdout (:func:`serve_writes`). Encoding in its own process keeps the serving process's GIL free for
requests.

It ignores SIGINT and SIGTERM: a Ctrl-C or a pod's SIGTERM reaches the whole process
group, and the writer must outlive the server's shutdown flush. It exits when its stdin
closes, which happens when the server closes the pipe after the last flush, and also
when the server was killed (SIGKILL): whatever batch it had fully received is written first.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from typing import IO, Any

from serving.request_log_blocks import FRAME, decode_blocks
from serving.request_log_table import warm_up, write_blocks

log = logging.getLogger("serving.request_log")


def serve_writes(uri: str, model_name: str, source: IO[bytes], answers: IO[bytes]) -> int:
    """The writer process's loop: each batch read from ``source`` is written and answered with one
    JSON line on ``answers`` (``{"written": [...]}`` or ``{"error": ...}``); returns at end of input
    the number of batches received. A batch cut short (the server was killed while sending it) is dropped."""
    import mlops.data.features  # noqa: F401  (what a Block's spec is read into)
    from mlops import storage  # noqa: F401

    warm_up()
    answers.write(b'{"ready": true}\n')
    answers.flush()
    batches = 0
    while True:
        header = source.read(FRAME.size)
        if len(header) < FRAME.size:
            return batches
        (size,) = FRAME.unpack(header)
        payload = source.read(size)
        if len(payload) < size:
            log.error("the server ended while sending a batch of %d bytes; it is lost", size)
            return batches
        batches += 1
        try:
            reply: dict[str, Any] = {"written": write_blocks(uri, model_name, decode_blocks(payload))}
        except Exception as exc:  # reported to the server, which logs and counts it
            reply = {"error": f"cannot write to {uri}: {type(exc).__name__}: {exc}"}
        try:
            answers.write(json.dumps(reply).encode() + b"\n")
            answers.flush()
        except BrokenPipeError:  # the server was killed while this batch was written: it is on disk
            return batches


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m serving.request_log_writer <uri> <model-name>", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    uri, model_name = argv
    serve_writes(uri, model_name, sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
