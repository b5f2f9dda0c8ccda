"""A scripted agent on the official Python SDK 1.0 (``agent-client-protocol`` 1.0.0rc3): protocol v1 and v2 behind
the SDK's ``AgentProtocolRouter``, over stdio or over the SDK's own HTTP and WebSocket server.

It runs in its own virtual environment (``tests/interop/py_sdk1.py`` installs it), never in acp-session's:

    python tests/interop/py_sdk1_agent.py [--versions 1,2] [--listen 127.0.0.1:0]

Without ``--listen`` it speaks on stdin/stdout. With it, the SDK's Starlette app (``acp.http.asgi``: POST, GET, DELETE
and WebSocket on ``/acp``) is served by hypercorn, and the first stdout line is its URL. The router picks the
version the client's ``initialize`` asks for (v2 for 2 and above, v1 for 1).

No model: the prompt's text decides. ``/permission`` asks to run a tool (``allow`` approves it), ``/thought`` thinks
before it answers, ``/slow N`` streams N chunks 50 ms apart (to cancel), ``/read PATH`` and ``/write PATH TEXT``
go through the client's file system (v1 only: v2 has no ``fs/*``), anything else is answered ``You said: TEXT``
word by word (``You asked: TEXT`` in mode ``ask``). Both versions offer the config option ``mode`` (``ask``,
``code``) and list their sessions. Sessions are ``s1``, ``s2``, ... per connection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp import schema as v1
from acp.experimental import AgentProtocolRouter
from acp.experimental.v2 import schema as v2

NAME = "py-sdk1-agent"
VERSION = "1.0.0rc3"
STEP = 0.05


def words(text: str) -> list[str]:
    """The pieces a reply is streamed in: each word with the space after it."""
    parts = text.split(" ")
    return [part + " " for part in parts[:-1]] + [parts[-1]]


def prompt_text(blocks: list[Any]) -> str:
    return " ".join(block.text for block in blocks if getattr(block, "type", None) == "text").strip()


@dataclass
class Session:
    session_id: str
    cwd: str
    mode: str = "code"
    turn: asyncio.Task[Any] | None = None
    turn_ended: asyncio.Event = field(default_factory=asyncio.Event)
    stop_reason: str | None = None
    generation: int = 0  # raised by session/cancel and close: the prompts held before it are withdrawn
    closed: bool = False
    count: int = 0
    history: list[Any] = field(default_factory=list)  # v2: the updates a resume with replay sends again
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    def reply_to(self, text: str) -> str:
        return f"{'You asked' if self.mode == 'ask' else 'You said'}: {text}"


class Sessions:
    """What both versions keep per connection: the sessions, in creation order."""

    def __init__(self) -> None:
        self.by_id: dict[str, Session] = {}

    def new(self, cwd: str) -> Session:
        session = Session(f"s{len(self.by_id) + 1}", cwd)
        self.by_id[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.by_id.get(session_id)
        if session is None:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        return session

    def set_mode(self, session_id: str, config_id: str, value: Any) -> Session:
        session = self.get(session_id)
        if config_id != "mode" or value not in ("ask", "code"):
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        session.mode = value
        return session


# -- protocol version 2 ----------------------------------------------------------------------------------------


def v2_options(session: Session) -> list[v2.SelectSessionConfigOption]:
    choices = [
        v2.SessionConfigSelectOption(value="ask", name="Ask"),
        v2.SessionConfigSelectOption(value="code", name="Code"),
    ]
    return [
        v2.SelectSessionConfigOption(
            config_id="mode", name="Mode", category="mode", current_value=session.mode, options=choices
        )
    ]


class V2Agent:
    """The v2 side: a prompt is answered with its message id once it is inserted; the turn runs as a task that
    streams its work and ends with an idle ``state_update`` carrying the stop reason. A prompt sent while a turn
    runs is held until it ends; ``session/cancel`` and ``session/close`` withdraw the held ones (-32800)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.sessions = Sessions()

    async def initialize(self, protocol_version: int, info: v2.Implementation, **_: Any) -> v2.InitializeResponse:
        capabilities = v2.AgentCapabilities(session=v2.SessionCapabilities(delete=v2.SessionDeleteCapabilities()))
        return v2.InitializeResponse(
            protocol_version=2, info=v2.Implementation(name=NAME, version=VERSION), capabilities=capabilities
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> v2.NewSessionResponse:
        for server in mcp_servers or []:
            if getattr(server, "type", None) != "stdio":  # only stdio MCP servers are baseline
                raise RequestError.invalid_params({"mcpServers": f"{server.type} servers are not supported"})
        session = self.sessions.new(cwd)
        return v2.NewSessionResponse(session_id=session.session_id, config_options=v2_options(session))

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> v2.ListSessionsResponse:
        found = [v2.SessionInfo(session_id=s.session_id, cwd=s.cwd) for s in self.sessions.by_id.values()]
        return v2.ListSessionsResponse(sessions=[info for info in found if cwd is None or info.cwd == cwd])

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **_: Any
    ) -> v2.SetSessionConfigOptionResponse:
        session = self.sessions.set_mode(session_id, config_id, value)
        return v2.SetSessionConfigOptionResponse(config_options=v2_options(session))

    async def resume_session(
        self, session_id: str, cwd: str, replay_from: Any = None, **_: Any
    ) -> v2.ResumeSessionResponse:
        session = self.sessions.get(session_id)
        if replay_from is not None and getattr(replay_from, "type", None) != "start":
            raise RequestError.invalid_params({"replayFrom": "only start is supported"})
        for update in list(session.history) if replay_from is not None else []:
            await self.conn.session_update(session_id=session_id, update=update)
        await self.conn.session_update(session_id=session_id, update=self.state(session))
        return v2.ResumeSessionResponse(config_options=v2_options(session))

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> v2.PromptResponse:
        session = self.sessions.get(session_id)
        for block in prompt:
            if block.type not in ("text", "resource_link"):  # the baseline: no image, audio or embedded context
                raise RequestError.invalid_params({"prompt": f"{block.type} content is not supported"})
        generation = session.generation
        while session.turn is not None:  # held until the running turn ends
            await session.turn_ended.wait()
            if session.generation != generation or session.closed:
                raise RequestError.request_cancelled()
        session.count += 1
        message_id = f"user-{session.count}"
        session.turn_ended = asyncio.Event()
        inserted = asyncio.Event()
        session.turn = asyncio.ensure_future(self.run_turn(session, prompt_text(prompt), inserted))
        await self.send(session, v2.RunningSessionStateUpdate(state="running"))
        await self.send(session, v2.UserMessageUpdate(message_id=message_id, content=prompt))
        inserted.set()
        return v2.PromptResponse(message_id=message_id)

    async def cancel_session(self, session_id: str, **_: Any) -> None:
        session = self.sessions.by_id.get(session_id)
        if session is not None:
            self.cancel(session)

    def cancel(self, session: Session) -> None:
        session.generation += 1
        session.turn_ended.set()  # held prompts wake, see the new generation and withdraw themselves
        if session.turn is not None:
            session.turn.cancel()

    async def close_session(self, session_id: str, **_: Any) -> v2.CloseSessionResponse:
        session = self.sessions.by_id.pop(session_id, None)
        if session is not None:
            session.closed = True
            turn = session.turn
            self.cancel(session)
            if turn is not None:
                await asyncio.wait({turn})  # its cancelled idle goes out before the close is answered
        return v2.CloseSessionResponse()

    async def delete_session(self, session_id: str, **_: Any) -> v2.DeleteSessionResponse:
        await self.close_session(session_id)
        return v2.DeleteSessionResponse()

    def state(self, session: Session) -> Any:
        if session.turn is not None:  # (a turn waiting for a permission answer reports running here too)
            return v2.RunningSessionStateUpdate(state="running")
        return v2.IdleSessionStateUpdate(state="idle", stop_reason=session.stop_reason)

    async def send(self, session: Session, update: Any) -> None:
        if getattr(update, "session_update", None) != "state_update":
            session.history.append(update)
        await self.conn.session_update(session_id=session.session_id, update=update)

    async def say(self, session: Session, text: str, *, thought: bool = False) -> None:
        kind = v2.AgentThoughtChunk if thought else v2.AgentMessageChunk
        message_id = f"{'thought' if thought else 'agent'}-{session.count}"
        for piece in words(text):
            await self.send(session, kind(message_id=message_id, content=v2.TextContentBlock(text=piece)))

    async def run_turn(self, session: Session, text: str, inserted: asyncio.Event) -> None:
        stop_reason = "end_turn"
        try:
            await inserted.wait()  # the running state and the user message go out before the turn's work
            if text.startswith("/slow"):
                for index in range(1, int(text.partition(" ")[2] or "40") + 1):
                    await self.say(session, f"chunk {index}. ")
                    await asyncio.sleep(STEP)
            elif text.startswith("/thought"):
                await self.say(session, "Thinking it over.", thought=True)
                await self.say(session, "Thought about it.")
            elif text.startswith("/permission"):
                await self.permission_turn(session)
            else:
                await self.say(session, session.reply_to(text))
        except asyncio.CancelledError:
            stop_reason = "cancelled"
            for _ in range(3):  # the SDK's task that withdraws a pending permission request goes first
                await asyncio.sleep(0)
        except ConnectionError:  # the client went away mid-turn
            stop_reason = "cancelled"
        session.turn = None
        session.stop_reason = stop_reason
        with contextlib.suppress(Exception):
            await self.send(session, v2.IdleSessionStateUpdate(state="idle", stop_reason=stop_reason))
        session.turn_ended.set()

    async def permission_turn(self, session: Session) -> None:
        tool_call_id = f"tc-{session.count}"
        await self.send(
            session,
            v2.SessionToolCallUpdate(
                tool_call_id=tool_call_id, title="rm -rf build/", kind="execute", status="pending"
            ),
        )
        await self.send(session, v2.RequiresActionSessionStateUpdate(state="requires_action"))
        answer = await self.conn.request_permission(
            session_id=session.session_id,
            title="Run rm -rf build/?",
            options=[
                v2.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                v2.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
            subject=v2.ToolCallPermissionSubjectVariant(tool_call=v2.ToolCallUpdate(tool_call_id=tool_call_id)),
        )
        await self.send(session, v2.RunningSessionStateUpdate(state="running"))
        allowed = getattr(answer.outcome, "option_id", None) == "allow"
        status = "completed" if allowed else "failed"
        await self.send(session, v2.SessionToolCallUpdate(tool_call_id=tool_call_id, status=status))
        await self.say(session, "Done." if allowed else "Not allowed.")


# -- protocol version 1 ----------------------------------------------------------------------------------------


def v1_options(session: Session) -> list[v1.SessionConfigOptionSelect]:
    choices = [
        v1.SessionConfigSelectOption(value="ask", name="Ask"),
        v1.SessionConfigSelectOption(value="code", name="Code"),
    ]
    return [
        v1.SessionConfigOptionSelect(
            id="mode", name="Mode", category="mode", current_value=session.mode, options=choices
        )
    ]


class V1Agent:
    """The v1 side: a prompt's answer (its stop reason) ends the turn; the client's file system is used when it
    offers one."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.sessions = Sessions()
        self.fs: v1.FileSystemCapabilities | None = None

    async def initialize(
        self, protocol_version: int, client_capabilities: v1.ClientCapabilities | None = None, **_: Any
    ) -> v1.InitializeResponse:
        self.fs = client_capabilities.fs if client_capabilities is not None else None
        capabilities = v1.AgentCapabilities(
            session_capabilities=v1.SessionCapabilities(
                list=v1.SessionListCapabilities(), close=v1.SessionCloseCapabilities()
            )
        )
        return v1.InitializeResponse(
            protocol_version=1,
            agent_capabilities=capabilities,
            agent_info=v1.Implementation(name=NAME, version=VERSION),
        )

    async def new_session(self, cwd: str, **_: Any) -> v1.NewSessionResponse:
        session = self.sessions.new(cwd)
        return v1.NewSessionResponse(session_id=session.session_id, config_options=v1_options(session))

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> v1.ListSessionsResponse:
        found = [v1.SessionInfo(session_id=s.session_id, cwd=s.cwd) for s in self.sessions.by_id.values()]
        return v1.ListSessionsResponse(sessions=[info for info in found if cwd is None or info.cwd == cwd])

    async def set_config_option(
        self, config_id: str, session_id: str, value: Any, **_: Any
    ) -> v1.SetSessionConfigOptionResponse:
        session = self.sessions.set_mode(session_id, config_id, value)
        return v1.SetSessionConfigOptionResponse(config_options=v1_options(session))

    async def close_session(self, session_id: str, **_: Any) -> v1.CloseSessionResponse:
        session = self.sessions.by_id.pop(session_id, None)
        if session is not None:
            session.cancelled.set()
        return v1.CloseSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.by_id.get(session_id)
        if session is not None:
            session.cancelled.set()

    async def send(self, session: Session, update: Any) -> None:
        await self.conn.session_update(session_id=session.session_id, update=update)

    async def say(self, session: Session, text: str, *, thought: bool = False) -> None:
        kind = v1.AgentThoughtChunk if thought else v1.AgentMessageChunk
        for piece in words(text):
            await self.send(session, kind(content=v1.TextContentBlock(type="text", text=piece)))

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> v1.PromptResponse:
        session = self.sessions.get(session_id)
        session.count += 1
        session.cancelled.clear()
        work = asyncio.ensure_future(self.run_turn(session, prompt_text(prompt)))
        cancelled = asyncio.ensure_future(session.cancelled.wait())
        try:
            await asyncio.wait({work, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            return v1.PromptResponse(stop_reason="cancelled")
        return v1.PromptResponse(stop_reason=work.result())

    async def run_turn(self, session: Session, text: str) -> str:
        command, _, rest = text.partition(" ")
        if command == "/slow":
            for index in range(1, int(rest or "40") + 1):
                await self.say(session, f"chunk {index}. ")
                await asyncio.sleep(STEP)
        elif command == "/thought":
            await self.say(session, "Thinking it over.", thought=True)
            await self.say(session, "Thought about it.")
        elif command == "/permission":
            return await self.permission_turn(session)
        elif command in ("/read", "/write"):
            await self.file_turn(session, command, rest)
        else:
            await self.say(session, session.reply_to(text))
        return "end_turn"

    async def permission_turn(self, session: Session) -> str:
        tool_call_id = f"tc-{session.count}"
        await self.send(
            session,
            v1.ToolCallStart(tool_call_id=tool_call_id, title="rm -rf build/", kind="execute", status="pending"),
        )
        answer = await self.conn.request_permission(
            session_id=session.session_id,
            tool_call=v1.ToolCallUpdate(tool_call_id=tool_call_id),
            options=[
                v1.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                v1.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        if answer.outcome.outcome == "cancelled":
            await self.send(session, v1.ToolCallProgress(tool_call_id=tool_call_id, status="failed"))
            return "cancelled"
        allowed = answer.outcome.option_id == "allow"
        await self.send(
            session, v1.ToolCallProgress(tool_call_id=tool_call_id, status="completed" if allowed else "failed")
        )
        await self.say(session, "Done." if allowed else "Not allowed.")
        return "end_turn"

    async def file_turn(self, session: Session, command: str, rest: str) -> None:
        path, _, text = rest.partition(" ")
        if self.fs is None or not (self.fs.read_text_file if command == "/read" else self.fs.write_text_file):
            await self.say(session, "No file system.")
            return
        try:
            if command == "/read":
                content = (await self.conn.read_text_file(session_id=session.session_id, path=path)).content
                await self.say(session, f"Read: {content}")
            else:
                await self.conn.write_text_file(session_id=session.session_id, path=path, content=text)
                await self.say(session, f"Wrote {len(text)} characters.")
        except RequestError as error:
            await self.say(session, f"Refused: {error.code}")


# -- running ---------------------------------------------------------------------------------------------------


def router(versions: set[int]) -> AgentProtocolRouter:
    return AgentProtocolRouter(v1=V1Agent if 1 in versions else None, v2=V2Agent if 2 in versions else None)


async def listen(app_router: AgentProtocolRouter, address: str) -> None:
    from acp.http.asgi import create_asgi_app
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    host, _, port = address.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    bound = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    print(f"http://{host}:{bound}/acp", flush=True)
    await serve(create_asgi_app(app_router), config)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", default="1,2", help="the protocol versions to serve, e.g. 2 or 1,2")
    parser.add_argument("--listen", metavar="HOST:PORT", help="serve over HTTP and WebSocket instead of stdio")
    args = parser.parse_args()
    app_router = router({int(v) for v in args.versions.split(",")})
    try:
        asyncio.run(listen(app_router, args.listen) if args.listen else app_router.run())
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
