"""Our public API (``ClientBuilder`` / ``Conversation``) against ACP protocol-version-1 agents nobody here wrote.

The agents and their exact wire behaviour are described in V1_AGENTS.md: the official TypeScript SDK 0.17.0's
example agent (``TS_V1_AGENT``: a fixed script, about 1 s per step) and ``py_v1_agent.py`` on the official Python
SDK (``agent-client-protocol`` 0.12.1: fs, terminals, modes, ``session/load`` with ``--store``). Everything runs
over real stdio subprocesses; every test records the wire (``record_transcript``) so it can check what we sent.
Rule ids are those of ``../shared/spec/rules-v1.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation
from acp_session.client_errors import CapabilityNotSupported
from acp_session.conversation import (
    ChatDone,
    ChatEvent,
    ChatProgress,
    ChatStart,
    ChatText,
    ChatToolBegin,
    ChatToolEnd,
    ChatToolUpdate,
)
from acp_session.conversation.entities import Message, Plan, TimelineEntry, ToolCall
from acp_session.errors import InvalidParams
from acp_session.schema.types import (
    RequestPermissionRequest,
    SessionConfigSelect,
    ToolCallPermissionSubject,
)

from .conftest import PY_V1_AGENT, TS_V1_AGENT

pytestmark = pytest.mark.anyio

PY_AGENT = [sys.executable, str(PY_V1_AGENT)]
V1_DIFF = "acpSession/v1Diff"

# The TS example agent's fixed script (V1_AGENTS.md, "The prompt turn").
TS_TEXT_1 = "I'll help you with that. Let me start by reading some files to understand the current situation."
TS_TEXT_2 = " Now I understand the project structure. I need to make some changes to improve it."
TS_TEXT_ALLOW = " Perfect! I've successfully updated the configuration. The changes have been applied."
TS_TEXT_REJECT = " I understand you prefer not to make that change. I'll skip the configuration update."
TS_CALL_1_TITLE = "Reading project files"
TS_CALL_2_TITLE = "Modifying critical configuration file"
TS_TURN_LIMIT = 20  # seconds: a whole TS turn takes about 5

TIMEOUT = 15  # seconds for anything with the Python SDK agent


# -- helpers --------------------------------------------------------------------------------------------------------


class Wire:
    """The transcript ``record_transcript`` wrote: ``{"t", "dir": "in"|"out", "msg"}`` per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def messages(self, direction: str) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
        return [row["msg"] for row in rows if row["dir"] == direction and "msg" in row]

    def sent(self, method: str) -> list[dict[str, Any]]:
        """Our requests / notifications named ``method``."""
        return [m for m in self.messages("out") if m.get("method") == method]

    def received(self, method: str) -> list[dict[str, Any]]:
        """The agent's requests / notifications named ``method``."""
        return [m for m in self.messages("in") if m.get("method") == method]

    def answer_to_agent(self, request: dict[str, Any]) -> dict[str, Any]:
        """Our response to one of the agent's requests (ACP1-004: the same id)."""
        found = [m for m in self.messages("out") if "method" not in m and m.get("id") == request["id"]]
        assert len(found) == 1, found
        return found[0]


@asynccontextmanager
async def spawned(
    argv: list[str], tmp_path: Path, builder: ClientBuilder | None = None, name: str = "wire"
) -> AsyncIterator[tuple[ClientConnection, Wire]]:
    path = tmp_path / f"{name}.jsonl"
    builder = (builder or ClientBuilder("acp-session-v1-interop", "1.0")).record_transcript(path)
    async with builder.spawn(argv) as client:
        yield client, Wire(path)


def kinds(history: list[TimelineEntry]) -> list[str]:
    """History as ``user`` / ``agent`` / ``thought`` / ``tool:<id>`` / ``plan`` tags."""
    out: list[str] = []
    for entry in history:
        if isinstance(entry, Message):
            out.append(entry.role)
        elif isinstance(entry, ToolCall):
            out.append(f"tool:{entry.tool_call_id}")
        else:
            out.append(type(entry).__name__.lower())
    return out


def tool(history: list[TimelineEntry], tool_call_id: str) -> ToolCall:
    found = [e for e in history if isinstance(e, ToolCall) and e.tool_call_id == tool_call_id]
    assert len(found) == 1, kinds(history)
    return found[0]


