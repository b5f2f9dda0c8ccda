"""A deterministic ACP protocol-version-1 agent built on the official Python SDK (``agent-client-protocol``, ``acp``).

Run as ``python tests/interop/py_v1_agent.py [--store DIR]`` and speak ACP v1 on its stdin/stdout. No model: the
first text block of a prompt is a command (``read PATH``, ``write PATH TEXT``, ``run CMD ARGS...``, ``permission``,
``plan``, ``think``, ``slow N``; anything else is echoed). See V1_AGENTS.md beside this file for the exact wire.

Sessions are ``py-sess-1``, ``py-sess-2``, ...; tool calls ``call-1``, ``call-2``, ... per session. Each session's
history (the user's prompt blocks and every conversation update sent) is kept in memory and, with ``--store DIR``,
in ``DIR/<sessionId>.json`` after each turn, so another process can ``session/load`` it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

AGENT_NAME = "py-v1-agent"
AGENT_VERSION = "0.1.0"
MODES = [
    SessionMode(id="ask", name="Ask", description="Answers without changing anything"),
    SessionMode(id="code", name="Code", description="May read, write and run"),
]
DEFAULT_MODE = "ask"
SLOW_DELAY = 0.05

# The updates a session's history holds (and session/load replays), by their sessionUpdate tag.
HISTORY_KINDS: dict[str, Any] = {
    "user_message_chunk": UserMessageChunk,
    "agent_message_chunk": AgentMessageChunk,
    "agent_thought_chunk": AgentThoughtChunk,
    "tool_call": ToolCallStart,
    "tool_call_update": ToolCallProgress,
    "plan": AgentPlanUpdate,
}

Update = Any


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _message(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=_text(text))


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class TurnCancelled(Exception):
    """The client cancelled the turn (session/cancel, or a cancelled permission outcome)."""


@dataclass
class Session:
    session_id: str
    cwd: str
    mode: str = DEFAULT_MODE
    history: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: int = 0
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    in_turn: bool = False

    def next_tool_call_id(self) -> str:
        self.tool_calls += 1
        return f"call-{self.tool_calls}"

    def modes(self) -> SessionModeState:
        return SessionModeState(current_mode_id=self.mode, available_modes=MODES)

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "cwd": self.cwd, "mode": self.mode, "history": self.history}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        session = cls(session_id=data["sessionId"], cwd=data["cwd"], mode=data["mode"], history=data["history"])
        session.tool_calls = sum(1 for u in session.history if u["sessionUpdate"] == "tool_call")
        return session


class PyV1Agent:
    """The agent: one instance per connection."""

    def __init__(self, store: Path | None = None, *, ignore_capabilities: bool = False) -> None:
        # The client's file-system and terminal capabilities, from initialize; with ignore_capabilities the agent
        # calls fs/* and terminal/* regardless (to test how a client answers an agent that does so).
        self.ignore_capabilities = ignore_capabilities
        self.client_fs: Any = None
        self.client_terminal = False
        self.store = store
        self.sessions: dict[str, Session] = {}
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- lifecycle -------------------------------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        if client_capabilities is not None:
            self.client_fs = client_capabilities.fs
            self.client_terminal = bool(client_capabilities.terminal)
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(image=True, embedded_context=True)
            ),
            agent_info=Implementation(name=AGENT_NAME, title="Python SDK v1 test agent", version=AGENT_VERSION),
            auth_methods=[],
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        number = len(self.sessions) + 1
        while self._stored(f"py-sess-{number}") is not None or f"py-sess-{number}" in self.sessions:
            number += 1
        session = Session(session_id=f"py-sess-{number}", cwd=cwd)
        self.sessions[session.session_id] = session
        self._save(session)
        return NewSessionResponse(session_id=session.session_id, modes=session.modes())

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        session = self.sessions.get(session_id) or self._stored(session_id)
        if session is None:
            raise RequestError.resource_not_found(session_id)
        session.cwd = cwd
        self.sessions[session_id] = session
        for data in session.history:
            update = HISTORY_KINDS[data["sessionUpdate"]].model_validate(data)
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=session.modes())

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in {mode.id for mode in MODES}:
            raise RequestError.invalid_params({"modeId": mode_id, "reason": "unknown mode"})
        session.mode = mode_id
        self._save(session)
        update = CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)
        await self.conn.session_update(session_id=session_id, update=update)
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.in_turn:
            session.cancelled.set()

    # -- the prompt turn -------------------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.in_turn:
            raise RequestError.invalid_request({"sessionId": session_id, "reason": "a prompt turn is in progress"})
        session.in_turn = True
        session.cancelled.clear()
        for block in prompt:
            session.history.append(_dump(UserMessageChunk(session_update="user_message_chunk", content=block)))
        text = next((block.text for block in prompt if isinstance(block, TextContentBlock)), "")
        try:
            await self._turn(session, text.strip())
            stop = "cancelled" if session.cancelled.is_set() else "end_turn"
        except TurnCancelled:
            stop = "cancelled"
        except RequestError as exc:
            await self._send(session, _message(f"error: {exc}"))
            stop = "end_turn"
        finally:
            session.in_turn = False
            self._save(session)
        return PromptResponse(stop_reason=stop)

    async def _turn(self, session: Session, text: str) -> None:
        command, _, rest = text.partition(" ")
        if command == "read" and rest:
            await self._read(session, rest.strip())
        elif command == "write" and rest.strip():
            path, _, content = rest.strip().partition(" ")
            await self._write(session, path, content)
        elif command == "run" and rest.strip():
            await self._run(session, rest.split())
        elif text == "permission":
            await self._permission(session)
        elif text == "plan":
            await self._plan(session)
        elif text == "think":
            await self._send(session, AgentThoughtChunk(session_update="agent_thought_chunk", content=_text("Hmm.")))
            await self._send(session, _message("I thought about it."))
        elif command == "slow" and rest.strip().isdigit():
            await self._slow(session, int(rest))
        else:
            for piece in ("You ", "said: ", text):
                await self._send(session, _message(piece))

    def _offered(self, what: str) -> None:
        """Only call the client for what it advertised (``--ignore-capabilities`` turns the check off)."""
        if self.ignore_capabilities:
            return
        fs = self.client_fs
        offered = {
            "read": bool(fs is not None and fs.read_text_file),
            "write": bool(fs is not None and fs.write_text_file),
            "terminal": self.client_terminal,
        }[what]
        if not offered:
            raise RequestError.method_not_found(f"the client does not offer {what}")

    async def _read(self, session: Session, path: str) -> None:
        self._offered("read")
        call = session.next_tool_call_id()
        await self._tool_start(session, call, f"Read {path}", "read", path, {"path": path})
        try:
            response = await self.conn.read_text_file(session_id=session.session_id, path=path)
        except RequestError:
            await self._tool_update(session, call, "failed")
            raise
        content = [acp.tool_content(_text(response.content))]
        await self._tool_update(session, call, "completed", content=content)
        await self._send(session, _message(response.content))

    async def _write(self, session: Session, path: str, text: str) -> None:
        self._offered("write")
        call = session.next_tool_call_id()
        await self._tool_start(session, call, f"Write {path}", "edit", path, {"path": path, "content": text})
        try:
            old = (await self.conn.read_text_file(session_id=session.session_id, path=path)).content
        except RequestError:
            old = None  # a new file (or one the client will not show us): a diff without oldText
        try:
            await self.conn.write_text_file(session_id=session.session_id, path=path, content=text)
        except RequestError:
            await self._tool_update(session, call, "failed")
            raise
        diff = acp.tool_diff_content(path, text, old)
        await self._tool_update(session, call, "completed", content=[diff])
        await self._send(session, _message(f"wrote {path}"))

    async def _run(self, session: Session, argv: list[str]) -> None:
        self._offered("terminal")
        call = session.next_tool_call_id()
        title = "Run " + " ".join(argv)
        start = ToolCallStart(
            session_update="tool_call",
            tool_call_id=call,
            title=title,
            kind="execute",
            status="pending",
            raw_input={"command": argv[0], "args": argv[1:]},
        )
        await self._send(session, start)
        sid = session.session_id
        try:
            terminal = await self.conn.create_terminal(session_id=sid, command=argv[0], args=argv[1:], cwd=session.cwd)
        except RequestError:
            await self._tool_update(session, call, "failed")
            raise
        terminal_id = terminal.terminal_id
        await self._tool_update(session, call, "in_progress", content=[acp.tool_terminal_ref(terminal_id)])
        try:
            exited = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal_id)
            output = await self.conn.terminal_output(session_id=sid, terminal_id=terminal_id)
        except RequestError:
            await self._tool_update(session, call, "failed")
            raise
        finally:
            await self.conn.release_terminal(session_id=sid, terminal_id=terminal_id)
        status = "completed" if exited.exit_code == 0 else "failed"
        raw = {"exitCode": exited.exit_code, "signal": exited.signal, "truncated": output.truncated}
        await self._tool_update(session, call, status, raw_output=raw)
        ending = f"exit code: {exited.exit_code}" if exited.signal is None else f"signal: {exited.signal}"
        separator = "" if not output.output or output.output.endswith("\n") else "\n"
        await self._send(session, _message(f"{output.output}{separator}{ending}"))

    async def _permission(self, session: Session) -> None:
        call = session.next_tool_call_id()
        path = os.path.join(session.cwd, "protected.txt")
        await self._tool_start(session, call, "Touch the protected file", "edit", path, {"path": path})
        options = [
            PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        tool_call = ToolCallUpdate(tool_call_id=call, title="Touch the protected file", kind="edit", status="pending")
        response = await self.conn.request_permission(
            session_id=session.session_id, tool_call=tool_call, options=options
        )
        outcome = response.outcome
        if outcome.outcome == "cancelled" or session.cancelled.is_set():
            raise TurnCancelled
        if outcome.option_id == "allow":
            await self._tool_update(session, call, "completed")
            await self._send(session, _message("allowed"))
        elif outcome.option_id == "reject":
            await self._tool_update(session, call, "failed")
            await self._send(session, _message("rejected"))
        else:
            raise RequestError.invalid_params({"optionId": outcome.option_id, "reason": "not one of the options"})

    async def _plan(self, session: Session) -> None:
        entries = [
            acp.plan_entry("Read the code", priority="high", status="in_progress"),
            acp.plan_entry("Write the fix", priority="medium", status="pending"),
        ]
        await self._send(session, acp.update_plan(entries))
        await self._send(session, _message("Planned 2 steps."))

    async def _slow(self, session: Session, count: int) -> None:
        for index in range(1, count + 1):
            if session.cancelled.is_set():
                raise TurnCancelled
            await self._send(session, _message(f"chunk {index}/{count}\n"))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(session.cancelled.wait(), SLOW_DELAY)
        if session.cancelled.is_set():
            raise TurnCancelled

    # -- helpers ---------------------------------------------------------------------------------------------------

    async def _send(self, session: Session, update: Update) -> None:
        session.history.append(_dump(update))
        await self.conn.session_update(session_id=session.session_id, update=update)

    async def _tool_start(
        self, session: Session, call: str, title: str, kind: str, path: str, raw_input: dict[str, Any]
    ) -> None:
        start = ToolCallStart(
            session_update="tool_call",
            tool_call_id=call,
            title=title,
            kind=kind,
            status="pending",
            locations=[ToolCallLocation(path=path)],
            raw_input=raw_input,
        )
        await self._send(session, start)

    async def _tool_update(
        self, session: Session, call: str, status: str, content: list[Any] | None = None, raw_output: Any = None
    ) -> None:
        progress = ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call, status=status, content=content, raw_output=raw_output
        )
        await self._send(session, progress)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown session"})
        return session

    def _stored(self, session_id: str) -> Session | None:
        if self.store is None:
            return None
        path = self.store / f"{session_id}.json"
        if not path.is_file():
            return None
        return Session.from_json(json.loads(path.read_text()))

    def _save(self, session: Session) -> None:
        if self.store is None:
            return
        self.store.mkdir(parents=True, exist_ok=True)
        path = self.store / f"{session.session_id}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(session.to_json()))
        tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="keep each session's history in DIR/<sessionId>.json")
    parser.add_argument(
        "--ignore-capabilities", action="store_true", help="call fs/* and terminal/* even when the client lacks them"
    )
    args = parser.parse_args()
    asyncio.run(acp.run_agent(PyV1Agent(args.store, ignore_capabilities=args.ignore_capabilities)))


if __name__ == "__main__":
    main()
