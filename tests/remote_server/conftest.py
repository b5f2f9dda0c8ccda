"""Fixtures for ``acp-reference-agent --listen``: a real server process on 127.0.0.1 (port 0), and its URL.

``start_server`` runs the agent with the given options, reads the URL from its first stdout line and stops the
process (SIGTERM, then SIGKILL) when the test ends; its stderr is kept for failure messages, and must hold no
traceback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from tests.interop.conftest import node

__all__ = ["Server", "node", "shared_server", "start_server", "tls_files"]

AGENT = [sys.executable, "-m", "acp_conformance.agent"]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def tls_files(directory: Path) -> tuple[str, str, str]:
    """(CA, certificate, key) PEM files in ``directory``: a certificate for 127.0.0.1 from a throwaway CA, for
    ``--tls-cert`` / ``--tls-key``, and the CA a client must be told to trust."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    paths = tuple(str(directory / name) for name in ("ca.pem", "cert.pem", "key.pem"))
    ca.cert_pem.write_to_path(paths[0])
    cert.cert_chain_pems[0].write_to_path(paths[1])
    cert.private_key_pem.write_to_path(paths[2])
    return paths[0], paths[1], paths[2]


class Servers:
    """The servers a test (or a module) started, their stderr files in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.started: list[Server] = []

    def start(self, *args: str, backend: str = "asyncio") -> Server:
        stderr_path = self.directory / f"server-{len(self.started)}.stderr"
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(
                [*AGENT, "--listen", "127.0.0.1:0", "--backend", backend, *args],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        server = Server(url, process, stderr_path)
        self.started.append(server)
        assert url.endswith("/acp"), f"no URL on the first stdout line ({url!r}); stderr:\n{server.stderr()}"
        return server

    def stop(self) -> None:
        for server in self.started:
            server.stop()
        for server in self.started:
            # Bad input gets a status code or a JSON-RPC error, never a traceback (hypercorn logs those it catches).
            assert "Traceback" not in server.stderr(), server.stderr()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers = Servers(tmp_path)
    yield servers.start
    servers.stop()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One plain ``--listen`` server for a whole module's tests that neither stop it nor need options: each test
    has sessions of its own, and a server start is about half the CPU of such a test. Its stderr is checked for
    tracebacks when the module ends."""
    servers = Servers(tmp_path_factory.mktemp("shared-server"))
    yield servers.start()
    servers.stop()