def agent_texts(history: list[TimelineEntry]) -> list[str]:
    return [e.text for e in history if isinstance(e, Message) and e.role == "agent"]


def user_texts(history: list[TimelineEntry]) -> list[str]:
    return [e.text for e in history if isinstance(e, Message) and e.role == "user"]


def mode_option(options: list[Any]) -> SessionConfigSelect:
    found = [o for o in options if isinstance(o, SessionConfigSelect) and o.category == "mode"]
    assert len(found) == 1, options
    return found[0]


def fs_builder(*, files: bool = True, terminals: bool = True) -> ClientBuilder:
    builder = ClientBuilder("acp-session-v1-interop", "1.0")
    if files:
        builder = builder.with_file_system()
    if terminals:
        builder = builder.with_terminals()
    return builder


# -- the TypeScript SDK 0.17.0 example agent ------------------------------------------------------------------------


async def test_ts_initialize_and_no_session_load(ts_v1_agent: list[str], tmp_path: Path) -> None:
    """initialize negotiates version 1 (the agent answers 1 to our offer of 2); the agent offers no session/load,
    so ``Conversation.resume`` raises ``CapabilityNotSupported`` without sending anything (ACP1-012: the
    baseline methods are all it has)."""
    with anyio.fail_after(TIMEOUT):
        async with spawned(ts_v1_agent, tmp_path) as (client, wire):
            assert client.protocol.version == 1
            offered = wire.sent("initialize")
            # v2's offer in its own shape, then, once it answered 1, v1's (with the v1 capabilities), which it takes
            assert [m["params"]["protocolVersion"] for m in offered] == [2, 1]
            assert "clientCapabilities" not in offered[0]["params"] and "clientInfo" not in offered[0]["params"]
            assert client.agent.supports("session/new") and client.agent.supports("session/prompt")
            assert not client.agent.supports("session/load") and not client.agent.supports("session/resume")
            assert not client.agent.supports("session/list")
            with pytest.raises(CapabilityNotSupported):
                await Conversation.resume(client, "0" * 32, str(tmp_path))
            assert wire.sent("session/load") == []
            conversation = await client.start_conversation(str(tmp_path))
            assert isinstance(conversation.session_id, str) and len(conversation.session_id) == 32
            assert conversation.state.config_options == []  # no modes advertised: no mode option


def _compact(events: list[ChatEvent]) -> list[tuple[str, str]]:
    """Events as (kind, detail): text fragments of one message joined, tool updates left out."""
    out: list[tuple[str, str]] = []
    last_text: tuple[str, str] | None = None
    for event in events:
        if isinstance(event, ChatText):
            if last_text is not None and out and out[-1][0] == "text" and last_text[0] == event.message_id:
                out[-1] = ("text", out[-1][1] + event.text)
            else:
                out.append(("text", event.text))
            last_text = (event.message_id, event.text)
            continue
        last_text = None
        if isinstance(event, ChatToolUpdate):
            continue
        if isinstance(event, ChatStart):
            out.append(("start", ""))
        elif isinstance(event, ChatToolBegin):
            out.append(("tool_begin", event.tool_call.tool_call_id))
        elif isinstance(event, ChatToolEnd):
            out.append(("tool_end", f"{event.tool_call.tool_call_id}:{event.status}"))
        elif isinstance(event, ChatDone):
            out.append(("done", str(event.response.stop_reason)))
        else:
            out.append((event.kind, ""))
    return out


