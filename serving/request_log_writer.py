"""The request log's writer process: ``python -m serving.request_log_writer <uri> <model-name>``.

Started by :class:`serving.request_log.WriterProcess`, one per server. It reads framed
batches of :class:`~serving.request_log.Block` from stdin, encodes each as Parquet and
writes it (:func:`serving.request_log.write_blocks`), and answers each batch with one JSON
line on stdout. Encoding in its own process keeps the serving process's GIL free for
requests.

It ignores SIGINT and SIGTERM: a Ctrl-C or a pod's SIGTERM reaches the whole process
group, and the writer must outlive the server's shutdown flush. It exits when its stdin
closes, which happens when the server closes the pipe after the last flush, and also
when the server was killed (SIGKILL): whatever batch it had fully received is written first.
"""

from __future__ import annotations

import logging
import signal
import sys

from serving.request_log import serve_writes


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
