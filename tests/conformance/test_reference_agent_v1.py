"""The reference agent speaks protocol v1 as well as v2: the version is negotiated before the params' shape is
judged, a v1 client gets v1's methods and updates, and the checks of both versions pass.

Raw JSON lines over real pipes for the wire shapes (acpx's own initialize included), the library's v1 client for
whole turns (files and commands through the client), and ``acp-conformance --protocol 1`` (test_conformance.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from acp_session import ClientBuilder

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
# What acpx 0.19.1 sends first (tests/interop/test_acpx.py drives acpx itself).
ACPX_INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    "clientInfo": {"name": "acpx", "version": "0.19.1"},
}


class Wire:
    """The agent process spoken to in raw JSON lines; requests the agent sends are answered by ``answer``."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.buffer = b""
        self.next_id = 0
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            self.buffer += await self.process.stdout.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        self.seen.append(message)
        return message

    async def call(self, method: str, params: Any, answer: Any = None) -> dict[str, Any]:
        """Send a request; return its response (agent requests on the way get ``answer(message)``)."""
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        with anyio.fail_after(20):
            while True:
                message = await self.read()
                if "method" in message and "id" in message:
                    assert answer is not None, message
                    await self.send({"id": message["id"], "result": answer(message)})
                elif message.get("id") == self.next_id and "method" not in message:
                    return message

    def updates(self) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.seen if m.get("method") == "session/update"]


async def _wire(*extra: str) -> Any:
    return await anyio.open_process([*AGENT, *extra])