async def test_ts_turns_allow_and_reject(ts_v1_agent: list[str], tmp_path: Path) -> None:
    """Two conversations on one connection, side by side: one turn iterated as events and allowed, one awaited
    with ``chat_to_completion`` and rejected. The v1 turn is the pending ``session/prompt``: ``ChatStart`` at once,
    the chunks, ``tool_call`` as the first tool call update, the permission request mapped to a tool-call subject,
    the stop reason from the prompt's answer. Our permission answers reuse the agent's request ids (ACP1-004)."""
    asked: list[RequestPermissionRequest] = []
    answers: dict[str, str] = {}

    def on_permission(request: RequestPermissionRequest) -> str:
        asked.append(request)
        return answers[request.session_id]

    builder = ClientBuilder("acp-session-v1-interop", "1.0").on_request_permission(on_permission)
    events: list[ChatEvent] = []
    with anyio.fail_after(TS_TURN_LIMIT):
        async with spawned(ts_v1_agent, tmp_path, builder) as (client, wire):
            allowed = await client.start_conversation(str(tmp_path))
            rejected = await client.start_conversation(str(tmp_path))
            assert allowed.session_id is not None and rejected.session_id is not None
            answers[allowed.session_id] = "allow"
            answers[rejected.session_id] = "reject"
            results: dict[str, Any] = {}

            async def reject_turn() -> None:
                results["rejected"] = await rejected.chat_to_completion("Please reject this one")

            async with anyio.create_task_group() as tg:
                tg.start_soon(reject_turn)
                turn = allowed.chat("Hello, agent")
                async for event in turn:
                    events.append(event)
            for conversation in (allowed, rejected):
                await conversation.wait_for_idle()  # already idle: returns at once
                assert conversation.is_idle

            # The allowed turn, event by event.
            assert _compact(events) == [
                ("start", ""),
                ("text", TS_TEXT_1),
                ("tool_begin", "call_1"),
                ("tool_end", "call_1:completed"),
                ("text", TS_TEXT_2),
                ("tool_begin", "call_2"),
                ("tool_end", "call_2:completed"),
                ("text", TS_TEXT_ALLOW),
                ("done", "end_turn"),
            ]
            start = events[0]
            assert isinstance(start, ChatStart)
            assert start.message_id.startswith("user-")
            text_ids = {e.message_id for e in events if isinstance(e, ChatText)}
            assert len(text_ids) == 3  # a run of chunks is one message; a tool call ends it
            done = events[-1]
            assert isinstance(done, ChatDone)
            assert done.response.stop_reason == "end_turn"
            assert done.response.text == TS_TEXT_1 + TS_TEXT_2 + TS_TEXT_ALLOW
            assert [c.tool_call_id for c in done.response.tool_calls] == ["call_1", "call_2"]
            assert allowed.last_response == done.response.text

            history = allowed.history()
            assert kinds(history) == ["user", "agent", "tool:call_1", "agent", "tool:call_2", "agent"]
            assert user_texts(history) == ["Hello, agent"]
            assert agent_texts(history) == [TS_TEXT_1, TS_TEXT_2, TS_TEXT_ALLOW]
            call_1, call_2 = tool(history, "call_1"), tool(history, "call_2")
            assert (call_1.title, call_1.kind, call_1.status) == (TS_CALL_1_TITLE, "read", "completed")
            assert [loc.path for loc in call_1.locations] == ["/project/README.md"]
            assert call_1.raw_input == {"path": "/project/README.md"}
            assert call_1.text == "# My Project\n\nThis is a sample project..."
            assert (call_2.title, call_2.kind, call_2.status) == (TS_CALL_2_TITLE, "edit", "completed")
            assert call_2.raw_output == {"success": True, "message": "Configuration updated"}
            assert allowed.turn_count == 1

            # The rejected turn, awaited.
            response = results["rejected"]
            assert response.stop_reason == "end_turn"
            assert response.text == TS_TEXT_1 + TS_TEXT_2 + TS_TEXT_REJECT
            assert rejected.last_response == response.text
            history = rejected.history()
            assert kinds(history) == ["user", "agent", "tool:call_1", "agent", "tool:call_2", "agent"]
            assert agent_texts(history) == [TS_TEXT_1, TS_TEXT_2, TS_TEXT_REJECT]
            assert tool(history, "call_2").status == "pending"  # the agent never closes it after a reject
            assert rejected.turn_count == 1

            # The permission requests as the model shows them, and our answers on the wire.
            assert sorted(r.session_id for r in asked) == sorted(answers)
            for request in asked:
                assert request.title == TS_CALL_2_TITLE
                assert isinstance(request.subject, ToolCallPermissionSubject)
                assert request.subject.tool_call.tool_call_id == "call_2"
                assert [(o.option_id, o.kind) for o in request.options] == [
                    ("allow", "allow_once"),
                    ("reject", "reject_once"),
                ]
            for request in wire.received("session/request_permission"):
                answer = wire.answer_to_agent(request)
                chosen = answers[request["params"]["sessionId"]]
                assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": chosen}}
            assert len(wire.received("session/request_permission")) == 2
            assert len(wire.sent("session/prompt")) == 2
            assert wire.sent("session/cancel") == []


