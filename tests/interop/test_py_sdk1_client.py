"""A v2 client written on the official Python SDK 1.0 (``acp.experimental.v2``, tests/interop/py_sdk1_client.py)
drives our reference agent: over stdio, and over the SDK's own remote client transports (``acp.http``,
``acp.ws``) against ``acp-reference-agent --listen`` served on asyncio and on trio.

Over Streamable HTTP the SDK 1.0 client POSTs its answers to the agent's requests without ``Acp-Session-Id``;
our server, like the TypeScript SDK 2.4.0 server, refuses them (400), so a permission request is never answered
there (a difference of the SDK, docs/interop.md). Everything else passes on every transport.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.remote_server.conftest import Server, start_server

from .py_sdk1 import SDK1_CLIENT, sdk1_python

__all__ = ["sdk1_python", "start_server"]

REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.agent"]
ROOT = Path(__file__).resolve().parents[2]
STEPS = [
    "initialize",
    "session/new",
    "prompt",
    "thought",
    "permission allowed",
    "permission rejected",
    "config option",
    "cancel a streaming turn",
    "cancel with a pending permission",
    "held prompt",
    "session/list",
    "session/close",
]
PERMISSION_STEPS = frozenset({"permission allowed", "permission rejected"})


def run_client(python: str, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    done = subprocess.run([python, str(SDK1_CLIENT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f"no summary from the SDK 1.0 client (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    steps = {step["name"]: step for step in summary["steps"]}
    assert list(steps) == STEPS
    return done.returncode, steps, done.stderr


def check_steps(steps: dict[str, dict[str, Any]], skip: frozenset[str] = frozenset()) -> None:
    """Every step passed with what the reference agent does (``skip``: steps judged by the caller)."""
    failed = {name: step.get("trace") or step["detail"] for name, step in steps.items() if not step["ok"]}
    assert set(failed) <= skip, failed
    detail = {name: step["detail"] for name, step in steps.items()}
    assert detail["initialize"] == {"agent": "acp-reference-agent", "protocolVersion": 2}
    assert detail["session/new"]["mode"] == "code"
    assert detail["prompt"] == "You said: what is two plus two"
    assert detail["thought"] == {"thought": "Let me think. The answer is 42.", "text": "42."}
    if "permission allowed" not in skip:
        assert detail["permission allowed"] == {
            "statuses": ["pending", "in_progress", "completed"],
            "stopReason": "end_turn",
        }
        assert detail["permission rejected"] == {"statuses": ["pending", "failed"], "stopReason": "end_turn"}
    assert detail["config option"] == {"mode": "ask", "refused": -32602, "text": "You asked: why"}
    assert detail["cancel a streaming turn"] == {"stopReason": "cancelled"}
    # The agent withdraws the question it asked with $/cancel_request; the SDK cancels the handler that held it.
    assert detail["cancel with a pending permission"] == {
        "stopReason": "cancelled",
        "withdrawn": 1,
        "statuses": ["pending", "cancelled"],
    }
    assert detail["held prompt"] == {
        "first": "".join(f"chunk {i}. " for i in range(1, 11)),
        "second": "You said: held one",
        "distinct": True,
    }
    assert detail["session/new"]["sessionId"] in detail["session/list"]
    assert detail["session/close"] == {"promptAfterClose": -32002}


def test_the_sdk_v2_client_drives_the_reference_agent_over_stdio(sdk1_python: str) -> None:
    code, steps, stderr = run_client(sdk1_python, "--", *REFERENCE_AGENT)
    check_steps(steps)
    assert code == 0, stderr


@pytest.mark.parametrize(("scheme", "backend"), [("http", "asyncio"), ("ws", "trio")])
def test_the_sdk_v2_client_over_its_remote_transports(
    sdk1_python: str, start_server: Callable[..., Server], scheme: str, backend: str
) -> None:
    """The official SDK's client (a subprocess) through each of its remote transports to our server.

    ``backend`` is the server's event loop: each transport is driven once, HTTP against an asyncio server and
    WebSocket against a trio one, so both loops serve the SDK; what the cases show is the SDK's client against the
    server's protocol handling, which the remote server's own tests run on both loops."""
    server = start_server(backend=backend)
    url = server.url if scheme == "http" else "ws" + server.url.removeprefix("http")
    code, steps, stderr = run_client(sdk1_python, "--url", url, "--step-timeout", "20" if scheme == "ws" else "4")
    if scheme == "ws":
        check_steps(steps)
        assert code == 0, stderr
        return
    # HTTP: the SDK's answer to the permission request carries no Acp-Session-Id and is refused, so those turns
    # wait for an answer that never comes (a step's time limit, 4 s here, ends them); every other step passes.
    check_steps(steps, skip=PERMISSION_STEPS)
    assert {name for name, step in steps.items() if not step["ok"]} == PERMISSION_STEPS
    assert all(steps[name]["detail"].startswith("TimeoutError") for name in PERMISSION_STEPS)
    # Refused: the two permission answers, and the -32800 the SDK sends for the question the agent withdrew.
    assert stderr.count("AcpHttpStatusError: HTTP 400: POST None failed") == 3, stderr
    assert code == 1
