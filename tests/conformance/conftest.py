"""The interop tests' ``node`` fixture (node on PATH, the TypeScript SDK installed), for the client-mode run of
the official TypeScript SDK's client; ``zygote``, the warm parent the v2 mutation runs fork reference agents from."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.conftest import node

__all__ = ["node", "zygote"]


@pytest.fixture(scope="module")
def zygote() -> Iterator[str]:
    """A warm parent forking reference agents (``agent_zygote.py``), one per test module: the socket to reach it."""
    folder = tempfile.mkdtemp(prefix="acp-zygote-")
    socket = os.path.join(folder, "zygote.sock")
    here = Path(__file__).resolve().parent
    process = subprocess.Popen(
        [sys.executable, str(here / "agent_zygote.py"), socket], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield socket
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        os.unlink(socket)
        os.rmdir(folder)