async def test_ts_cancel_while_permission_pending(ts_v1_agent: list[str], tmp_path: Path) -> None:
    """``Conversation.cancel()`` while the permission request is pending: ``session/cancel`` goes out first, then
    the pending request is answered with the ``cancelled`` outcome (ACP1-002, ACP1-025); ``call_2`` is marked
    cancelled locally. This agent then answers the prompt with ``end_turn``, not ``cancelled`` (it breaks
    ACP1-017, see V1_AGENTS.md): the turn ends with exactly what the agent said (ACP1-018: updates after the
    cancel are still taken)."""
    asked = anyio.Event()

    async def on_permission(request: RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()  # a human who never answers
        raise AssertionError("unreachable")

    builder = ClientBuilder("acp-session-v1-interop", "1.0").on_request_permission(on_permission)
    events: list[ChatEvent] = []
    with anyio.fail_after(TS_TURN_LIMIT):
        async with spawned(ts_v1_agent, tmp_path, builder) as (client, wire):
            conversation = await client.start_conversation(str(tmp_path))
            session_id = conversation.session_id
            assert session_id is not None

            async def cancel_when_asked() -> None:
                await asked.wait()
                assert len(client.interactions.pending(session_id)) == 1
                await conversation.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_when_asked)
                async for event in conversation.chat("Hello, agent"):
                    events.append(event)
            with anyio.fail_after(5):
                await conversation.wait_for_idle()

            assert _compact(events) == [
                ("start", ""),
                ("text", TS_TEXT_1),
                ("tool_begin", "call_1"),
                ("tool_end", "call_1:completed"),
                ("text", TS_TEXT_2),
                ("tool_begin", "call_2"),
                ("tool_end", "call_2:cancelled"),
                ("done", "end_turn"),
            ]
            done = events[-1]
            assert isinstance(done, ChatDone)
            assert done.response.stop_reason == "end_turn"  # this agent's answer to a cancelled permission
            assert not done.response.cancelled
            assert done.response.text == TS_TEXT_1 + TS_TEXT_2
            assert client.interactions.pending(session_id) == []
            assert kinds(conversation.history()) == ["user", "agent", "tool:call_1", "agent", "tool:call_2"]
            assert conversation.turn_count == 1

            # On the wire: session/cancel, then the cancelled outcome for the permission request.
            (request,) = wire.received("session/request_permission")
            answer = wire.answer_to_agent(request)
            assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
            (cancel,) = wire.sent("session/cancel")
            assert cancel["params"] == {"sessionId": session_id}
            outgoing = wire.messages("out")
            cancel_at = outgoing.index(cancel)
            answer_at = outgoing.index(answer)
            assert cancel_at < answer_at


# -- the Python SDK agent: the client's file system and terminals -----------------------------------------------------


