"""HTTP load from a separate process: wrk when installed, else a small multiprocess Python generator.

Both send the same POST body over keep-alive connections for a fixed time against
127.0.0.1 only and report requests/s, p50/p99 latency and non-200 answers. wrk
(Debian package ``wrk``) is preferred: the Python generator needs CPU itself and
on a 2-core machine measures the server lower than it is.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class LoadResult:
    concurrency: int
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    tool: str


def _check_local(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1":
        raise ValueError(f"load is only generated against 127.0.0.1, not {parts.hostname}")
    return parts.hostname, int(parts.port or 80), parts.path or "/"


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        raise ValueError(f"cannot read wrk latency {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_wrk(output: str, concurrency: int) -> LoadResult:
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", output, re.MULTILINE))
    total = re.search(r"(\d+) requests in", output)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if not (total and rps and "50" in percentiles and "99" in percentiles):
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    errors = int(non_2xx.group(1)) if non_2xx else 0
    if socket_errors:
        errors += sum(int(g) for g in socket_errors.groups())
    return LoadResult(
        concurrency,
        int(total.group(1)),
        float(rps.group(1)),
        _ms(percentiles["50"]),
        _ms(percentiles["99"]),
        errors,
        "wrk",
    )


def run_wrk(
    url: str, body: bytes, concurrency: int, duration_s: float, headers: dict[str, str]
) -> LoadResult:
    _check_local(url)
    # Decimal escapes carry any byte (binary tensor data too) inside a Lua string.
    escaped = "".join(f"\\{byte}" for byte in body)
    lines = ['wrk.method = "POST"', f'wrk.body = "{escaped}"']
    lines += [
        f'wrk.headers["{k}"] = "{v}"' for k, v in {"Content-Type": "application/json", **headers}.items()
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    try:
        command = [
            "wrk",
            f"-t{min(concurrency, 2)}",
            f"-c{concurrency}",
            f"-d{max(1, round(duration_s))}s",
            "--timeout",
            "10s",
            "--latency",
            "-s",
            script.name,
            url,
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=duration_s + 30, check=True)
    finally:
        Path(script.name).unlink()
    return parse_wrk(result.stdout, concurrency)


# --- Python fallback -------------------------------------------------------------------------------------


async def _connection(host: str, port: int, request: bytes, until: float, latencies: list[float]) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    errors = 0
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            # the header line itself: a binary reply's Inference-Header-Content-Length also ends in "content-length"
            length = int(re.search(rb"(?im)^content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if not head.startswith(b"HTTP/1.1 200"):
                errors += 1
    finally:
        writer.close()
    return errors


def _worker(
    host: str, port: int, request: bytes, connections: int, duration_s: float
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    started = time.perf_counter()
    until = started + duration_s

    async def main() -> int:
        counts = await asyncio.gather(
            *(_connection(host, port, request, until, latencies) for _ in range(connections))
        )
        return sum(counts)

    errors = asyncio.run(main())
    return latencies, errors, time.perf_counter() - started


def fan_out(
    worker: Callable[..., tuple[list[float], int, float]],
    head: tuple[Any, ...],
    concurrency: int,
    duration_s: float,
    generator: str,
    what: str,
) -> LoadResult:
    """Split ``concurrency`` over two spawned worker processes (``worker(*head, share, duration_s)``) and
    merge their latencies into one result; both generators (HTTP and gRPC) load the same way."""
    processes = min(concurrency, 2)
    shares = [concurrency // processes + (1 if i < concurrency % processes else 0) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        results = pool.starmap(worker, [(*head, share, duration_s) for share in shares])
    latencies = sorted(x for lat, _, _ in results for x in lat)
    elapsed = max(seconds for _, _, seconds in results)
    if not latencies:
        raise RuntimeError(f"no {what} completed")
    return LoadResult(
        concurrency,
        len(latencies),
        len(latencies) / elapsed,
        latencies[len(latencies) // 2] * 1e3,
        latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3,
        sum(err for _, err, _ in results),
        generator,
    )


def run_python(
    url: str, body: bytes, concurrency: int, duration_s: float, headers: dict[str, str]
) -> LoadResult:
    host, port, path = _check_local(url)
    extra = "".join(f"{k}: {v}\r\n" for k, v in {"Content-Type": "application/json", **headers}.items())
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    return fan_out(_worker, (host, port, request), concurrency, duration_s, "python", f"request to {url}")


def run_load(
    url: str, body: bytes, concurrency: int, duration_s: float, headers: dict[str, str] | None = None
) -> LoadResult:
    """Load ``url`` with ``concurrency`` keep-alive connections for ``duration_s`` seconds."""
    runner = run_wrk if wrk_available() else run_python
    return runner(url, body, concurrency, duration_s, headers or {})
