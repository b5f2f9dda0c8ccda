"""Security defaults: no approval without an explicit handler decision; nothing the agent sends makes the library
open files, run commands or follow URLs; the agent's environment is what the caller passes; stderr is bounded."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.schema.types import RequestPermissionRequest

from .support import agent_argv, hostile, responses, wait_for_responses

ROOT = Path(__file__).parents[2]
OPTIONS = [{"optionId": "yes", "name": "Yes", "kind": "allow_always"}]


def ask(rid: str, title: str) -> dict[str, Any]:
    params = {"sessionId": "s1", "title": title, "options": OPTIONS}
    return {"request": "session/request_permission", "id": rid, "params": params}


@pytest.mark.anyio
@pytest.mark.parametrize("handler", ["none", "returns None", "raises", "hangs until close"])
async def test_no_approval_without_an_explicit_decision(handler: str, tmp_path: Path) -> None:
    builder = ClientBuilder("security", "1.0")

    async def decide(request: RequestPermissionRequest) -> str | None:
        if handler == "raises":
            raise RuntimeError("no")
        if handler == "hangs until close":
            await anyio.sleep_forever()
        return None

    if handler != "none":
        builder.on_request_permission(decide)
    config = {"after_new": [ask("p1", "rm -rf /"), {"marker": "end"}]}
    async with hostile(tmp_path, config, builder) as (_client, _session, seen, log):
        await seen.marker("end").wait()
        if handler != "hangs until close":
            await wait_for_responses(log, 1)
    (reply,) = responses(log)
    assert "selected" not in json.dumps(reply) and "no" not in json.dumps(reply.get("error", {}))
    assert reply["result"] == {"outcome": {"outcome": "cancelled"}}  # a raising handler declines too


def test_agent_input_opens_no_file_runs_no_command_follows_no_url(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    link = {"type": "resource_link", "uri": f"file://{secret}", "name": "s"}
    script: list[dict[str, Any]] = [
        {"answer": {"messageId": "u1"}},
        {"update": {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": link}},
        {
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t1",
                "kind": "execute",
                "rawInput": {"command": f"cat {secret}"},
                "locations": [{"path": str(secret)}],
            }
        },
        {
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "a1",
                "content": {"type": "image", "mimeType": "image/png", "data": "", "uri": "http://127.0.0.1:9/x"},
            }
        },
        {"request": "fs/read_text_file", "id": "r1", "params": {"sessionId": "s1", "path": str(secret)}},
        {
            "request": "terminal/create",
            "id": "r2",
            "params": {"sessionId": "s1", "command": "touch", "args": ["/tmp/x"]},
        },
        {
            "request": "elicitation/create",
            "id": "r3",
            "params": {
                "sessionId": "s1",
                "mode": "url",
                "url": "http://127.0.0.1:9/login",
                "elicitationId": "e1",
                "message": "go",
            },
        },
        {
            "request": "session/request_permission",
            "id": "r4",
            "params": {"sessionId": "s1", "title": "x", "options": OPTIONS},
        },
        {"marker": "marker"},
    ]
    log = tmp_path / "agent.log"
    out = subprocess.run(
        [sys.executable, "-m", "tests.robustness.audit_client", str(log), json.dumps({"on_prompt": script})],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [["open", f"{log}.probe"]]
    by_id = {m["id"]: m for m in json.loads("[" + ",".join(log.read_text().splitlines()) + "]") if "method" not in m}
    assert by_id["r1"]["error"]["code"] == -32601 and by_id["r2"]["error"]["code"] == -32601
    assert by_id["r3"]["result"]["action"] == "cancel"  # url mode not registered: never followed
    assert by_id["r4"]["result"] == {"outcome": {"outcome": "cancelled"}}


@pytest.mark.anyio
async def test_agent_environment_is_exactly_what_the_caller_passes(tmp_path: Path) -> None:
    config = {"report_environ": True}
    only = {"ACP_ONLY_THIS": "1"}
    async with ClientBuilder().spawn(agent_argv("hostile_agent.py", tmp_path / "a.log", config), env=only) as client:
        meta = client.agent.initialize_response.meta  # type: ignore[union-attr]
    assert isinstance(meta, dict) and meta["environ"] == ["ACP_ONLY_THIS"]


@pytest.mark.anyio
async def test_default_environment_is_inherited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documented default: without ``env`` the agent inherits this process's environment (like subprocess)."""
    monkeypatch.setenv("ACP_INHERITED_MARK", "1")
    config = {"report_environ": True}
    async with ClientBuilder().spawn(agent_argv("hostile_agent.py", tmp_path / "a.log", config)) as client:
        meta = client.agent.initialize_response.meta  # type: ignore[union-attr]
    assert isinstance(meta, dict) and "ACP_INHERITED_MARK" in meta["environ"] and "PATH" in meta["environ"]


@pytest.mark.anyio
async def test_agent_stderr_is_bounded_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """64 MiB on stderr, half of it one line without a newline: memory stays far below that."""
    caplog.set_level(logging.WARNING, logger="acp_session.agent.stderr")  # default path: lines go to the logger
    config = {
        "after_new": [
            {"stderr": "x", "width": 1024 * 1024, "repeat": 32},
            {"stderr": "y" * 1000 + "\n", "repeat": 32 * 1024},
            {"marker": "end"},
        ]
    }
    tracemalloc.start()
    try:
        async with hostile(tmp_path, config) as (client, _session, seen, _log):
            with anyio.fail_after(30):
                await seen.marker("end").wait()
                await anyio.sleep(0.2)
            tail = client.rpc.transport.stderr_tail  # type: ignore[attr-defined]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tail) <= 20 and all(len(line) <= 64 * 1024 for line in tail)
    assert peak < 16 * 1024 * 1024, peak


def test_environment_default_is_documented() -> None:
    doc = (ROOT / "docs" / "robustness.md").read_text()
    assert "**The default is `inherit`**" in doc and "env_policy" in doc and '`"minimal"`' in doc
    assert os.environ  # the default being documented is the subprocess one: inherit os.environ