async def test_py_fs_read_inside_and_refused_outside(tmp_path: Path) -> None:
    """``read PATH`` inside the session cwd is answered from disk; a path outside is refused with a JSON-RPC
    error (-32602), which the agent reports as ``error: ...``: the tool call fails and nothing of the file leaks."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    inside = cwd / "notes.txt"
    inside.write_text("line one\nline two\n")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    secret = outside_dir / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path, fs_builder(terminals=False)) as (client, wire):
            assert client.protocol.version == 1
            assert client.agent.info.name == "py-v1-agent"
            first, offer = (m["params"] for m in wire.sent("initialize"))
            assert first["protocolVersion"] == 2 and "clientCapabilities" not in first
            assert offer["protocolVersion"] == 1  # the v1 offer after the agent answered 1: how it learns of fs
            caps = offer["clientCapabilities"]
            assert caps["fs"] == {"readTextFile": True, "writeTextFile": True}
            assert caps["terminal"] is False
            conversation = await client.start_conversation(str(cwd))

            response = await conversation.chat_to_completion(f"read {inside}")
            assert response.stop_reason == "end_turn"
            assert response.text == "line one\nline two\n"
            call = tool(conversation.history(), "call-1")
            assert (call.kind, call.status) == ("read", "completed")
            assert call.text == "line one\nline two\n"
            assert [loc.path for loc in call.locations] == [str(inside)]

            response = await conversation.chat_to_completion(f"read {secret}")
            assert response.stop_reason == "end_turn"
            assert response.text.startswith("error: "), response.text
            assert "TOP-SECRET-VALUE" not in response.text
            call = tool(conversation.history(), "call-2")
            assert call.status == "failed"
            assert call.content == []

            reads = wire.received("fs/read_text_file")
            assert [r["params"]["path"] for r in reads] == [str(inside), str(secret)]
            refused = wire.answer_to_agent(reads[1])
            assert "result" not in refused
            assert refused["error"]["code"] == -32602
            assert "TOP-SECRET-VALUE" not in json.dumps(wire.messages("out"))
            assert "TOP-SECRET-VALUE" not in json.dumps(msgspec.to_builtins(conversation.history()))
            assert conversation.turn_count == 2


async def test_py_fs_write_and_v1_diff(tmp_path: Path) -> None:
    """``write PATH TEXT`` writes the file through our provider; the agent's v1 diff becomes a v2 diff that keeps
    the v1 value under ``_meta["acpSession/v1Diff"]`` (a new file: no ``oldText``; an existing one: its old text)."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    new_file = cwd / "new.txt"
    existing = cwd / "existing.txt"
    existing.write_text("old text")
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path, fs_builder(terminals=False)) as (client, wire):
            conversation = await client.start_conversation(str(cwd))

            response = await conversation.chat_to_completion(f"write {new_file} hello from v1")
            assert response.stop_reason == "end_turn"
            assert response.text == f"wrote {new_file}"
            assert new_file.read_text() == "hello from v1"
            call = tool(conversation.history(), "call-1")
            assert (call.kind, call.status) == ("edit", "completed")
            (diff,) = call.diffs
            assert diff.meta is not msgspec.UNSET and diff.meta is not None
            assert diff.meta[V1_DIFF] == {"path": str(new_file), "oldText": None, "newText": "hello from v1"}
            assert [(type(c).__name__, c.path) for c in diff.changes] == [("DiffAdd", str(new_file))]
            assert diff.patch is not None and diff.patch is not msgspec.UNSET
            assert diff.patch.format == "git_patch" and "+hello from v1" in diff.patch.text

            response = await conversation.chat_to_completion(f"write {existing} new text")
            assert response.stop_reason == "end_turn"
            assert existing.read_text() == "new text"
            (diff,) = tool(conversation.history(), "call-2").diffs
            assert diff.meta[V1_DIFF] == {"path": str(existing), "oldText": "old text", "newText": "new text"}
            assert [(type(c).__name__, c.path) for c in diff.changes] == [("DiffModify", str(existing))]

            writes = wire.received("fs/write_text_file")
            assert [w["params"]["content"] for w in writes] == ["hello from v1", "new text"]
            assert all(wire.answer_to_agent(w).get("result") == {} for w in writes)


