"""Fixtures for ``acp-session serve``: a real host process on 127.0.0.1 (port 0) in front of a real agent process,
its URL (the first stdout line) and its events (``--json`` lines, read by a thread), stopped when the test ends;
its stderr must hold no traceback. Also the helpers the host tests share (``Asked``)."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import pytest
from anyio.abc import TaskGroup

from acp_session import Conversation
from tests.interop.conftest import node

__all__ = ["CLI", "REFERENCE_AGENT", "Asked", "Host", "node", "start_host", "turn_in"]

CLI = [sys.executable, "-m", "acp_session"]
REFERENCE_AGENT = f"{sys.executable} -m acp_conformance.agent"
DEADLINE = 60.0


@dataclass
class Host:
    url: str
    process: subprocess.Popen[str]
    stderr_path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def url_for(self, profile: str) -> str:
        """The host's URL for the test's profile: ``http`` (Streamable HTTP) or ``ws`` (WebSocket)."""
        return self.url if profile == "http" else self.url.replace("http://", "ws://")

    async def event(self, kind: str, count: int = 1, **fields: Any) -> dict[str, Any]:
        """``wait_for`` from async code (in a thread: the event loop goes on meanwhile)."""
        return await anyio.to_thread.run_sync(functools.partial(self.wait_for, kind, count, **fields))

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._cond:
                self.events.append(json.loads(line))
                self._cond.notify_all()

    def wait_for(self, kind: str, count: int = 1, **fields: Any) -> dict[str, Any]:
        """The ``count``-th event of ``kind`` with these fields (blocks until it came; a deadline proves a hang)."""

        def found() -> list[dict[str, Any]]:
            return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in fields.items())]

        with self._cond:
            ok = self._cond.wait_for(lambda: len(found()) >= count, timeout=DEADLINE)
            assert ok, f"no {kind} {fields} event: {self.events}\n{self.stderr()}"
            return found()[count - 1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


Request = TypeVar("Request")
Answer = TypeVar("Answer")


class Asked(Generic[Request, Answer]):
    """A client's handler for the requests the host relays (permission, elicitation): records each request,
    answers ``answer`` once ``go`` is set (never, when it is not), and counts withdrawals (the handler cancelled)."""

    def __init__(self, answer: Answer, *, wait: bool = False) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.withdrawn = 0
        self.came = anyio.Event()
        self.go = anyio.Event()
        if not wait:
            self.go.set()

    async def __call__(self, request: Request) -> Answer:
        self.requests.append(request)
        self.came.set()
        try:
            await self.go.wait()
        except anyio.get_cancelled_exc_class():
            self.withdrawn += 1
            raise
        return self.answer


def turn_in(tg: TaskGroup, conversation: Conversation, prompt: str) -> list[Any]:
    """Starts the turn of ``prompt`` in ``tg`` (the test goes on meanwhile); the list gets its reply when it ends."""
    replies: list[Any] = []

    async def turn() -> None:
        replies.append(await conversation.chat_to_completion(prompt))

    tg.start_soon(turn)
    return replies


@pytest.fixture
def start_host(tmp_path: Path) -> Iterator[Callable[..., Host]]:
    hosts: list[Host] = []

    def start(*args: str, agent: str = REFERENCE_AGENT, backend: str = "asyncio") -> Host:
        stderr_path = tmp_path / f"host-{len(hosts)}.stderr"
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(
                [*CLI, "serve", "--agent", agent, "--json", "--backend", backend, *args],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=tmp_path,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        host = Host(url, process, stderr_path)
        hosts.append(host)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/acp"), f"{url!r}\n{host.stderr()}"
        threading.Thread(target=host._read, daemon=True).start()
        return host

    yield start
    for host in hosts:
        host.stop()
    for host in hosts:
        assert "Traceback" not in host.stderr(), host.stderr()