@pytest.mark.anyio
async def test_a_v1_initialize_gets_version_1_and_a_working_session(tmp_path: Path) -> None:
    async with await _wire() as process:
        wire = Wire(process)
        answer = (await wire.call("initialize", ACPX_INITIALIZE))["result"]
        assert answer["protocolVersion"] == 1
        assert answer["agentInfo"]["name"] == "acp-reference-agent" and "info" not in answer
        caps = answer["agentCapabilities"]
        assert caps["loadSession"] is True and caps["promptCapabilities"]["embeddedContext"] is True
        new = (await wire.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]
        session_id = new["sessionId"]
        assert new["modes"]["currentModeId"] == "code"
        assert {m["id"] for m in new["modes"]["availableModes"]} == {"ask", "code", "review"}
        # No boolean option: the client did not advertise session.configOptions.boolean (ACP-CONFIG-003).
        assert [(o["id"], o["type"]) for o in new["configOptions"]] == [("mode", "select")]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
        done = await wire.call("session/prompt", prompt)
        assert done["result"] == {"stopReason": "end_turn"}  # v1 ends the turn with the prompt's answer
        kinds = [u["sessionUpdate"] for u in wire.updates()]
        assert "agent_message_chunk" in kinds
        assert not {"state_update", "user_message", "agent_message"} & set(kinds)  # v2's words only
        text = "".join(u["content"]["text"] for u in wire.updates() if u["sessionUpdate"] == "agent_message_chunk")
        assert text.startswith("Hello! I am the ACP reference agent.")
        assert all("messageId" not in u for u in wire.updates())

        # /tool through the client's fs/* (advertised): a read (missing file: -32002), then a write.
        calls: list[dict[str, Any]] = []
        wire.seen.clear()
        tool_prompt = {**prompt, "prompt": [{"type": "text", "text": "/tool"}]}
        await wire.send({"id": 100, "method": "session/prompt", "params": tool_prompt})
        with anyio.fail_after(20):
            while True:
                message = await wire.read()
                if message.get("method") == "fs/read_text_file":
                    calls.append(message)
                    await wire.send({"id": message["id"], "error": {"code": -32002, "message": "no such file"}})
                elif message.get("method") == "fs/write_text_file":
                    calls.append(message)
                    await wire.send({"id": message["id"], "result": {}})
                elif message.get("id") == 100:
                    break
        assert message["result"] == {"stopReason": "end_turn"}
        assert [c["method"] for c in calls] == ["fs/read_text_file", "fs/write_text_file"]
        path = str(tmp_path / "example.txt")
        assert calls[1]["params"] == {"sessionId": session_id, "path": path, "content": "new\n"}
        assert not (tmp_path / "example.txt").exists()  # the client wrote it (here: nowhere), not the agent
        tool = [u for u in wire.updates() if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert tool[0]["sessionUpdate"] == "tool_call" and tool[0]["title"] == "Editing example.txt"
        assert all(u["sessionUpdate"] == "tool_call_update" for u in tool[1:])
        diffs = [c for u in tool for c in u.get("content") or [] if c["type"] == "diff"]
        assert {"type": "diff", "path": path, "oldText": None, "newText": "new\n"} in diffs
        assert tool[-1]["status"] == "completed"
        assert process.stdin is not None
        await process.stdin.aclose()


@pytest.mark.anyio
async def test_version_negotiation_and_malformed_initialize() -> None:
    cases: list[tuple[tuple[str, ...], Any, Any]] = [
        ((), {"protocolVersion": "one"}, -32602),
        ((), [1], -32602),
        ((), {"protocolVersion": 2, "capabilities": {}}, -32602),  # v2 without its required info
        ((), {"protocolVersion": 0, "info": {"name": "c", "version": "1"}}, -32022),
        ((), {"protocolVersion": 7, "info": {"name": "c", "version": "1"}}, 2),  # newer, v2-shaped: the newest
        ((), {"protocolVersion": 7, "clientInfo": {"name": "c", "version": "1"}}, 1),  # newer, v1-shaped
        ((), {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, 2),
        (("--protocol-versions", "2"), ACPX_INITIALIZE, -32022),  # a v2-only agent
    ]
    for extra, params, expected in cases:
        async with await _wire(*extra) as process:
            wire = Wire(process)
            answer = await wire.call("initialize", params)
            if expected in (1, 2):
                assert answer["result"]["protocolVersion"] == expected, (params, answer)
            else:
                assert answer["error"]["code"] == expected, (params, answer)
                data = answer["error"]["data"]
                supported = data.get("supportedVersions", data.get("supported"))
                assert supported == ([2] if extra else [1, 2]), (params, answer)  # the error names the versions
            assert process.stdin is not None
            await process.stdin.aclose()


@pytest.mark.anyio
async def test_whole_v1_turns_through_the_library_client(tmp_path: Path) -> None:
    builder = ClientBuilder("test", "1").protocol_versions(1).with_file_system().with_terminals()
    async with builder.spawn(AGENT) as client:
        assert client.protocol.version == 1
        conversation = await client.start_conversation(str(tmp_path))
        response = await conversation.chat_to_completion("/tool", timeout=20)
        assert response.stop_reason == "end_turn" and response.text == "I changed one line in example.txt."
        assert (tmp_path / "example.txt").read_text() == "new\n"  # through the library's file system provider
        response = await conversation.chat_to_completion("/terminal", timeout=20)
        assert response.text == "The command printed: 4 passed"  # run by the library's terminal provider
        response = await conversation.chat_to_completion("/edit", timeout=20)
        assert (tmp_path / "acp-reference-edit" / "greeting.txt").read_text().startswith("Hello from")
        response = await conversation.chat_to_completion("/refuse", timeout=20)
        assert response.stop_reason == "refusal"
        with pytest.raises(Exception, match="failed on purpose"):
            await conversation.chat_to_completion("/fail", timeout=20)  # v1 has no error stop reason


@pytest.mark.anyio
async def test_session_load_replays_the_history_in_v1_before_its_answer(tmp_path: Path) -> None:
    async with await _wire() as process:
        wire = Wire(process)
        await wire.call("initialize", ACPX_INITIALIZE)
        session_id = (await wire.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]["sessionId"]
        await wire.call("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "/plan"}]})
        wire.seen.clear()
        loaded = await wire.call("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []})
        assert loaded["result"]["modes"]["currentModeId"] == "code"
        replay = [m["params"]["update"] for m in wire.seen[:-1] if m.get("method") == "session/update"]
        assert replay[0] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "/plan"}}
        # The plan four times, then "All three plan steps are done." word by word; then the commands (v1 has none
        # in the answer), all before the answer.
        kinds = [u["sessionUpdate"] for u in replay[1:]]
        assert kinds == ["plan"] * 4 + ["agent_message_chunk"] * 6 + ["available_commands_update"]
        missing = await wire.call("session/load", {"sessionId": "nope", "cwd": str(tmp_path), "mcpServers": []})
        assert missing["error"]["code"] == -32002
        assert process.stdin is not None
        await process.stdin.aclose()