async def test_py_terminal_run(tmp_path: Path) -> None:
    """``run CMD ARGS`` goes through our terminal provider: create, wait_for_exit, output, release; the output
    and the exit code come back, in the session's cwd; a non-zero exit fails the tool call."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path, fs_builder(files=False)) as (client, wire):
            caps = wire.sent("initialize")[1]["params"]["clientCapabilities"]  # the v1 offer that followed 2
            assert caps["terminal"] is True
            assert not any(caps.get("fs", {}).values())
            conversation = await client.start_conversation(str(cwd))

            response = await conversation.chat_to_completion("run echo hi")
            assert response.stop_reason == "end_turn"
            assert response.text == "hi\nexit code: 0"
            call = tool(conversation.history(), "call-1")
            assert (call.kind, call.status) == ("execute", "completed")
            assert call.raw_output == {"exitCode": 0, "signal": None, "truncated": False}
            assert len(call.terminal_ids) == 1

            script = "print(__import__('os').getcwd())"  # no spaces: the agent splits the command on them
            response = await conversation.chat_to_completion(f"run {sys.executable} -c {script}")
            assert response.text == f"{cwd}\nexit code: 0"

            response = await conversation.chat_to_completion(f"run {sys.executable} -c raise(SystemExit(3))")
            assert response.stop_reason == "end_turn"
            assert response.text == "exit code: 3"
            assert tool(conversation.history(), "call-3").status == "failed"

            methods = [m["method"] for m in wire.messages("in") if str(m.get("method", "")).startswith("terminal/")]
            assert methods == ["terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"] * 3
            assert all(m["params"]["cwd"] == str(cwd) for m in wire.received("terminal/create"))


async def test_with_terminals_connection_closes_cleanly(tmp_path: Path) -> None:
    """A connection built with ``with_terminals()`` that never ran a command opens and closes without error (the
    built-in terminals are started and stopped with the connection)."""
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path, fs_builder(files=False)) as (client, _):
            assert client.protocol.version == 1
            assert client.tools.terminals is not None


def test_no_fs_or_terminal_offered_without_providers() -> None:
    """Without ``with_file_system`` / ``with_terminals`` the v1 initialize offer advertises neither."""
    plain = msgspec.to_builtins(ClientBuilder().v1_initialize_request())
    caps = plain["clientCapabilities"]
    assert not any(caps.get("fs", {}).values())
    assert not caps.get("terminal", False)
    plain = msgspec.to_builtins(ClientBuilder().with_file_system(read=True, write=False).v1_initialize_request())
    assert plain["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": False}
    assert not plain["clientCapabilities"].get("terminal", False)
    plain = msgspec.to_builtins(ClientBuilder().with_terminals().v1_initialize_request())
    assert plain["clientCapabilities"]["terminal"] is True
    assert not any(plain["clientCapabilities"].get("fs", {}).values())


async def test_py_calls_without_providers_get_method_not_found(tmp_path: Path) -> None:
    """The agent (``--ignore-capabilities``) calls ``fs/read_text_file`` and ``terminal/create`` although nothing
    was advertised: our client answers -32601; the agent reports ``error: ...``, fails the tool call and ends the
    turn ``end_turn``."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "file.txt").write_text("not for you")
    with anyio.fail_after(TIMEOUT):
        async with spawned(
            [*PY_AGENT, "--ignore-capabilities"], tmp_path, fs_builder(files=False, terminals=False)
        ) as (client, wire):
            offer = wire.sent("initialize")[1]["params"]["clientCapabilities"]  # the v1 offer that followed 2
            assert not any(offer.get("fs", {}).values()) and not offer.get("terminal", False)
            conversation = await client.start_conversation(str(cwd))

            response = await conversation.chat_to_completion(f"read {cwd / 'file.txt'}")
            assert response.stop_reason == "end_turn"
            assert response.text.startswith("error: "), response.text
            assert "not for you" not in response.text
            assert tool(conversation.history(), "call-1").status == "failed"

            response = await conversation.chat_to_completion("run echo hi")
            assert response.text.startswith("error: "), response.text
            assert tool(conversation.history(), "call-2").status == "failed"

            for method in ("fs/read_text_file", "terminal/create"):
                (request,) = wire.received(method)
                assert wire.answer_to_agent(request)["error"]["code"] == -32601


# -- the Python SDK agent: modes ------------------------------------------------------------------------------------


async def test_py_modes_as_config_option(tmp_path: Path) -> None:
    """v1 modes are a select option with ``category == "mode"`` (ACP1-015/016: we look options up by id; the
    category only tells the UI). Setting it sends v1 ``session/set_mode``; the agent's ``current_mode_update``
    keeps the conversation's state at the new mode; an unknown mode is the agent's -32602 and changes nothing."""
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path) as (client, wire):
            conversation = await client.start_conversation(str(tmp_path))
            option = mode_option(conversation.state.config_options)
            assert option.config_id == "mode"
            assert option.current_value == "ask"
            assert [o.value for o in option.options] == ["ask", "code"]
            assert conversation.state.config_option("mode") is option

            options = await conversation.session.set_config_option("mode", "code")
            assert mode_option(options).current_value == "code"
            assert mode_option(conversation.state.config_options).current_value == "code"
            (sent,) = wire.sent("session/set_mode")
            assert sent["params"] == {"sessionId": conversation.session_id, "modeId": "code"}
            assert wire.sent("session/set_config_option") == []
            assert len(wire.received("session/update")) == 1  # the agent's current_mode_update

            with pytest.raises(InvalidParams):
                await conversation.session.set_config_option("mode", "nope")
            assert mode_option(conversation.state.config_options).current_value == "code"

            # The mode survives a turn.
            response = await conversation.chat_to_completion("hello")
            assert response.text == "You said: hello"
            assert mode_option(conversation.state.config_options).current_value == "code"


