"""The official Python SDK 1.0 (``agent-client-protocol`` 1.0.0rc3) as a peer: its own virtual environment, and the
agent and client scripts written on it (``py_sdk1_agent.py``, ``py_sdk1_client.py``).

acp-session's dev extra pins the SDK 0.12.1 (the v1 interop agent), so 1.0 lives apart, in
``tests/interop/.py-sdk-1.0/venv`` (ignored by git), installed from ``py_sdk1_requirements.txt`` by the first test
that needs it. Tests may run in parallel (pytest-xdist): the install runs under a file lock, and a worker that finds
it done (the marker holds the requirements it was made from) uses it as it is. A failed install fails the tests
that need it, with pip's message; they are never skipped.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "SDK1_AGENT",
    "SDK1_CLIENT",
    "Sdk1Server",
    "install_sdk1",
    "sdk1_agent",
    "sdk1_python",
    "sdk1_server",
    "start_sdk1_server",
]

HERE = Path(__file__).resolve().parent
HOME = HERE / ".py-sdk-1.0"
VENV = HOME / "venv"
REQUIREMENTS = HERE / "py_sdk1_requirements.txt"
MARKER = HOME / "installed-from.txt"
SDK1_AGENT = HERE / "py_sdk1_agent.py"
SDK1_CLIENT = HERE / "py_sdk1_client.py"
INSTALL_TIMEOUT = 600


def _python() -> Path:
    return VENV / "bin" / "python"


def _installed(wanted: str) -> bool:
    return _python().is_file() and MARKER.is_file() and MARKER.read_text(encoding="utf-8") == wanted


def install_sdk1() -> Path:
    """The Python of the SDK 1.0 environment, created (once, under a lock) if it is missing or out of date.

    Raises ``RuntimeError`` saying what failed."""
    wanted = REQUIREMENTS.read_text(encoding="utf-8")
    if _installed(wanted):
        return _python()
    HOME.mkdir(exist_ok=True)
    with open(HOME / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing: wait for it, then look again
        if _installed(wanted):
            return _python()
        MARKER.unlink(missing_ok=True)
        shutil.rmtree(VENV, ignore_errors=True)
        # A bare environment (no pip of its own: seeding one costs more CPU than the whole install), filled by this
        # Python's pip (``--python``) from the fully pinned list as it is (``--no-deps``: nothing to resolve).
        steps = [
            [sys.executable, "-m", "venv", "--without-pip", str(VENV)],
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(_python()),
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "-r",
                str(REQUIREMENTS),
            ],
        ]
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RuntimeError(f"{' '.join(step[:6])} ... failed: {exc}") from exc
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step[:6])} ... exited {done.returncode}:\n{done.stderr[-4000:]}")
        probe = subprocess.run(
            [str(_python()), "-c", "import acp.experimental.v2, acp.http.asgi, hypercorn"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if probe.returncode != 0:
            raise RuntimeError(f"the SDK 1.0 environment does not import:\n{probe.stderr[-4000:]}")
        MARKER.write_text(wanted, encoding="utf-8")
    return _python()


@pytest.fixture(scope="session")
def sdk1_python() -> str:
    """The SDK 1.0 environment's Python (installed by the first test that needs it)."""
    try:
        return str(install_sdk1())
    except RuntimeError as exc:
        pytest.fail(f"the official Python SDK 1.0 could not be installed into {VENV}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def sdk1_agent(sdk1_python: str) -> list[str]:
    """The command line of the SDK 1.0 agent over stdio (v1 and v2 behind its router)."""
    return [sdk1_python, str(SDK1_AGENT)]


@dataclass
class Sdk1Server:
    """The SDK's HTTP and WebSocket server (``acp.http.asgi`` under hypercorn) serving the scripted agent."""

    url: str
    process: subprocess.Popen[bytes]
    stderr: Any

    @property
    def ws_url(self) -> str:
        return "ws" + self.url.removeprefix("http")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.stderr.close()


def start_sdk1_server(python: str, *extra: str) -> Sdk1Server:
    """Start the server on a free port of 127.0.0.1 and read the URL it prints."""
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop): a file, not a pipe nobody reads
    process = subprocess.Popen(
        [python, str(SDK1_AGENT), "--listen", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    if not line.startswith("http://127.0.0.1:"):
        process.kill()
        process.wait(10)
        stderr.seek(0)
        pytest.fail(f"the SDK 1.0 server did not start: {line!r} {stderr.read().decode()[-2000:]}")
    return Sdk1Server(line, process, stderr)


@pytest.fixture
def sdk1_server(sdk1_python: str) -> Iterator[Sdk1Server]:
    server = start_sdk1_server(sdk1_python)
    try:
        yield server
    finally:
        server.stop()
