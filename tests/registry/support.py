"""A local ACP registry for tests: archives holding a small agent, served over HTTP from 127.0.0.1.

The agent inside each archive is a shell script that runs the reference agent (``python -m acp_conformance.agent``)
with this interpreter, after writing what it sees of two variables the registry entry sets (one allowed,
one the registry's rules drop) next to itself, so a test can check the environment the agent got.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shlex
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

AGENT_SCRIPT = f"""#!/bin/sh
here=$(dirname "$0")
printf '%s\\n' "${{ACP_TEST_MARK-unset}}" "${{LD_PRELOAD-unset}}" > "$here/env-seen"
exec {shlex.quote(sys.executable)} -m acp_conformance.agent "$@"
"""


def _tar_bytes(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def file_member(name: str, data: bytes, mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def link_member(name: str, target: str, *, hard: bool = False) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info, None


def device_member(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info, None


def agent_tar() -> bytes:
    """``pkg/bin/agent`` (executable) in a .tar.gz, as real agents ship."""
    return _tar_bytes([file_member("pkg/bin/agent", AGENT_SCRIPT.encode(), 0o755)])


def hostile_tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    return _tar_bytes([file_member("pkg/bin/agent", AGENT_SCRIPT.encode(), 0o755), *members])


def agent_zip(extra: dict[str, bytes] | None = None, links: dict[str, str] | None = None) -> bytes:
    """``pkg/bin/agent`` in a zip, plus ``extra`` files and symbolic ``links`` (name -> target)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("pkg/bin/agent")
        info.external_attr = (0o100755 & 0xFFFF) << 16
        archive.writestr(info, AGENT_SCRIPT)
        for name, data in (extra or {}).items():
            archive.writestr(zipfile.ZipInfo(name), data)
        for name, target in (links or {}).items():
            link = zipfile.ZipInfo(name)
            link.external_attr = (0o120777 & 0xFFFF) << 16
            archive.writestr(link, target)
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Served:
    """Files served at ``url`` (a folder on disk); ``hits`` counts the requests per path."""

    def __init__(self, root: Path, url: str, hits: dict[str, int]) -> None:
        self.root = root
        self.url = url
        self.hits = hits

    def put(self, name: str, data: bytes) -> str:
        (self.root / name).write_bytes(data)
        return f"{self.url}/{name}"


@contextmanager
def serve(root: Path) -> Iterator[Served]:
    """An HTTP server on 127.0.0.1 (a free port) for the files in ``root``, stopped on exit."""
    root.mkdir(parents=True, exist_ok=True)
    hits: dict[str, int] = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            hits[self.path] = hits.get(self.path, 0) + 1
            super().do_GET()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(root, f"http://127.0.0.1:{server.server_address[1]}", hits)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused: the network is 'down')."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def binary_entry(
    agent_id: str, platform: str, url: str, digest: str | None, cmd: str = "./pkg/bin/agent", **extra: Any
) -> dict[str, Any]:
    target: dict[str, Any] = {"archive": url, "cmd": cmd, "env": {"ACP_TEST_MARK": "from-registry", "LD_PRELOAD": "x"}}
    if digest is not None:
        target["sha256"] = digest
    return {
        "id": agent_id,
        "name": f"Test agent {agent_id}",
        "version": extra.pop("version", "1.0.0"),
        "description": "the reference agent in an archive",
        "distribution": {"binary": {platform: target}},
        **extra,
    }


def write_registry(path: Path, *agents: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"version": "1.0.0", "agents": list(agents)}))
    return path


class RawServer:
    """A TCP server on 127.0.0.1 whose every connection is handed to ``behaviour(sock)`` in its own thread (for
    servers no real HTTP server would be: trickling, endless, stalling). ``sent`` counts body bytes written."""

    def __init__(self, behaviour: Any) -> None:
        import socket

        self.behaviour = behaviour
        self.sent = 0
        self.connections = 0
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: Any) -> None:
        try:
            sock.recv(65536)  # the request (one read is enough for a GET)
            self.behaviour(self, sock)
        except OSError:
            pass  # the client hung up: what a cut-off looks like from here
        finally:
            sock.close()

    def send(self, sock: Any, data: bytes, *, body: bool = True) -> None:
        sock.sendall(data)
        if body:
            self.sent += len(data)

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import contextlib
        import socket

        self.stop.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below (closing alone does not)
        self.listener.close()
        self.thread.join(5)


def trickle_body(total: int, interval: float = 1.0) -> Any:
    """Headers at once (Content-Length ``total``), then the body one byte per ``interval`` (slowloris)."""

    def behaviour(server: RawServer, sock: Any) -> None:
        import time

        server.send(sock, f"HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n".encode(), body=False)
        for _ in range(total):
            if server.stop.is_set():
                return
            server.send(sock, b"x")
            time.sleep(interval)

    return behaviour


def trickle_headers(interval: float = 1.0, lines: int = 60) -> Any:
    """A status line and headers sent one byte per ``interval``, never finished within the test."""

    def behaviour(server: RawServer, sock: Any) -> None:
        import time

        for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: 1\r\n" * lines:
            if server.stop.is_set():
                return
            server.send(sock, bytes([byte]), body=False)
            time.sleep(interval)

    return behaviour


def endless_body(chunk: int = 64 * 1024) -> Any:
    """A 200 with no Content-Length, then zeros for as long as the client reads."""

    def behaviour(server: RawServer, sock: Any) -> None:
        server.send(sock, b"HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n", body=False)
        block = b"\0" * chunk
        while not server.stop.is_set():
            server.send(sock, block)

    return behaviour


def stalled_after(data: bytes, part: int) -> Any:
    """The first ``part`` bytes of ``data`` (Content-Length all of it), then nothing until the server stops."""

    def behaviour(server: RawServer, sock: Any) -> None:
        server.send(sock, f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode(), body=False)
        server.send(sock, data[:part])
        server.stop.wait()

    return behaviour


def slow_body(data: bytes, pieces: int = 20, interval: float = 0.05) -> Any:
    """All of ``data`` (with its Content-Length), in ``pieces`` a little apart: a download that takes a while."""

    def behaviour(server: RawServer, sock: Any) -> None:
        import time

        server.send(sock, f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode(), body=False)
        step = max(1, len(data) // pieces + 1)
        for start in range(0, len(data), step):
            server.send(sock, data[start : start + step])
            time.sleep(interval)

    return behaviour


def tree_snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes | None]:
    """Every path below ``root`` (not under a ``skip`` folder) with its content (None for a folder or a link)."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/")[0] in skip:
            continue
        found[relative] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return found
