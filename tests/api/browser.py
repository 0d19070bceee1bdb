"""Headless Chromium driven over the DevTools protocol, for the dashboard's browser tests.

What a person's browser would do with a page, checked from the inside: every request it makes
(none may leave the machine; host names other than 127.0.0.1 do not even resolve), every console
error and uncaught exception, the DOM after scripts ran, and full-page screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLog:
    """What happened while a page loaded."""

    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads


class Browser:
    """One headless Chromium with one tab; use as a context manager."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 1000) -> None:
        browser = chromium()
        assert browser is not None, "chromium is not installed"
        profile.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--remote-debugging-port=0", f"--user-data-dir={profile}",
                f"--window-size={width},{height}", "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            self._attach(profile)
        except BaseException:
            self._process.kill()
            raise

    def _attach(self, profile: Path) -> None:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.is_file() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
            targets = json.load(response)
        page = next(t for t in targets if t["type"] == "page")
        self._closing = contextlib.ExitStack()
        self._socket: ClientConnection = self._closing.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=None)
        )
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.close()
        self._process.terminate()
        self._process.wait(timeout=20)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ask = self._next_id
        self._socket.send(json.dumps({"id": ask, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=60))
            if message.get("id") == ask:
                assert "error" not in message, message
                result: dict[str, Any] = message.get("result", {})
                return result
            self._events.append(message)

    def _wait_for(self, event: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self._events):
            left = deadline - time.monotonic()
            assert left > 0, f"no {event} within {timeout} s"
            self._events.append(json.loads(self._socket.recv(timeout=left)))

    def next_load(self, timeout: float = 60) -> PageLog:
        """Wait for the page to load again (a reload or navigation it starts by itself)."""
        self._events.clear()
        self._wait_for("Page.loadEventFired", timeout)
        return self.log()

    def open(self, url: str, settle_s: float = 0.5) -> PageLog:
        """Load ``url`` and wait for its load event (and ``settle_s`` more for scripts)."""
        self._events.clear()
        self.send("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired")
        self.evaluate(f"new Promise(done => setTimeout(done, {int(settle_s * 1000)}))")
        return self.log()

    def submit(self, form: str, values: dict[str, str], settle_s: float = 0.3) -> PageLog:
        """Fill the fields of the form ``form`` (a CSS selector) by name and press its button,
        as a person would; wait for the page it loads."""
        self._events.clear()
        # A checkbox is ticked by the value "true" and cleared by any other.
        fill = "".join(
            f"e = f.querySelector('[name={name}]'); if (e.type === 'checkbox') "
            f"e.checked = {json.dumps(value)} === 'true'; else e.value = {json.dumps(value)};"
            for name, value in values.items()
        )
        # Clicked after this evaluation returns: the navigation would cut its answer off.
        self.evaluate(
            f"(() => {{ const f = document.querySelector({json.dumps(form)}); let e; {fill}"
            "setTimeout(() => f.querySelector('button').click(), 0); })()"
        )
        self._wait_for("Page.loadEventFired")
        self.evaluate(f"new Promise(done => setTimeout(done, {int(settle_s * 1000)}))")
        return self.log()

    def wait_until(self, condition: str, timeout_s: float = 30) -> PageLog:
        """Wait until the JavaScript expression ``condition`` is true in the page (checked
        every 50 ms: what a script fills in after the load event; under a minute, the answer's
        own limit); what happened since the page was opened."""
        waited = self.evaluate(
            "new Promise(done => { const end = Date.now() + " + str(int(timeout_s * 1000)) + ";"
            f" (function check() {{ if ({condition}) done(true);"
            " else if (Date.now() > end) done(false); else setTimeout(check, 50); })(); })"
        )
        assert waited, f"not true within {timeout_s} s: {condition}"
        return self.log()

    def resize(self, width: int, height: int) -> None:
        """Lay pages out for a viewport ``width`` x ``height`` CSS pixels (a narrow window)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def log(self) -> PageLog:
        log = PageLog()
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent":
                log.requests.append(params["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                log.errors.append(str(params["exceptionDetails"]))
            elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
                log.errors.append(str(params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                log.errors.append(params["entry"]["text"] + " " + params["entry"].get("url", ""))
        return log

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def screenshot(self, path: Path, height: int | None = None) -> None:
        """A PNG of the page from the top, ``height`` pixels high (default: the whole page)."""
        metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "scale": 1}
        clip["height"] = min(height or metrics["height"], metrics["height"])
        shot = self.send(
            "Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(shot["data"]))
