"""The client's own file system and terminals offered to a v2 agent as an MCP server (issue 28): the
reference agent's /mcp reaches them over MCP-over-ACP (``mcp/message``) and over the stdio relay, with the
providers' confinement and limits (the v1 provider tests, repeated through MCP)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from tests.mcp.support import REFERENCE, mcp_calls, mcp_prompt

pytestmark = pytest.mark.anyio

TRANSPORTS = {"acp": REFERENCE, "stdio": [*REFERENCE, "--mcp", "stdio,http"]}
FILE_TOOLS = ["read_text_file", "list", "write_text_file"]
TERMINAL_TOOLS = ["terminal_create", "terminal_output", "terminal_wait", "terminal_kill", "terminal_release"]


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def call(conversation: Conversation, tool: str, **arguments: Any) -> Any:
    await conversation.chat_to_completion(mcp_prompt("acp-session", tool, arguments))
    return mcp_calls(conversation)[-1]


async def test_files_through_mcp_with_the_same_confinement(tmp_path: Path, transport: str) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "notes.txt").write_text("one\ntwo\nthree\n")
    (outside / "secret.txt").write_text("MARKER-OF-THE-CONTENT")
    (work / "escape").symlink_to(outside)
    builder = ClientBuilder().with_file_system(max_read_bytes=1000)
    with anyio.fail_after(90):
        async with Conversation.spawn(TRANSPORTS[transport], work, builder=builder) as conversation:
            assert transport in conversation.session.connection.protocol.mcp_transports
            read = await call(conversation, "read_text_file", path=str(work / "notes.txt"), line=2, limit=1)
            assert read.status == "completed" and read.raw_output["content"] == ["two\n"]
            assert read.raw_input["transport"] == transport
            assert read.raw_output["tools"] == FILE_TOOLS  # no terminal tools without with_terminals()
            listed = await call(conversation, "list", path=str(work))
            assert listed.raw_output["structuredContent"] == {
                "result": ["escape", "notes.txt"]
            }  # a symlink, not followed
            wrote = await call(conversation, "write_text_file", path=str(work / "new" / "made.txt"), content="hé")
            assert wrote.status == "completed" and (work / "new" / "made.txt").read_text() == "hé"
            # Confinement, as for a v1 agent's fs/* calls: outside, through a symlink, relative, too large.
            for tool, arguments in (
                ("read_text_file", {"path": str(outside / "secret.txt")}),
                ("read_text_file", {"path": str(work / "escape" / "secret.txt")}),
                ("read_text_file", {"path": "notes.txt"}),
                ("list", {"path": str(outside)}),
                ("write_text_file", {"path": str(work / "escape" / "planted.txt"), "content": "x"}),
                ("write_text_file", {"path": str(outside / "planted.txt"), "content": "x"}),
            ):
                refused = await call(conversation, tool, **arguments)
                assert refused.status == "failed" and refused.raw_output["isError"], (tool, arguments)
                assert "MARKER" not in " ".join(refused.raw_output["content"])
            (work / "big.txt").write_text("x" * 2000)
            big = await call(conversation, "read_text_file", path=str(work / "big.txt"))
            assert big.status == "failed" and "1000" in " ".join(big.raw_output["content"])
    assert sorted(os.listdir(outside)) == ["secret.txt"]  # nothing was planted


async def test_terminals_through_mcp(tmp_path: Path, transport: str) -> None:
    builder = ClientBuilder().with_terminals(output_byte_limit=64)
    with anyio.fail_after(90):
        async with Conversation.spawn(TRANSPORTS[transport], tmp_path, builder=builder) as conversation:
            created = await call(
                conversation, "terminal_create", command="sh", args=["-c", 'echo "${PWD##*/}"; echo done']
            )
            assert created.raw_output["tools"] == TERMINAL_TOOLS
            [terminal_id] = created.raw_output["content"]
            waited = await call(conversation, "terminal_wait", terminal_id=terminal_id)
            assert waited.raw_output["structuredContent"] == {"exitCode": 0, "signal": None}
            output = await call(conversation, "terminal_output", terminal_id=terminal_id)
            assert output.raw_output["structuredContent"]["output"] == f"{tmp_path.name}\ndone\n"
            flood = await call(conversation, "terminal_create", command="sh", args=["-c", "yes | head -c 5000"])
            [flood_id] = flood.raw_output["content"]
            await call(conversation, "terminal_wait", terminal_id=flood_id)
            capped = await call(conversation, "terminal_output", terminal_id=flood_id)
            result = capped.raw_output["structuredContent"]
            assert result["truncated"] is True and len(result["output"]) <= 64
            outside = await call(conversation, "terminal_create", command="pwd", cwd="/")
            assert outside.status == "failed"  # a working directory outside the session is refused
            sleeper = await call(conversation, "terminal_create", command="sleep", args=["30"])
            [sleeper_id] = sleeper.raw_output["content"]
            killed = await call(conversation, "terminal_kill", terminal_id=sleeper_id)
            assert killed.status == "completed"
            status = await call(conversation, "terminal_wait", terminal_id=sleeper_id)
            assert (
                status.raw_output["structuredContent"]["signal"] == "SIGTERM"
            )  # the provider stops a process with SIGTERM first
            unknown = await call(conversation, "terminal_output", terminal_id="nope")
            assert unknown.status == "failed"


def sent_session_new(transcript: Path) -> dict[str, Any]:
    import json

    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    [params] = [e["msg"]["params"] for e in lines if e["dir"] == "out" and e["msg"].get("method") == "session/new"]
    return dict(params)


async def test_the_stdio_relay_serves_mcp_and_ends_with_its_session(tmp_path: Path) -> None:
    """What the agent is given is a command it can start; started by hand here, it speaks MCP over stdio (the
    initialize handshake an MCP stdio client sends), and it ends once the session is closed."""
    import json
    import subprocess

    transcript = tmp_path / "wire.jsonl"
    builder = ClientBuilder().with_file_system().record_transcript(transcript)
    with anyio.fail_after(60):
        async with builder.spawn(TRANSPORTS["stdio"]) as client:
            session = await client.new_session(tmp_path)
            [server] = sent_session_new(transcript)["mcpServers"]
            assert server["type"] == "stdio" and server["name"] == "acp-session"
            assert server["args"][:2] == ["-m", "acp_session.mcp.relay"] and os.path.isabs(server["command"])
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "by-hand", "version": "1"},
                },
            }
            async with await anyio.open_process(
                [server["command"], *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            ) as relay:
                assert relay.stdin is not None and relay.stdout is not None
                await relay.stdin.send(json.dumps(initialize).encode() + b"\n")
                answer = json.loads(await relay.stdout.receive())
                assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "acp-session"
                # The same socket with another token reaches nothing: that relay's stdout closes at once.
                forged = [server["command"], *server["args"][:-1], "0" * 32]
                async with await anyio.open_process(forged, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as other:
                    assert other.stdin is not None and other.stdout is not None
                    await other.stdin.send(json.dumps(initialize).encode() + b"\n")
                    with pytest.raises(anyio.EndOfStream):
                        await other.stdout.receive()
                await session.close()
                with pytest.raises(anyio.EndOfStream):
                    while True:  # the client ended the server: the relay's stdout closes
                        await relay.stdout.receive()
                assert await relay.wait() == 0


async def test_mcp_message_on_the_wire_answers_and_refusals(tmp_path: Path) -> None:
    """``mcp/message`` from a scripted agent: a result carrier for tools/list, an inner MCP tool error (isError)
    for a read outside the session, -32602 for a server never declared and for the server of a closed session."""
    import json
    import sys

    log = tmp_path / "agent.log"
    agent = [sys.executable, str(Path(__file__).parent / "agents" / "mcp_message_agent.py"), str(log)]

    def answers() -> dict[str, Any]:
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        return {m["id"]: m for m in lines if "method" not in m and str(m.get("id")).startswith("m")}

    with anyio.fail_after(60):
        async with ClientBuilder().with_file_system().spawn(agent) as client:
            session = await client.new_session(tmp_path)
            while len(answers()) < 3:
                await anyio.sleep(0.02)
            await session.close()
            await client.request("_poke", {})
            while len(answers()) < 4:
                await anyio.sleep(0.02)
    got = answers()
    tools = [tool["name"] for tool in got["m1"]["result"]["result"]["tools"]]
    assert tools == ["read_text_file", "list", "write_text_file"]
    call = got["m2"]["result"]["result"]
    assert call["isError"] is True and "outside the directories" in call["content"][0]["text"]
    assert got["m3"]["error"]["code"] == -32602 and got["m3"]["error"]["data"] == {"serverId": "never-declared"}
    assert got["m4"]["error"]["code"] == -32602  # the session is closed: its server is gone


async def test_the_builtin_server_takes_another_name_when_the_application_uses_its_own(tmp_path: Path) -> None:
    from acp_session.mcp import acp_server

    transcript = tmp_path / "wire.jsonl"
    builder = ClientBuilder().with_file_system().record_transcript(transcript)
    with anyio.fail_after(60):
        async with builder.spawn(TRANSPORTS["acp"]) as client:
            await client.new_session(tmp_path, [acp_server("acp-session", "the-applications-own")])
    names = [s["name"] for s in sent_session_new(transcript)["mcpServers"]]
    assert names == ["acp-session", "acp-session-2"]
