"""Remote transport fixtures: the official TypeScript SDK's AcpServer (tests/interop/ts_server.mjs) on 127.0.0.1.

``ts_server`` starts it on port 0 and reads the URL it prints; ``TsServer.requests()`` is what it recorded of
each HTTP request (method, cookie, Authorization, the Acp headers), so tests check what the client sent.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import node

__all__ = ["TS_SERVER", "TsServer", "node", "shared_ts_server", "start_ts_server", "ts_server"]

TS_SERVER = Path(__file__).resolve().parent.parent / "interop" / "ts_server.mjs"


@dataclass
class TsServer:
    url: str
    process: subprocess.Popen[bytes]
    record: Path
    since: int = 0  # requests recorded before this view of a shared server began (``TsServer.view``)

    @property
    def ws_url(self) -> str:
        return "ws" + self.url.removeprefix("http")

    def requests(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        lines = [line for line in self.record.read_text().splitlines() if line.strip()]
        return [json.loads(line) for line in lines[self.since :]]

    def view(self) -> TsServer:
        """The same server, whose ``requests()`` are those recorded from now on (a test's own, on a server that
        several tests share)."""
        return dataclasses.replace(self, since=self.since + len(self.requests()))

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)


def start_ts_server(node: str, tmp_path: Path, *extra: str) -> TsServer:
    record = tmp_path / "ts_server_requests.jsonl"
    process = subprocess.Popen(
        [node, str(TS_SERVER), "--record", str(record), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    if not line.startswith("http://127.0.0.1:"):
        process.kill()
        stderr = process.stderr.read().decode() if process.stderr else ""
        pytest.fail(f"the TS server did not start: {line!r} {stderr[-2000:]}")
    return TsServer(line, process, record)


@contextmanager
def _running_ts_server(node: str, directory: Path) -> Iterator[TsServer]:
    """A TS server started in ``directory``, killed if still running at the end and its pipes closed."""
    server = start_ts_server(node, directory)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.kill()
        for stream in (server.process.stdout, server.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def shared_ts_server(node: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TsServer]:
    """One TS server for a whole module, for modules whose tests each open connections and sessions of their own
    and do not stop it (they override ``ts_server`` with ``shared_ts_server.view()``): a node start is most of
    such a test's CPU."""
    with _running_ts_server(node, tmp_path_factory.mktemp("ts-server")) as server:
        yield server


@pytest.fixture
def ts_server(node: str, tmp_path: Path) -> Iterator[TsServer]:
    with _running_ts_server(node, tmp_path) as server:
        yield server
