"""acp-session drives an agent built on the official Python SDK 1.0 (``agent-client-protocol`` 1.0.0rc3,
tests/interop/py_sdk1_agent.py): v1 and v2 behind the SDK's ``AgentProtocolRouter``, over stdio and over the SDK's
own HTTP and WebSocket server (``acp.http.asgi`` under hypercorn).

Every test runs for each way in (``peer``: stdio, http, ws), each protocol version (``version``: the client offers
2, or only 1, and the router picks that side) and both backends. Each records the wire (``record_transcript``) and
checks what we sent, not only what came back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation
from acp_session.conversation import ChatDone, ChatText, ChatToolBegin, ChatToolEnd
from acp_session.errors import InvalidParams, RequestCancelled
from acp_session.schema.types import RequestPermissionRequest, SessionConfigSelect
from acp_session.transcript import read_transcript

from .py_sdk1 import Sdk1Server, sdk1_agent, sdk1_python, start_sdk1_server

__all__ = ["sdk1_agent", "sdk1_python"]

pytestmark = pytest.mark.anyio

Answer = Callable[[RequestPermissionRequest], Any]


@pytest.fixture(scope="module")
def shared_server(sdk1_python: str) -> Iterator[Sdk1Server]:
    """One SDK server for the module: its agents keep their sessions per connection, so tests do not meet."""
    server = start_sdk1_server(sdk1_python)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["stdio", "http", "ws"])
def peer(request: pytest.FixtureRequest, sdk1_agent: list[str]) -> list[str] | str:
    """The agent's command line (stdio) or the server's URL."""
    if request.param == "stdio":
        return sdk1_agent
    server: Sdk1Server = request.getfixturevalue("shared_server")
    return server.url if request.param == "http" else server.ws_url


@pytest.fixture(params=[2, 1])
def version(request: pytest.FixtureRequest) -> int:
    return int(request.param)


class Wire:
    """What ``record_transcript`` wrote: our messages (``out``) and the agent's (``in``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [
            e.message for e in read_transcript(self.path) if e.direction == "out" and e.message.get("method") == method
        ]

    def answers_to(self, method: str) -> list[Any]:
        """Our answers to the agent's requests of ``method``, in order."""
        entries = list(read_transcript(self.path))
        asked = {e.message["id"] for e in entries if e.direction == "in" and e.message.get("method") == method}
        return [
            e.message.get("result")
            for e in entries
            if e.direction == "out" and "method" not in e.message and e.message.get("id") in asked
        ]


@asynccontextmanager
async def connected(
    peer: list[str] | str, version: int, tmp_path: Path, answer: Answer | None = None, files: bool = False
) -> AsyncIterator[tuple[ClientConnection, Conversation, Wire]]:
    wire = Wire(tmp_path / "wire.jsonl")
    builder = ClientBuilder("acp-session-sdk1-interop", "1.0").record_transcript(wire.path)
    if version == 1:
        builder = builder.protocol_versions(1)
    if answer is not None:
        builder = builder.on_request_permission(answer)
    if files:
        builder = builder.with_file_system()
    opened = builder.spawn(peer) if isinstance(peer, list) else builder.connect_url(peer)
    async with opened as client:
        assert client.protocol.version == version
        assert (client.agent.info.name, client.agent.info.version) == ("py-sdk1-agent", "1.0.0rc3")
        conversation = await client.start_conversation(str(tmp_path))
        yield client, conversation, wire