async def test_py_plan_and_thought(tmp_path: Path) -> None:
    """v1 ``plan`` becomes a ``plan_update`` (one plan per session: ``ChatProgress`` with every entry, a ``Plan``
    in history); ``agent_thought_chunk`` becomes a thought message (``response.thinking``)."""
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path) as (client, _):
            conversation = await client.start_conversation(str(tmp_path))
            events = [event async for event in conversation.chat("plan")]
            progress = [e for e in events if isinstance(e, ChatProgress)]
            assert len(progress) == 1
            assert [(p.content, p.priority, p.status) for p in progress[0].entries] == [
                ("Read the code", "high", "in_progress"),
                ("Write the fix", "medium", "pending"),
            ]
            done = events[-1]
            assert isinstance(done, ChatDone) and done.response.text == "Planned 2 steps."
            (plan,) = [e for e in conversation.history() if isinstance(e, Plan)]
            assert [p.content for p in plan.entries] == ["Read the code", "Write the fix"]

            response = await conversation.chat_to_completion("think")
            assert (response.thinking, response.text) == ("Hmm.", "I thought about it.")
            assert kinds(conversation.history()) == ["user", "plan", "agent", "user", "thought", "agent"]


async def test_py_cancel_permission_and_streaming(tmp_path: Path) -> None:
    """``session.cancel_active_work()`` with a permission request pending: ``session/cancel``, the ``cancelled``
    outcome (ACP1-002, ACP1-025); this agent then answers ``cancelled`` (ACP1-017). ``Conversation.cancel()``
    during a streamed turn (``slow 200``) ends it ``cancelled`` long before its 10 s."""
    asked = anyio.Event()

    async def on_permission(request: RequestPermissionRequest) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    builder = ClientBuilder("acp-session-v1-interop", "1.0").on_request_permission(on_permission)
    with anyio.fail_after(TIMEOUT):
        async with spawned(PY_AGENT, tmp_path, builder) as (client, wire):
            conversation = await client.start_conversation(str(tmp_path))
            turn = conversation.chat("permission")
            await asked.wait()
            assert await conversation.session.cancel_active_work() == 1
            response = await turn
            assert response.stop_reason == "cancelled" and response.cancelled
            assert tool(conversation.history(), "call-1").status == "pending"  # the agent sent nothing more
            (request,) = wire.received("session/request_permission")
            assert wire.answer_to_agent(request)["result"] == {"outcome": {"outcome": "cancelled"}}
            outgoing = wire.messages("out")
            (cancel,) = wire.sent("session/cancel")
            assert outgoing.index(cancel) < outgoing.index(wire.answer_to_agent(request))

            chunks: list[str] = []
            async for event in conversation.chat("slow 200"):
                if isinstance(event, ChatText):
                    chunks.append(event.text)
                    if len(chunks) == 1:
                        await conversation.cancel()
                if isinstance(event, ChatDone):
                    assert event.response.stop_reason == "cancelled"
            text = "".join(chunks)
            assert text.startswith("chunk 1/200\n") and "chunk 200/200" not in text
            assert conversation.turn_count == 2
            await conversation.wait_for_idle()


# -- the Python SDK agent: session/load -----------------------------------------------------------------------------


