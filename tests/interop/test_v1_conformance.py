"""acp-conformance's v1 check set against the v1 agents built on the official SDKs: the TS SDK 0.17.0 example
agent and ``py_v1_agent.py`` (Python SDK 0.12.1). Without a scenario file nothing fails. With one, each fails
exactly one check, for a defect of its own that docs/conformance.md explains:

- the TS example answers ``end_turn`` when the turn is cancelled while its permission request is pending (the
  v1 docs want ``cancelled``; tests/interop/V1_AGENTS.md recorded it before this runner did), and sends no
  ``agentInfo`` (a SHOULD: ``agent-info``, ADVISORY, fails with or without scenarios);
- ``py_v1_agent.py --ignore-capabilities`` calls ``fs/*`` and ``terminal/*`` without looking at the client's
  capabilities.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.doc_tables import documented

from .conftest import PY_V1_AGENT

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
V1_TABLE = "### Results: protocol v1 agents"


def _run(agent: str, *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", "--agent", agent, "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)


def _results(report: dict[str, Any]) -> dict[str, str]:
    return {check["id"]: check["result"] for check in report["checks"]}


@pytest.fixture(scope="module")
def ts_example(node: str) -> str:
    agent = HERE / "node_modules" / "acp-sdk-v1" / "dist" / "examples" / "agent.js"
    return f"{node} {agent}"


def test_v1_run_against_the_ts_sdk_example_agent(ts_example: str) -> None:
    code, report = _run(ts_example)
    assert code == 0, report
    assert report["protocolVersion"] == 1 and report["checkSet"] == "v1"
    results = _results(report)
    # It sends no agentInfo: a SHOULD of the v1 docs (ACP-INIT-004), an ADVISORY check that never decides.
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] == "fail"}
    assert failed == {
        "agent-info": "initialization.mdx#implementation-information: agentInfo should give the agent's name and "
        "version, got None"
    }
    assert report["verdict"]["verdict"] == "conformant"
    assert report["requirements"]["ACP-INIT-004"]["status"] == "FAIL"
    assert results == documented(V1_TABLE, "TS SDK 0.17.0 example")


def test_ts_sdk_example_agent_with_scenarios(ts_example: str) -> None:
    code, report = _run(ts_example, "--scenarios", str(HERE / "ts_v1_agent.toml"))
    assert code == 1
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] == "fail"}
    assert set(failed) == {"cancel-permission", "agent-info"}
    assert failed["cancel-permission"] == "ACP1-017: after session/cancel the prompt ended with 'end_turn'"
    assert report["requirements"]["ACP-CANCEL-001"]["status"] == "FAIL"
    results = _results(report)
    for check_id in ("cancel-turn", "cancel-updates-first", "permission-request", "tool-call"):
        assert results[check_id] == "pass", check_id
    # Its turns make no fs/* call even with the capability: nothing gated to judge.
    assert results["fs-gated"] == "n/a"
    assert results == documented(V1_TABLE, "TS example + scenarios")


def test_v1_run_against_the_python_sdk_agent() -> None:
    code, report = _run(f"{sys.executable} {PY_V1_AGENT}")
    assert code == 0, report
    results = _results(report)
    assert {cid for cid, result in results.items() if result in ("fail", "warn")} == set()
    # It advertises loadSession (replay checked) and images (a prompt with one is answered).
    for check_id in ("session-load", "load-replay", "load-replay-first", "load-result-object", "prompt-image"):
        assert results[check_id] == "pass", check_id
    assert results == documented(V1_TABLE, "Python SDK agent")


def test_python_sdk_agent_with_scenarios() -> None:
    code, report = _run(f"{sys.executable} {PY_V1_AGENT}", "--scenarios", str(HERE / "py_v1_agent.toml"))
    assert code == 0, report
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] == "fail"}
    assert failed == {}
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["fs-gated"]["result"] == "pass" and checks["terminal-gated"]["result"] == "pass"
    assert checks["client-fs"]["message"] == "fs/read_text_file ok"
    assert checks["client-terminals"]["message"] == (
        "terminal/create ok, terminal/wait_for_exit ok, terminal/output ok, terminal/release ok"
    )
    assert _results(report) == documented(V1_TABLE, "Python SDK agent + scenarios")


def test_python_sdk_agent_ignoring_client_capabilities_fails_exactly_that_check() -> None:
    """The same agent with ``--ignore-capabilities`` calls ``fs/*`` and ``terminal/*`` even though the runner
    advertises neither in those checks: ``fs-gated`` and ``terminal-gated`` fail (ACP-CLIENTCAP-001/002), nothing
    else does."""
    agent = f"{sys.executable} {PY_V1_AGENT} --ignore-capabilities"
    code, report = _run(agent, "--scenarios", str(HERE / "py_v1_agent.toml"))
    assert code == 1
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] == "fail"}
    assert list(failed) == ["fs-gated", "terminal-gated"]
    assert failed["fs-gated"].startswith("file-system.mdx#checking-support: fs/read_text_file called")
    assert failed["terminal-gated"].startswith("terminals.mdx#checking-support: terminal/create called")
    kit = report["requirements"]
    assert kit["ACP-CLIENTCAP-001"]["status"] == "FAIL" and kit["ACP-CLIENTCAP-002"]["status"] == "FAIL"
