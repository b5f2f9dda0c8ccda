"""Interop fixtures: the official TypeScript SDK (npm package pinned in package.json) must be installed.

package.json pins the v2 SDK as ``@agentclientprotocol/sdk`` and the protocol-version-1 SDK (0.17.0) under the
alias ``acp-sdk-v1``, whose example agent (``TS_V1_AGENT``) the v1 interop tests drive.

A missing ``node`` or ``npm`` fails these tests loudly; they are never skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SDK_DIR = HERE / "node_modules" / "@agentclientprotocol" / "sdk"
SDK_V1_DIR = HERE / "node_modules" / "acp-sdk-v1"
TS_V1_AGENT = SDK_V1_DIR / "dist" / "examples" / "agent.js"
PY_V1_AGENT = HERE / "py_v1_agent.py"
TS_AGENT = HERE / "ts_agent.mjs"
TS_CLIENT = HERE / "ts_client.mjs"


@pytest.fixture(scope="session")
def node() -> str:
    """Path of ``node``, with both SDKs installed in tests/interop/node_modules (``npm install`` once if absent)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("interop tests need node (>= 20) on PATH; install Node.js", pytrace=False)
    if not SDK_DIR.is_dir() or not SDK_V1_DIR.is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("interop tests need npm on PATH to install the TypeScript SDK", pytrace=False)
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0 or not SDK_DIR.is_dir() or not TS_V1_AGENT.is_file():
            pytest.fail(f"npm install in {HERE} failed ({proc.returncode}):\n{proc.stderr}", pytrace=False)
    return node


@pytest.fixture(scope="session")
def ts_v1_agent(node: str) -> list[str]:
    """The command line of the v1 TypeScript SDK's example agent (installed by ``node``)."""
    if not TS_V1_AGENT.is_file():
        pytest.fail(f"the v1 SDK's example agent is missing: {TS_V1_AGENT}", pytrace=False)
    return [node, str(TS_V1_AGENT)]
