"""The reference agent's protocol v1 front: v1's method set mapped onto the shared scenario engine.

Chosen at ``initialize`` when the client offers version 1 (negotiation.py). The sessions, scenarios and
cancellation are the v2 agent's (server.py); this front changes only what the wire carries: v1 requests are
turned into the model's, updates are sent in v1's shape (v1_wire.py), ``session/prompt`` is answered when the
turn ends with its ``stopReason`` (v1 has no idle state update), permission requests carry a bare
``toolCall``, and files and commands go through the client's ``fs/*`` and ``terminal/*`` methods when it
advertises them.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

import anyio
import msgspec

from acp_session.codec import convert, decoder, to_builtins
from acp_session.errors import InternalError, InvalidParams, RpcError
from acp_session.protocol.base import LAST_STOP_REASON_META
from acp_session.rpc import PendingRequest
from acp_session.schema import types as m
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    NewSessionResponse,
    PromptRequest,
    ResumeSessionResponse,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
)
from acp_session.schema.v1 import types as v1

from . import AGENT_NAME, AGENT_VERSION
from .config import MODE_VALUES
from .scenarios import available_commands
from .sessions import Session, SessionStore
from .shared import ServingAgent, SharedSessions
from .v1_mutants import V1_BROKEN_MODES, V1Mutants
from .v1_wire import UpdateMapper, config_options, is_idle, modes
from .v1_wire import available_commands as commands_update
from .workspace import CommandResult, Workspace, WorkspaceError

__all__ = ["ClientWorkspace", "V1Front", "V2Agent"]

_log = logging.getLogger("acp_conformance.agent")


def _offered(flag: Any) -> bool:
    return flag is True or isinstance(flag, (dict, msgspec.Struct))


def _mcp_servers(servers: Any) -> list[Any]:
    """v1 MCP servers in the model's shape (a v1 stdio server has no ``type``)."""
    out = []
    for server in to_builtins(servers) if isinstance(servers, list) else []:
        if isinstance(server, dict) and "type" not in server:
            server = {"type": "stdio", **server}
        out.append(server)
    return out