async def test_py_session_load_replays_history(tmp_path: Path) -> None:
    """One agent process runs two turns and is left; a second process (same ``--store``) loads the session
    through ``Conversation.resume`` (v1 ``session/load``): the replayed user, thought and agent messages and the
    tool call come back in order, the mode set before is current, and a new turn continues the conversation."""
    store = tmp_path / "store"
    cwd = tmp_path / "work"
    cwd.mkdir()
    notes = cwd / "notes.txt"
    notes.write_text("remember me")
    argv = [*PY_AGENT, "--store", str(store)]
    with anyio.fail_after(TIMEOUT):
        async with spawned(argv, tmp_path, fs_builder(terminals=False), name="first") as (client, _):
            first = await client.start_conversation(str(cwd))
            session_id = first.session_id
            assert session_id is not None
            assert (await first.chat_to_completion("think")).text == "I thought about it."
            assert (await first.chat_to_completion(f"read {notes}")).text == "remember me"
            await first.session.set_config_option("mode", "code")
            before = kinds(first.history())
        assert before == ["user", "thought", "agent", "user", "tool:call-1", "agent"]

        async with spawned(argv, tmp_path, fs_builder(terminals=False), name="second") as (client, wire):
            assert client.agent.supports("session/load")
            conversation = await Conversation.resume(client, session_id, str(cwd))
            assert conversation.session_id == session_id
            (load,) = wire.sent("session/load")
            assert load["params"]["sessionId"] == session_id
            assert load["params"]["cwd"] == str(cwd)
            assert wire.sent("session/resume") == []

            history = conversation.history()
            assert kinds(history) == before
            assert user_texts(history) == ["think", f"read {notes}"]
            assert agent_texts(history) == ["I thought about it.", "remember me"]
            thoughts = [e.text for e in history if isinstance(e, Message) and e.role == "thought"]
            assert thoughts == ["Hmm."]
            call = tool(history, "call-1")
            assert (call.kind, call.status, call.text) == ("read", "completed", "remember me")
            assert conversation.turn_count == 2
            assert conversation.is_idle
            assert mode_option(conversation.state.config_options).current_value == "code"
            assert [m.role for m in conversation.messages()] == ["user", "agent", "user", "agent"]

            response = await conversation.chat_to_completion(f"read {notes}")
            assert response.stop_reason == "end_turn"
            assert response.text == "remember me"
            assert [c.tool_call_id for c in response.tool_calls] == ["call-2"]
            assert conversation.turn_count == 3
            assert kinds(conversation.history()) == [*before, "user", "tool:call-2", "agent"]
            await conversation.wait_for_idle()


# -- the CLI --------------------------------------------------------------------------------------------------------


def test_cli_chat_with_ts_agent(ts_v1_agent: list[str], tmp_path: Path) -> None:
    """``acp-session chat --agent "node .../agent.js" --yes PROMPT``: one whole v1 turn, the permission approved
    by ``--yes`` (allow once), exit code 0 for ``end_turn``, the agent's text on stdout."""
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_session",
            "chat",
            "--agent",
            f"{ts_v1_agent[0]} {TS_V1_AGENT}",
            "--cwd",
            str(tmp_path),
            "--yes",
            "hello",
        ],
        capture_output=True,
        text=True,
        timeout=TS_TURN_LIMIT + 10,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    for text in (TS_TEXT_1, TS_TEXT_2.strip(), TS_TEXT_ALLOW.strip()):
        assert text in proc.stdout, proc.stdout
    assert TS_TEXT_REJECT.strip() not in proc.stdout
    assert TS_CALL_2_TITLE in proc.stdout
    assert "Allow this change" in proc.stdout  # --yes picked the allow_once option


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_session",
            "chat",
            "--agent",
            f"{sys.executable} {PY_V1_AGENT}",
            "--cwd",
            str(cwd),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        stdin=subprocess.DEVNULL,
    )


def test_cli_files_only_with_allow_files(tmp_path: Path) -> None:
    """The CLI advertises file access to a v1 agent only with ``--allow-files``, confined to ``--cwd``."""
    (tmp_path / "notes.txt").write_text("the secret word is kiwi\n")
    denied = _cli("--yes", f"read {tmp_path / 'notes.txt'}", cwd=tmp_path)
    assert denied.returncode == 0, denied.stderr
    assert "kiwi" not in denied.stdout and "error:" in denied.stdout
    allowed = _cli("--yes", "--allow-files", f"read {tmp_path / 'notes.txt'}", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "the secret word is kiwi" in allowed.stdout
    written = _cli("--yes", "--allow-files", f"write {tmp_path / 'out.txt'} hello", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "out.txt").read_text() == "hello"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    escaped = _cli("--yes", "--allow-files", f"write {outside} nope", cwd=tmp_path)
    assert escaped.returncode == 0 and not outside.exists()
