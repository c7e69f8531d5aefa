"""Open an HTML report in a real browser: Debian's headless Chromium, driven over its DevTools pipe.

One Chromium start per page (about a second or two): the page is loaded from its file, then read back
after the load event: a full-page screenshot, the count of figures in the DOM (``<img>``, ``<svg>``,
``<canvas>``), images the browser could not decode, ``<script>`` elements, and every error the page
raised. Errors are taken from the DevTools protocol, not from log text: an uncaught exception
(``Runtime.exceptionThrown``), ``console.error``/``console.assert`` (``Runtime.consoleAPICalled``) and the
browser's own error entries such as a resource that failed to load (``Log.entryAdded``, level error);
Chromium's ``--enable-logging`` prints every console message at INFO, so an error there cannot be told
from a log line. tests/test_browser_harness.py proves each kind is caught.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "bash infra/testing/install_chromium.sh"
FLAGS = (
    "--headless",
    "--no-sandbox",  # started as root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium calls out at start, and the closed network refuses the page's connections.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",  # DevTools on fds 3 (commands in) and 4 (replies and events out)
)
WIDTH = 1280
FIGURES = """({
  img: document.querySelectorAll("img").length,
  svg: document.querySelectorAll("svg").length,
  canvas: document.querySelectorAll("canvas").length,
  broken_img: [...document.images].filter((i) => !i.complete || i.naturalWidth === 0).length,
  script: document.querySelectorAll("script").length,
  table: document.querySelectorAll("table").length,
  title: document.title,
  text: document.body.innerText,
})"""


@dataclass
class Page:
    """What the browser made of the page."""

    screenshot: Path
    dom: dict[str, Any]
    errors: list[str] = field(default_factory=list)

    @property
    def figures(self) -> int:
        return int(self.dom["img"]) + int(self.dom["svg"]) + int(self.dom["canvas"])


def chromium() -> Path:
    """The browser, or a failed test that says how to install it (never a silent skip)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium; run `{INSTALL}`")
    return CHROMIUM


class _DevTools:
    """The DevTools protocol over Chromium's pipe: JSON messages, each ended by a NUL byte."""

    def __init__(self, process: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.process, self.to_browser, self.from_browser = process, to_browser, from_browser
        self.events: list[dict[str, Any]] = []
        self._buffer = b""
        self._id = 0

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed its DevTools pipe (exit {self.process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(message))

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params: Any) -> Any:
        self._id += 1
        command: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._message(deadline)
            if message.get("id") != self._id:
                self.events.append(message)
            elif "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            else:
                return message.get("result", {})

    def wait_for(self, method: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._message(deadline))


def _errors(events: list[dict[str, Any]]) -> list[str]:
    """Every error-level message among the page's events."""
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            values = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            errors.append(f"console.{params['type']}: " + " ".join(map(str, values)))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
    return errors


def _load(devtools: _DevTools, page: Path, screenshot: Path) -> Page:
    target = devtools.call("Target.createTarget", url="about:blank")["targetId"]
    session = devtools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        devtools.call(f"{domain}.enable", session)
    devtools.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=WIDTH,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    devtools.call("Page.navigate", session, url=page.resolve().as_uri())
    devtools.wait_for("Page.loadEventFired")
    dom = devtools.call("Runtime.evaluate", session, expression=FIGURES, returnByValue=True)["result"][
        "value"
    ]
    size = devtools.call("Page.getLayoutMetrics", session)["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": min(int(size["height"]), 16000), "scale": 1}
    shot = devtools.call(
        "Page.captureScreenshot", session, format="png", captureBeyondViewport=True, clip=clip
    )
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    return Page(screenshot, dom, _errors(devtools.events))


def open_page(page: Path, screenshot: Path, timeout: float = 60) -> Page:
    """Load ``page`` in a fresh headless Chromium (an empty profile of its own), screenshot it to ``screenshot``."""
    browser = chromium()
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    commands_read, commands_write = os.pipe()
    replies_read, replies_write = os.pipe()

    def on_fds_3_and_4() -> None:  # the pipe's ends where Chromium looks for them
        os.dup2(commands_read, 3)
        os.dup2(replies_write, 4)

    process = subprocess.Popen(
        [str(browser), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=on_fds_3_and_4,  # noqa: PLW1509 - one child at a time, in a test
        pass_fds=(3, 4),
    )
    os.close(commands_read)
    os.close(replies_write)
    devtools = _DevTools(process, commands_write, replies_read)
    try:
        return _load(devtools, page, screenshot)
    finally:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            devtools.call("Browser.close", timeout=5)
        os.close(commands_write)
        os.close(replies_read)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def report_page(page: Page, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the screenshot's path and what was counted, past pytest's capture, so a run's log shows them."""
    counts = {k: v for k, v in page.dom.items() if k not in ("text", "title")}
    with capsys.disabled():
        print(
            f"\n  screenshot: {page.screenshot}\n  in the DOM after load: {counts}; errors: {len(page.errors)}"
        )


def open_report(
    html: str, folder: Path, name: str, capsys: pytest.CaptureFixture[str], *, images: int, tables: int
) -> Page:
    """Write ``html`` to ``folder/name.html``, open it in Chromium, print what was found (``report_page``) and
    check what every report must show: no console or network errors, ``images`` figures all loaded,
    ``tables`` tables, no script, a PNG screenshot. The caller checks what is particular to its page."""
    path = folder / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    page = open_page(path, folder / f"{name}.png")
    report_page(page, capsys)
    assert page.errors == []
    assert page.dom["img"] == images and page.dom["broken_img"] == 0
    assert page.dom["table"] == tables and page.dom["script"] == 0
    assert page.screenshot.read_bytes().startswith(b"\x89PNG")
    return page


def headings(html: str, *tags: str) -> list[str]:
    """The text of each of ``tags`` (h2, th …), in page order."""
    from tests.support.page_shape import page_shape

    shape = page_shape(html)
    return [
        shape[k + 1][1] if shape[k + 1][0] == "text" else ""
        for k, e in enumerate(shape)
        if e[0] == "<" and e[1] in tags
    ]
