"""Interop fixtures: the official TypeScript SDK (npm package pinned in package.json) must be installed.

A missing ``node`` or ``npm`` fails these tests loudly; they are never skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SDK_DIR = HERE / "node_modules" / "@agentclientprotocol" / "sdk"
TS_AGENT = HERE / "ts_agent.mjs"
TS_CLIENT = HERE / "ts_client.mjs"


@pytest.fixture(scope="session")
def node() -> str:
    """Path of ``node``, with the SDK installed in tests/interop/node_modules (``npm install`` once if absent)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("interop tests need node (>= 20) on PATH; install Node.js", pytrace=False)
    if not SDK_DIR.is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("interop tests need npm on PATH to install the TypeScript SDK", pytrace=False)
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0 or not SDK_DIR.is_dir():
            pytest.fail(f"npm install in {HERE} failed ({proc.returncode}):\n{proc.stderr}", pytrace=False)
    return node
