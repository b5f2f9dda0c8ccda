"""Interop fixtures: the official TypeScript SDK (npm package pinned in package.json) must be installed.

package.json pins the v2 SDK as ``@agentclientprotocol/sdk`` and the protocol-version-1 SDK (0.17.0) under the
alias ``acp-sdk-v1``, whose example agent (``TS_V1_AGENT``) the v1 interop tests drive.

A missing ``node`` or ``npm`` fails these tests loudly; they are never skipped.

The whole run's summary also says why any test was skipped (``pytest -q`` alone prints only a count), so a
healthy run can be told from one that lacked a tool.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.schema_source import TS_V1_AGENT, install_interop_packages

__all__ = ["PY_V1_AGENT", "TS_AGENT", "TS_CLIENT", "TS_V1_AGENT", "node", "ts_v1_agent"]

HERE = Path(__file__).resolve().parent
PY_V1_AGENT = HERE / "py_v1_agent.py"
TS_AGENT = HERE / "ts_agent.mjs"
TS_CLIENT = HERE / "ts_client.mjs"


@pytest.fixture(scope="session")
def node() -> str:
    """Path of ``node``, with both SDKs installed in tests/interop/node_modules (``npm install`` once if absent)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("interop tests need node (>= 20) on PATH; install Node.js", pytrace=False)
    problem = install_interop_packages()
    if problem is not None:
        pytest.fail(f"interop tests need the TypeScript SDK: {problem}", pytrace=False)
    return node


@pytest.fixture(scope="session")
def ts_v1_agent(node: str) -> list[str]:
    """The command line of the v1 TypeScript SDK's example agent (installed by ``node``)."""
    if not TS_V1_AGENT.is_file():
        pytest.fail(f"the v1 SDK's example agent is missing: {TS_V1_AGENT}", pytrace=False)
    return [node, str(TS_V1_AGENT)]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Why tests were skipped, one line per reason, unless ``-rs`` (or ``-ra``) already listed them."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped or any(c in terminalreporter.reportchars for c in "sSaA"):
        return
    reasons: Counter[str] = Counter()
    for report in skipped:
        longrepr = getattr(report, "longrepr", None)
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.write_sep("-", "skipped tests and why")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count} skipped: {reason}")