class V2Agent(ServingAgent, Protocol):
    """What this front maps v1's methods onto: the v2 agent of the same connection (``server.ReferenceAgent``), its
    sessions and the checks of their params. A protocol, so the front stays below the server that creates it."""

    shared: SharedSessions | None
    store: SessionStore

    async def new_session(self, request: mu.NewSessionRequest) -> NewSessionResponse: ...
    async def resume_session(self, request: mu.ResumeSessionRequest) -> ResumeSessionResponse: ...
    async def set_config_option(self, request: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse: ...
    async def prompt(self, request: PromptRequest) -> Any: ...
    def session_or_error(self, session_id: str, *, open_only: bool = True) -> Session: ...
    def check_path(self, path: str, what: str) -> None: ...
    def check_mcp(self, servers: Any) -> list[dict[str, Any]]: ...
    def mcp_transports(self) -> frozenset[str]: ...
    # What the broken v1 modes (v1_mutants.py) wrap or ask.
    def broken(self, mode: str) -> bool: ...
    def cancel(self, note: Any) -> None: ...
    async def close_session(self, request: Any) -> Any: ...
    async def list_sessions(self, request: Any) -> Any: ...
    async def delete_session(self, request: Any) -> Any: ...


class ClientWorkspace(Workspace):
    """Files and commands through a v1 client's ``fs/*`` and ``terminal/*`` methods (what it advertised)."""

    def __init__(self, front: V1Front, session_id: str) -> None:
        self.front = front
        self.session_id = session_id
        caps = front.client_capabilities
        fs = caps.fs if isinstance(caps.fs, v1.FileSystemCapabilities) else None
        forces = front.mutants.forces  # a broken mode may call what was not advertised
        self.reads = (fs is not None and fs.read_text_file is True) or forces("fs")
        self.writes = (fs is not None and fs.write_text_file is True) or forces("fs")
        self.runs_commands = caps.terminal is True or forces("terminal")
        elicitation = caps.elicitation if isinstance(caps.elicitation, v1.ElicitationCapabilities) else None
        form = elicitation is not None and isinstance(elicitation.form, v1.ElicitationFormCapabilities)
        self.elicits = form or forces("elicit")

    def _conn(self) -> Any:
        """The connection to ask: under --listen, the one serving the session now (a reconnect moves it)."""
        shared = self.front.agent.shared
        serving = shared.serving(self.session_id) if shared is not None else None
        if serving is not None and serving.v1 is not None:
            return serving.conn
        return self.front.conn

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self._conn().request(method, {"sessionId": self.session_id, **params})
        except RpcError as exc:
            raise WorkspaceError(f"{method}: {exc}") from None

    async def read_text(self, path: str) -> str | None:
        if not self.reads:
            return await super().read_text(path)
        path = self.front.mutants.read_path(path)
        try:
            result = await self._conn().request("fs/read_text_file", {"sessionId": self.session_id, "path": path})
        except RpcError as exc:
            if exc.code == -32002:  # resource not found: the file does not exist
                return None
            raise WorkspaceError(f"fs/read_text_file: {exc}") from None
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise WorkspaceError("fs/read_text_file answered without text content")
        return content

    async def write_text(self, path: str, text: str) -> None:
        if not self.writes:
            await super().write_text(path, text)
            return
        await self._call("fs/write_text_file", {"path": path, "content": text})

    async def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if not self.elicits:  # a mode the client did not advertise is never requested (elicitation.mdx)
            return None
        result = await self._call("elicitation/create", {"mode": "form", "message": message, "requestedSchema": schema})
        return result if isinstance(result, dict) else {}

    async def start_command(self, command: str, args: list[str], cwd: str) -> str:
        result = await self._call("terminal/create", {"command": command, "args": args, "cwd": cwd})
        terminal_id = result.get("terminalId") if isinstance(result, dict) else None
        if not isinstance(terminal_id, str):
            raise WorkspaceError("terminal/create answered without a terminalId")
        return terminal_id

    async def finish_command(self, terminal_id: str) -> CommandResult:
        try:
            exit_status = await self._call("terminal/wait_for_exit", {"terminalId": terminal_id})
            output = await self._call(
                "terminal/output", {"terminalId": self.front.mutants.output_terminal(terminal_id)}
            )
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._call("terminal/release", {"terminalId": terminal_id})
                except WorkspaceError:
                    _log.warning("terminal/release of %s failed", terminal_id)
        code = exit_status.get("exitCode") if isinstance(exit_status, dict) else None
        text = output.get("output") if isinstance(output, dict) else None
        return CommandResult(
            terminal_id, text if isinstance(text, str) else "", code if isinstance(code, int) else None
        )


class V1Front:
    """Serves one v1 client: registers v1's methods on the agent's connection and speaks v1 on its behalf."""

    def __init__(self, agent: V2Agent) -> None:
        self.agent = agent
        self.conn = agent.conn
        self.client_capabilities = v1.ClientCapabilities()
        self.mappers: dict[str, UpdateMapper] = {}
        self.turn_ends: dict[str, Any] = {}  # session id -> the idle state update that ended its last turn
        self.mutants = V1Mutants(self, frozenset(mode for mode in V1_BROKEN_MODES if agent.broken(mode)))

    # -- initialize --------------------------------------------------------------------------------------

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            request = convert(params, v1.InitializeRequest)
        except (msgspec.ValidationError, TypeError) as exc:
            raise InvalidParams(
                data={"reason": f"not a v1 initialize request: {exc}", "supportedVersions": [1, 2]}
            ) from None
        if isinstance(request.client_capabilities, v1.ClientCapabilities):
            self.client_capabilities = request.client_capabilities
        self._register()
        mcp = self.agent.mcp_transports()
        answer = {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": "http" in mcp, "sse": False},
                "sessionCapabilities": {
                    "list": {},
                    "delete": {},
                    "additionalDirectories": {},
                    "resume": {},
                    "close": {},
                },
            },
            "authMethods": [],
            "agentInfo": {"name": AGENT_NAME, "version": AGENT_VERSION, "title": "ACP reference agent"},
        }
        return self.mutants.initialize(params, answer)

    def _register(self) -> None:
        on = self.conn.on_request
        on("session/new", self.new_session, decoder(v1.NewSessionRequest))
        on("session/load", self.load_session, decoder(v1.LoadSessionRequest))
        on("session/resume", self.resume_session, decoder(v1.ResumeSessionRequest))
        on("session/prompt", self.prompt, decoder(v1.PromptRequest))
        on("session/set_mode", self.set_mode, decoder(v1.SetSessionModeRequest))
        on("session/set_config_option", self.set_config_option, decoder(v1.SetSessionConfigOptionRequest))
        on("authenticate", self.authenticate, decoder(v1.AuthenticateRequest))
        # session/list, session/close, session/delete and session/cancel have the same shape in both versions.
        self.mutants.install()

    # -- what the engine calls ---------------------------------------------------------------------------

    def _mapper(self, session_id: str) -> UpdateMapper:
        mapper = self.mappers.get(session_id)
        if mapper is None:
            session_caps = self.client_capabilities.session
            options = getattr(session_caps, "config_options", None)
            mapper = UpdateMapper(
                boolean_options=_offered(getattr(options, "boolean", None)) or self.mutants.boolean_options(),
                notices=_offered(getattr(session_caps, "notices", None)) or self.mutants.notices(),
                compaction=_offered(getattr(session_caps, "compaction", None)),
            )
            self.mappers[session_id] = mapper
        return mapper

    async def send_update(self, session_id: str, update: Any, *, replay: bool = False) -> None:
        if is_idle(update):
            self.turn_ends[session_id] = update
        for plain in self._mapper(session_id).map(update, replay=replay):
            plain = self.mutants.update(plain)
            await self.conn.notify("session/update", {"sessionId": session_id, "update": plain})

    def request_permission(self, request: m.RequestPermissionRequest) -> PendingRequest[m.RequestPermissionResponse]:
        """v1's permission request: the subject's tool call (with the title), the same options and answer."""
        subject = request.subject
        call: dict[str, Any] = {}
        if isinstance(subject, m.ToolCallPermissionSubject):
            call = to_builtins(subject.tool_call)
        call.setdefault("title", request.title)
        params = {"sessionId": request.session_id, "toolCall": call, "options": to_builtins(request.options)}
        params = self.mutants.permission(params)
        return self.conn.request("session/request_permission", params, decode=decoder(m.RequestPermissionResponse))

    def workspace(self, session_id: str) -> Workspace:
        return ClientWorkspace(self, session_id)

    # -- sessions ----------------------------------------------------------------------------------------

    def _session_values(self, session: Session) -> dict[str, Any]:
        boolean = self._mapper(session.session_id).boolean_options
        return {"modes": modes(session.config), "configOptions": config_options(session.config, boolean=boolean)}

    async def _announce_commands(self, session_id: str) -> None:
        """v1 has no commands in the session/new (or load) answer: an update says them, just before that answer
        (a client handles updates for the session it is opening: ACP2-031; nothing comes after the answer that a
        client waiting for a quiet session could take for a stray update)."""
        update = self.mutants.commands(commands_update(available_commands()))
        await self.conn.notify("session/update", {"sessionId": session_id, "update": update})

    async def new_session(self, request: v1.NewSessionRequest) -> dict[str, Any]:
        earlier = self.mutants.check_new(request)
        if earlier is not None:
            await self._announce_commands(earlier["sessionId"])
            return earlier
        plain: dict[str, Any] = {"cwd": request.cwd, "mcpServers": _mcp_servers(request.mcp_servers)}
        if isinstance(request.additional_directories, list):
            plain["additionalDirectories"] = request.additional_directories
        answer = await self.agent.new_session(convert(plain, mu.NewSessionRequest))
        session = self.agent.store.get(answer.session_id)
        assert session is not None
        await self._announce_commands(answer.session_id)
        return self.mutants.new_session(request, {"sessionId": answer.session_id, **self._session_values(session)})

    async def load_session(self, request: v1.LoadSessionRequest) -> dict[str, Any] | None:
        """Open a known session again and replay its history, all before the answer (session-setup.mdx)."""
        session = self.agent.session_or_error(request.session_id, open_only=False)
        self.agent.check_path(request.cwd, "cwd")
        if os.path.normpath(request.cwd) != os.path.normpath(session.cwd):
            raise InvalidParams(data={"reason": "cwd differs from the session's working directory"})
        session.mcp_servers = self.agent.check_mcp(convert(_mcp_servers(request.mcp_servers), list[m.McpServer]))
        if isinstance(request.additional_directories, list):
            for path in request.additional_directories:
                self.agent.check_path(path, "additionalDirectories entry")
            session.additional_directories = list(request.additional_directories)
        session.open = True
        mapper = self._mapper(session.session_id)
        mapper.reset()
        shared = self.agent.shared
        if shared is None:
            if self.mutants.replays():
                await self._replay(session)
            else:
                self.mutants.replay_after(session.session_id, self._replayed(session))
            return self.mutants.load_answer(self._loaded(session))
        # --listen: the session is taken over from whichever connection served it; live updates wait for the
        # replay (delivered once), then a permission request the turn waits for is asked here.
        shared.begin_resume(session.session_id, self.agent)
        try:
            await self._replay(session)
        finally:
            await shared.end_resume(session.session_id)
        if session.work_done is not None and not session.work_done.is_set():
            # v1 has no state updates: a turn's end is its prompt's answer, which died with the connection that
            # asked. The load is answered when the running turn ends, so the client sees the whole turn, and
            # its answer says how the turn ended.
            await session.work_done.wait()
        return self.mutants.load_answer(self._loaded(session))

    def _loaded(self, session: Session) -> dict[str, Any]:
        """The ``session/load`` answer: the session's values and, in ``_meta``, the stop reason of its last turn
        when no turn runs (``LAST_STOP_REASON_META``: a client whose prompt was lost with its connection learns
        there how its turn ended). v1 has no ``error`` stop reason (that prompt failed): not said."""
        values = self._session_values(session)
        idle = session.work_done is None or session.work_done.is_set()
        if idle and session.last_stop_reason is not None and session.last_stop_reason != "error":
            values["_meta"] = {LAST_STOP_REASON_META: session.last_stop_reason}
        return values

    async def _replay(self, session: Session) -> None:
        for update in list(session.history):
            await self.send_update(session.session_id, update, replay=True)
        await self._announce_commands(session.session_id)

    def _replayed(self, session: Session) -> list[dict[str, Any]]:
        """The v1 updates ``_replay`` sends, unsent (for the broken mode that sends them after the answer)."""
        mapper = self._mapper(session.session_id)
        return [
            self.mutants.update(plain) for update in list(session.history) for plain in mapper.map(update, replay=True)
        ]

    async def resume_session(self, request: v1.ResumeSessionRequest) -> dict[str, Any]:
        self.mutants.check_resume(request)
        plain: dict[str, Any] = {"sessionId": request.session_id, "cwd": request.cwd}
        if isinstance(request.mcp_servers, list):
            plain["mcpServers"] = _mcp_servers(request.mcp_servers)
        if isinstance(request.additional_directories, list):
            plain["additionalDirectories"] = request.additional_directories
        await self.agent.resume_session(convert(plain, mu.ResumeSessionRequest))  # no replay: v1 resume has none
        session = self.agent.session_or_error(request.session_id)
        self._mapper(session.session_id).reset()
        if self.mutants.resume_replays():
            await self._replay(session)
        return self._session_values(session)

    async def set_mode(self, request: v1.SetSessionModeRequest) -> dict[str, Any]:
        session = self.agent.session_or_error(request.session_id)
        self.mutants.set_mode()
        if request.mode_id not in MODE_VALUES:
            raise InvalidParams(data={"reason": f"unknown mode {request.mode_id!r}", "modeId": request.mode_id})
        session.config.mode = request.mode_id
        self.agent.store.save(session)
        return {}

    async def set_config_option(self, request: v1.SetSessionConfigOptionRequest) -> dict[str, Any]:
        session = self.agent.session_or_error(request.session_id)
        before = session.config.mode
        change: m.SetSessionConfigOptionRequest
        if isinstance(request.value, bool):
            change = m.SetSessionConfigOptionBooleanRequest(
                session_id=request.session_id, config_id=request.config_id, value=request.value
            )
        else:
            change = m.SetSessionConfigOptionValueIdRequest(
                session_id=request.session_id, config_id=request.config_id, value=request.value
            )
        await self.agent.set_config_option(change)
        if session.config.mode != before:  # the mode option is the session's mode too (session-config-options.mdx)
            await self.conn.notify(
                "session/update",
                {
                    "sessionId": session.session_id,
                    "update": {"sessionUpdate": "current_mode_update", "currentModeId": session.config.mode},
                },
            )
        boolean = self._mapper(session.session_id).boolean_options
        answer = {"configOptions": config_options(session.config, boolean=boolean)}
        return self.mutants.config_answer(request.config_id, answer)

    async def authenticate(self, request: v1.AuthenticateRequest) -> dict[str, Any]:
        # No auth methods are advertised: nothing is needed, and no method id is known.
        raise InvalidParams(data={"reason": f"unknown auth method {request.method_id!r} (none are advertised)"})

    # -- prompts -----------------------------------------------------------------------------------------

    async def prompt(self, request: v1.PromptRequest) -> dict[str, Any]:
        """Insert the prompt as v2 does, then answer when its turn ends (v1's prompt spans the whole turn)."""
        self.mutants.check_prompt(request)
        blocks = [to_builtins(block) for block in request.prompt]
        await self.agent.prompt(convert({"sessionId": request.session_id, "prompt": blocks}, m.PromptRequest))
        session = self.agent.session_or_error(request.session_id, open_only=False)
        self.turn_ends.pop(session.session_id, None)
        await self.mutants.turn_started(session.session_id)
        done = session.work_done  # this turn's: set before prompt() returned, nothing ran in between
        if done is not None:
            await done.wait()
        end = self.turn_ends.pop(session.session_id, None)
        if end is None:  # the session was closed (or deleted) during the turn
            return self.mutants.prompt_result(session.session_id, {"stopReason": "cancelled"})
        if end.stop_reason == "error":  # v1 has no error stop reason: the prompt fails instead
            error = end.error if isinstance(end.error, m.Error) else None
            raise InternalError(message=error.message if error is not None else "the turn failed")
        return self.mutants.prompt_result(session.session_id, {"stopReason": end.stop_reason})
