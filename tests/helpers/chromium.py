"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages
ended by NUL on file descriptors 3 and 4), for tests of the pages the library writes. No websocket, no port.

``.ci/run`` installs the Debian package ``chromium``; ``CHROMIUM`` overrides the binary.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--remote-debugging-pipe",
)


def chromium_binary() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _onto_3_and_4(read: int, write: int) -> None:
    """In the child: the browser reads commands from fd 3 and writes answers to fd 4."""
    read, write = os.dup(read), os.dup(write)  # never clobbered by the first dup2, whatever their numbers
    os.dup2(read, 3)
    os.dup2(write, 4)


class Chromium:
    """One browser with one page; ``events`` collects every event the page's session reported."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="acp-chromium-")
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        os.set_inheritable(to_browser_read, True)
        os.set_inheritable(from_browser_write, True)
        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, to_browser_read, from_browser_write),  # 3 and 4 are the pipes once _onto_3_and_4 ran
            preexec_fn=lambda: _onto_3_and_4(to_browser_read, from_browser_write),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def __enter__(self) -> Chromium:
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        return self

    def __exit__(self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]) -> None:
        with contextlib.suppress(OSError, TimeoutError, RuntimeError):
            self.call("Browser.close", session=False)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._read)
        os.close(self._write)
        self._profile.cleanup()

    # -- the protocol -----------------------------------------------------------------------------------------

    def call(self, method: str, *, session: bool = True, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buffer += chunk
        frame, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(frame)
        return message

    def wait_for(self, method: str) -> dict[str, Any]:
        seen = next((e for e in self.events if e["method"] == method), None)
        while seen is None:
            event = self._receive()
            if "method" in event:
                self.events.append(event)
                if event["method"] == method:
                    seen = event
        return seen

    # -- conveniences -----------------------------------------------------------------------------------------

    def open(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[dict[str, Any]]:
        """Console errors, uncaught exceptions and error log entries (CSP violations among them)."""
        found = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            thrown = method == "Runtime.exceptionThrown"
            console = method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert")
            logged = method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error"
            if thrown or console or logged:
                found.append(params)
        return found
