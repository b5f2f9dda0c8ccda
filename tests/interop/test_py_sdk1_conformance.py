"""``acp-conformance --url`` against the official Python SDK 1.0's own server (``acp.http.asgi`` under hypercorn,
serving tests/interop/py_sdk1_agent.py behind the SDK's protocol router), over Streamable HTTP and WebSocket.

The agent rows all pass (the scripted agent follows the rules, tests/interop/py_sdk1_agent.toml gives its
scenarios); the transport rows report what the SDK's server does differently, exactly:

* ``http-batch`` passes with ``HTTP 501``: the SDK refuses a batch as the RFD's text says (Not Implemented), where
  the TypeScript SDK server and ours answer 400 with -32600; both are refusals, the report says which;
* ``http-session-header`` fails: a session-scoped POST whose ``Acp-Session-Id`` names a session the connection
  does not have is answered 404 (unknown session), not 400; and the server never compares the header with
  ``params.sessionId`` at all, so a prompt for one session sent with another known session's header is taken
  (202; checked below with raw requests);
* ``http-stream-dropped`` warns (ADVISORY): a connection whose event stream was dropped lives on, as the TS
  server's does;
* ``http-cookies`` is not applicable: the server sets no cookie.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_conformance.runner.checks_remote import remote_checks_for

from .py_sdk1 import Sdk1Server, sdk1_python, sdk1_server

__all__ = ["sdk1_python", "sdk1_server"]

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).resolve().parent / "py_sdk1_agent.toml"
CONFORMANCE = [sys.executable, "-m", "acp_conformance.runner"]


def conformance(url: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [*CONFORMANCE, "--url", url, "--json", "--timeout", "8", "--scenarios", str(SCENARIOS)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"no JSON report (exit {done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done.returncode, report


def statuses(report: dict[str, Any]) -> dict[str, str]:
    """Each row's status, WARN for a PASS with a warning."""
    return {c["id"]: "WARN" if c["status"] == "PASS" and c["warnings"] else c["status"] for c in report["checks"]}


@pytest.mark.parametrize("scheme", ["http", "ws"])
def test_the_sdk_server_differs_only_where_recorded(sdk1_server: Sdk1Server, scheme: str) -> None:
    code, report = conformance(sdk1_server.url if scheme == "http" else sdk1_server.ws_url)
    assert report["protocolVersion"] == 2 and report["problem"] is None
    assert "py-sdk1-agent" in json.dumps(report)
    found = statuses(report)
    profile = "http" if scheme == "http" else "websocket"
    transport = {c.id for c in remote_checks_for(profile)}
    expected_transport = {row: "PASS" for row in transport}
    if scheme == "http":
        expected_transport |= {"http-session-header": "FAIL", "http-stream-dropped": "WARN", "http-cookies": "SKIPPED"}
    assert {row: found[row] for row in transport} == expected_transport
    agent_rows = {row: status for row, status in found.items() if row not in transport}
    assert set(agent_rows.values()) <= {"PASS", "SKIPPED"}, agent_rows  # SKIPPED: not applicable
    for row in ("permission-flow", "cancel-turn", "cancel-permission", "held-prompt-cancel-request", "resume"):
        assert agent_rows[row] == "PASS", row  # the scenarios ran through the SDK's transport
    checks = {c["id"]: c for c in report["checks"]}
    if scheme == "http":
        assert checks["http-batch"]["message"] == "HTTP 501"  # the RFD's answer; TS and ours say 400
        assert "answered HTTP 404, not 400" in checks["http-session-header"]["message"]
        # Its 404 for an unknown session comes before the agent: deleting one is not observable over HTTP.
        again = checks["session-delete-again"]
        assert again["status"] == "SKIPPED" and "refused session/delete of an unknown one with 404" in again["message"]
        assert code == 1  # a MANDATORY row failed
    else:
        assert code == 0


@pytest.mark.anyio
async def test_the_sdk_server_takes_a_known_but_mismatched_session_header(sdk1_server: Sdk1Server) -> None:
    """Raw requests: the header is only looked up, never compared with ``params.sessionId``."""
    async with httpx.AsyncClient(timeout=10) as http:
        init = {"protocolVersion": 2, "info": {"name": "raw", "version": "1"}}
        reply = await http.post(
            sdk1_server.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        )
        assert reply.status_code == 200
        headers = {"acp-connection-id": reply.headers["acp-connection-id"]}
        async with http.stream("GET", sdk1_server.url, headers={**headers, "accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            sessions = []
            for rid in (1, 2):
                new = {"jsonrpc": "2.0", "id": rid, "method": "session/new", "params": {"cwd": "/tmp"}}
                assert (await http.post(sdk1_server.url, json=new, headers=headers)).status_code == 202
                async for line in lines:
                    if line.startswith("data:"):
                        sessions.append(json.loads(line[5:])["result"]["sessionId"])
                        break
            first, second = sessions
            prompt = {"sessionId": first, "prompt": [{"type": "text", "text": "hi"}]}
            message = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}
            mismatched = await http.post(sdk1_server.url, json=message, headers={**headers, "acp-session-id": second})
            unknown = await http.post(sdk1_server.url, json=message, headers={**headers, "acp-session-id": "nope"})
            missing = await http.post(sdk1_server.url, json=message, headers=headers)
    # The TypeScript SDK server (and ours) answer a mismatch 400 before anything else.
    assert (mismatched.status_code, unknown.status_code, missing.status_code) == (202, 404, 400)