async def test_turns_stream_text_thoughts_and_permissions(peer: list[str] | str, version: int, tmp_path: Path) -> None:
    asked: list[RequestPermissionRequest] = []

    def allow_first(request: RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow" if len(asked) == 1 else "reject"

    async with connected(peer, version, tmp_path, allow_first) as (_, conversation, wire):
        with anyio.fail_after(20):
            events = [event async for event in conversation.chat("hello there")]
            assert "".join(e.text for e in events if isinstance(e, ChatText)) == "You said: hello there"
            thought = await conversation.chat_to_completion("/thought")
            allowed = [event async for event in conversation.chat("/permission")]
            rejected = await conversation.chat_to_completion("/permission")
        assert (thought.thinking, thought.text) == ("Thinking it over.", "Thought about it.")
        assert [type(e) for e in allowed if isinstance(e, (ChatToolBegin, ChatToolEnd))] == [ChatToolBegin, ChatToolEnd]
        (done,) = [e for e in allowed if isinstance(e, ChatDone)]
        assert (done.response.text, done.response.stop_reason) == ("Done.", "end_turn")
        assert [(c.tool_call_id, c.status) for c in done.response.tool_calls] == [("tc-3", "completed")]
        assert (rejected.text, rejected.stop_reason) == ("Not allowed.", "end_turn")
        assert [(c.tool_call_id, c.status) for c in rejected.tool_calls] == [("tc-4", "failed")]
        texts = [(m.role, m.text) for m in conversation.messages() if m.role in ("user", "agent")]
        assert texts == [
            ("user", "hello there"),
            ("agent", "You said: hello there"),
            ("user", "/thought"),
            ("agent", "Thought about it."),
            ("user", "/permission"),
            ("agent", "Done."),
            ("user", "/permission"),
            ("agent", "Not allowed."),
        ]
        assert conversation.turn_count == 4
    assert [r.session_id for r in asked] == [conversation.session_id] * 2
    assert [o.option_id for o in asked[0].options] == ["allow", "reject"]
    answers = wire.answers_to("session/request_permission")
    assert answers == [
        {"outcome": {"outcome": "selected", "optionId": "allow"}},
        {"outcome": {"outcome": "selected", "optionId": "reject"}},
    ]
    prompts = [m["params"]["prompt"] for m in wire.sent("session/prompt")]
    assert prompts[0] == [{"type": "text", "text": "hello there"}]


async def test_config_option_and_session_list(peer: list[str] | str, version: int, tmp_path: Path) -> None:
    async with connected(peer, version, tmp_path) as (client, conversation, wire):
        (mode,) = conversation.session.config_options
        assert isinstance(mode, SessionConfigSelect) and (mode.config_id, mode.current_value) == ("mode", "code")
        with anyio.fail_after(20):
            (changed,) = await conversation.session.set_config_option("mode", "ask")
            assert isinstance(changed, SessionConfigSelect) and changed.current_value == "ask"
            with pytest.raises(InvalidParams):
                await conversation.session.set_config_option("mode", "nonsense")
            assert (await conversation.chat_to_completion("why")).text == "You asked: why"
            listed = [info.session_id async for info in client.list_sessions()]
        assert listed == [conversation.session_id]
    sent = [m["params"] for m in wire.sent("session/set_config_option")]
    assert [(p["configId"], p["value"]) for p in sent] == [("mode", "ask"), ("mode", "nonsense")]


async def test_cancel_a_streaming_turn(peer: list[str] | str, version: int, tmp_path: Path) -> None:
    async with connected(peer, version, tmp_path) as (_, conversation, wire):
        with anyio.fail_after(20):
            cancelled = False
            async for event in conversation.chat("/slow 200"):  # 10 s of chunks
                if isinstance(event, ChatText) and not cancelled:
                    await conversation.cancel()
                    cancelled = True
                elif isinstance(event, ChatDone):
                    assert event.response.stop_reason == "cancelled"
                    assert 0 < len(event.response.text) < len("".join(f"chunk {i}. " for i in range(1, 201)))
            assert (await conversation.chat_to_completion("after")).text == "You said: after"
    assert [m["params"] for m in wire.sent("session/cancel")] == [{"sessionId": conversation.session_id}]


async def test_cancel_with_a_pending_permission(peer: list[str] | str, version: int, tmp_path: Path) -> None:
    asked = anyio.Event()

    async def never_answered(request: RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with connected(peer, version, tmp_path, never_answered) as (client, conversation, wire):
        turn = conversation.chat("/permission")
        with anyio.fail_after(20):
            await asked.wait()
            assert len(client.interactions.pending(conversation.session_id)) == 1
            await conversation.cancel()
            response = await turn
            assert response.stop_reason == "cancelled"
            # Marked cancelled at once; a v1 agent (no "cancelled" tool status in v1) that reads the cancelled
            # outcome before session/cancel (the SDK runs both handlers at once) reports it failed afterwards.
            statuses = {"cancelled"} if version == 2 else {"cancelled", "failed"}
            assert [c.tool_call_id for c in response.tool_calls] == ["tc-1"]
            assert response.tool_calls[0].status in statuses
            assert client.interactions.pending(conversation.session_id) == []
            assert (await conversation.chat_to_completion("again")).text == "You said: again"
    # session/cancel first, then the pending request answered cancelled (never an approval).
    assert wire.answers_to("session/request_permission") == [{"outcome": {"outcome": "cancelled"}}]
    assert len(wire.sent("session/cancel")) == 1


async def test_v1_files_go_through_the_client(peer: list[str] | str, tmp_path: Path) -> None:
    """The SDK's v1 ``read_text_file`` / ``write_text_file`` reach ``with_file_system()``, confined to the cwd."""
    (tmp_path / "notes.txt").write_text("remember the milk")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    async with connected(peer, 1, tmp_path, files=True) as (_, conversation, wire):
        with anyio.fail_after(20):
            read = await conversation.chat_to_completion(f"/read {tmp_path / 'notes.txt'}")
            wrote = await conversation.chat_to_completion(f"/write {tmp_path / 'out.txt'} hello file")
            refused = await conversation.chat_to_completion(f"/read {outside}")
    assert read.text == "Read: remember the milk"
    assert wrote.text == "Wrote 10 characters." and (tmp_path / "out.txt").read_text() == "hello file"
    assert [(f.path, f.text, f.source) for f in wrote.files] == [(str(tmp_path / "out.txt"), "hello file", "fs_write")]
    assert refused.text.startswith("Refused: -32") and "secret" not in refused.text
    answers = wire.answers_to("fs/read_text_file")
    assert answers[0] == {"content": "remember the milk"} and answers[1] is None  # the refusal is an error


async def test_v2_held_prompts_and_closing_a_busy_session(peer: list[str] | str, tmp_path: Path) -> None:
    """A prompt sent while a turn runs is held by the SDK agent and inserted after it; closing the session while
    it is busy cancels the turn and withdraws the held prompt (-32800)."""
    async with connected(peer, 2, tmp_path) as (_, conversation, wire):
        with anyio.fail_after(20):
            first = conversation.chat("/slow 3")
            second = conversation.chat("next")
            assert (await first).text == "chunk 1. chunk 2. chunk 3. "
            assert (await second).text == "You said: next"
            busy = conversation.chat("/slow 200")
            held = conversation.chat("never inserted")
            async for event in busy:
                if isinstance(event, ChatText):
                    await conversation.session.close()
                elif isinstance(event, ChatDone):
                    assert event.response.stop_reason == "cancelled"
            with pytest.raises(RequestCancelled):
                await held
    users = [m.text for m in conversation.messages() if m.role == "user"]
    assert users == ["/slow 3", "next", "/slow 200"]
    assert [m["params"]["sessionId"] for m in wire.sent("session/close")] == [conversation.session_id]
