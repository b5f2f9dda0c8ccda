"""Protocol version 1 behind the model: every v1 method and update mapped in one place.

The mapping, row by row, is documented in docs/protocol-versions.md. In short:

* model calls become their v1 methods (``session/resume`` with replay becomes ``session/load``,
  ``auth/login`` becomes ``authenticate``, the ``mode`` / ``model`` options become ``session/set_mode`` /
  ``session/set_model``) and v1 results become model results;
* a v1 turn is the pending ``session/prompt``: the adapter reports the user message and ``running``
  when the prompt is sent (or, while an earlier prompt of the session is unanswered, once that one's turn
  ended: ``turns.py``) and ``idle`` with the stop reason when it is answered, as v2 agents do;
* v1 updates become model updates: chunks get message ids (a run of chunks of one kind is one message),
  ``tool_call`` becomes the first ``tool_call_update``, ``plan`` a ``plan_update``, ``current_mode_update``
  a ``config_option_update``;
* the agent's calls into the client (``fs/*``, ``terminal/*``) go to the builder's providers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import msgspec
from msgspec import UNSET

from ...client_errors import CapabilityNotSupported
from ...codec import convert, decoder, to_builtins
from ...errors import AcpError
from ...rpc import Connection, PendingRequest
from ...schema import types as m
from ...schema import unstable as mu
from ...schema.v1 import types as v1
from ...schema.v1 import unstable as v1u
from ..base import AUTH_STATUS_ROUTES, ClientSide, PromptExchange, ProtocolAdapter
from ..capabilities import PREVIEW_METHODS
from ..routes import Route, Target
from ..usage_quirk import skip_unknown_usage
from . import convert as cv
from .chunks import decode_notification
from .incoming import MAX_UNOPENED_SESSIONS, V1Incoming
from .sessions import V1Session, read_models
from .turns import V1Turn

__all__ = ["MAX_UNOPENED_SESSIONS", "V1Protocol"]

T = TypeVar("T")
_log = logging.getLogger("acp_session.protocol")

_NEW = decoder(v1.NewSessionResponse)
_LOAD = decoder(v1.LoadSessionResponse)
_RESUME = decoder(v1.ResumeSessionResponse)
_LIST = decoder(v1.ListSessionsResponse)
_SET_CONFIG = decoder(v1.SetSessionConfigOptionResponse)
_PROMPT = decoder(v1u.PromptResponse)
_INITIALIZE_UNSTABLE = decoder(v1u.InitializeResponse)
_FORK = decoder(v1u.ForkSessionResponse)
_IGNORE = msgspec.json.Decoder()


class _SetModel(msgspec.Struct, rename="camel", kw_only=True):
    """Params of ``session/set_model``, which several v1 agents accept but the v1 schema does not define."""

    session_id: str
    model_id: str


class V1Protocol(V1Incoming, ProtocolAdapter):
    version: ClassVar[int] = 1
    routes: ClassVar[tuple[Route, ...]] = (
        Route(
            "session/update",
            "notification",
            skip_unknown_usage(decode_notification),
            Target("adapter", "_on_update"),
            batch=Target("adapter", "_on_updates"),
        ),
        Route(
            "session/request_permission",
            "request",
            decoder(v1.RequestPermissionRequest),
            Target("adapter", "_on_permission"),
        ),
        Route(
            "elicitation/create", "request", decoder(v1.CreateElicitationRequest), Target("adapter", "_on_elicitation")
        ),
        Route(  # the same shape in both versions
            "elicitation/complete",
            "notification",
            decoder(m.CompleteElicitationNotification),
            Target("client", "elicitation_complete"),
            when="elicitation_complete",
        ),
        *AUTH_STATUS_ROUTES,
        Route(
            "fs/read_text_file",
            "request",
            decoder(v1.ReadTextFileRequest),
            Target("file_system", "read_text_file"),
            when="read_files",
            advertises="fs.readTextFile",
        ),
        Route(
            "fs/write_text_file",
            "request",
            decoder(v1.WriteTextFileRequest),
            Target("adapter", "_write_text_file"),
            when="write_files",
            advertises="fs.writeTextFile",
            lossless=True,  # never write a replacement character where the agent sent half an emoji
        ),
        *(
            Route(
                method,
                "request",
                decoder(params),
                Target("terminals", name),
                when="terminals",
                advertises="terminal",
                waits=method == "terminal/wait_for_exit",  # holds no slot while the command runs
            )
            for method, params, name in (
                ("terminal/create", v1.CreateTerminalRequest, "create_terminal"),
                ("terminal/output", v1.TerminalOutputRequest, "terminal_output"),
                ("terminal/wait_for_exit", v1.WaitForTerminalExitRequest, "wait_for_terminal_exit"),
                ("terminal/kill", v1.KillTerminalRequest, "kill_terminal"),
                ("terminal/release", v1.ReleaseTerminalRequest, "release_terminal"),
            )
        ),
    )
    """The agent's calls into a v1 client; ``fs/*`` and ``terminal/*`` exist only with their provider (and, for
    ``fs/*``, the access the builder allowed), and the ``fs`` / ``terminal`` capabilities are derived from them."""

    def __init__(self, rpc: Connection, response: v1.InitializeResponse, raw: bytes | None = None) -> None:
        model = cv.initialize_response(response)
        preview = _INITIALIZE_UNSTABLE(raw) if raw is not None else None
        super().__init__(rpc, model, cv.capability_record(model, preview))
        self.wire_initialize_response = response
        """The agent's ``initialize`` answer as v1 types (what the model cannot hold is still here)."""
        caps = response.agent_capabilities
        self._caps = caps if isinstance(caps, v1.AgentCapabilities) else v1.AgentCapabilities()
        sc = self._caps.session_capabilities
        self._session_caps = sc if isinstance(sc, v1.SessionCapabilities) else v1.SessionCapabilities()
        self._sessions: dict[str, V1Session] = {}  # sessions the client opened, loaded, resumed or used: kept
        self._unopened: dict[str, V1Session] = {}  # ids seen only in updates: at most MAX_UNOPENED_SESSIONS
        self._client: ClientSide | None = None
        self.ignored_updates = 0
        """``session/update``s of a kind only protocol version 2 has, which a v1 agent sent and the adapter ignored."""

    # -- what the agent offers -------------------------------------------------------------------------------

    def supports(self, method: str) -> bool:
        sc = self._session_caps
        if method in ("session/new", "session/prompt", "session/cancel", "session/set_config_option"):
            return True
        if method in PREVIEW_METHODS:
            return method in _REQUESTS and super().supports(method)
        if method == "session/load":
            return cv.offered(self._caps.load_session)
        if method == "session/resume":
            return cv.offered(sc.resume) or cv.offered(self._caps.load_session)
        if method in ("session/list", "session/close", "session/delete"):
            return cv.offered(getattr(sc, method.split("/")[1]))
        if method == "auth/login":
            return bool(self.initialize_response.auth_methods)
        if method == "auth/logout":
            auth = self._caps.auth
            return isinstance(auth, v1.AgentAuthCapabilities) and cv.offered(auth.logout)
        return method.startswith("_")

    def session(self, session_id: str) -> V1Session:
        """The record of a session the client opened, loaded, resumed or sends to: kept until it is closed,
        whatever the agent sends (a record made for its updates before, e.g. while ``session/new`` was in
        flight, is taken over, so the message ids it gave go on)."""
        state = self._sessions.get(session_id)
        if state is None:
            state = self._unopened.pop(session_id, None) or V1Session(session_id)
            self._sessions[session_id] = state
        return state

    @property
    def unopened_session_records(self) -> int:
        """How many records this adapter keeps for session ids it saw only in updates (at most
        ``MAX_UNOPENED_SESSIONS``; docs/robustness.md)."""
        return len(self._unopened)

    def request(self, method: str, params: Any, decode: Callable[[bytes], T]) -> PendingRequest[T]:
        mapper = _REQUESTS.get(method)
        if mapper is None:
            if method.startswith("_"):
                return self.rpc.request(method, params, decode=decode)
            raise CapabilityNotSupported(method, "ACP protocol version 2 (the agent speaks version 1)")
        if not isinstance(params, msgspec.Struct):  # plain JSON through ClientConnection.request()
            spec = m.AGENT_METHODS.get(method) or mu.AGENT_METHODS[method]
            params = convert(params, spec.params)
        return cast("PendingRequest[T]", mapper(self, params))

    async def notify(self, method: str, params: Any) -> None:
        if method == "session/cancel" or method.startswith("_"):
            await self.rpc.notify(method, params)  # v1's cancel notification has the same shape
            return
        raise CapabilityNotSupported(method, "ACP protocol version 2 (the agent speaks version 1)")

    def _send(self, method: str, params: Any, result: Callable[[bytes], Any]) -> PendingRequest[Any]:
        return self.rpc.request(method, params, decode=result)

    def _new_session(self, params: m.NewSessionRequest) -> PendingRequest[Any]:
        wire = v1u.NewSessionRequest(
            cwd=params.cwd,
            mcp_servers=cv.mcp_servers_to_v1(params.mcp_servers),
            additional_directories=params.additional_directories,
            system_prompt=_system_prompt(params),
        )

        def result(raw: bytes) -> m.NewSessionResponse:
            response = _NEW(raw)
            state = self._opened(response.session_id, response.modes, response.config_options, raw)
            return m.NewSessionResponse(session_id=response.session_id, config_options=state.options())

        return self._send("session/new", wire, result)

    def _opened(self, session_id: str, modes: Any, options: Any, raw: bytes) -> V1Session:
        state = self.session(session_id)
        state.set_modes(modes)
        models = read_models(raw)
        if models is not None:
            state.models = models
        if isinstance(options, list):
            state.agent_options = cv.config_options(options)
        return state

    def _resume_session(self, params: m.ResumeSessionRequest) -> PendingRequest[Any]:
        servers = cv.mcp_servers_to_v1(params.mcp_servers)
        session_id = params.session_id
        if params.replay_from not in (UNSET, None):
            if not cv.offered(self._caps.load_session):
                raise CapabilityNotSupported("session/resume with replay", "loadSession (v1 session/load)")
            load = v1u.LoadSessionRequest(
                session_id=session_id,
                cwd=params.cwd,
                mcp_servers=servers,
                additional_directories=params.additional_directories,
                system_prompt=_system_prompt(params),
            )

            self.session(session_id).end_message()
            return self._send("session/load", load, self._reopened(session_id, _LOAD))
        if not cv.offered(self._session_caps.resume):
            raise CapabilityNotSupported("session/resume", "sessionCapabilities.resume")
        resume = v1u.ResumeSessionRequest(
            session_id=session_id,
            cwd=params.cwd,
            mcp_servers=servers,
            additional_directories=params.additional_directories,
            system_prompt=_system_prompt(params),
        )

        return self._send("session/resume", resume, self._reopened(session_id, _RESUME))

    def _reopened(self, session_id: str, decode: Callable[[bytes], Any]) -> Callable[[bytes], m.ResumeSessionResponse]:
        """The result mapper of v1 ``session/load`` and ``session/resume`` (both carry modes and options)."""

        def result(raw: bytes) -> m.ResumeSessionResponse:
            response = decode(raw)
            state = self._opened(session_id, response.modes, response.config_options, raw)
            # _meta kept: it may say how the last turn ended (LAST_STOP_REASON_META), which v1 says nowhere else
            return m.ResumeSessionResponse(config_options=state.options(), meta=response.meta)

        return result

    def _fork_session(self, params: mu.ForkSessionRequest) -> PendingRequest[Any]:
        wire = to_builtins(params)
        wire.pop("mcpServers", None)
        wire["mcpServers"] = to_builtins(cv.mcp_servers_to_v1(params.mcp_servers))

        def result(raw: bytes) -> mu.ForkSessionResponse:
            response = _FORK(raw)
            state = self._opened(response.session_id, response.modes, response.config_options, raw)
            return mu.ForkSessionResponse(session_id=response.session_id, config_options=state.options())

        return self._send("session/fork", wire, result)

    def _require(self, method: str, flag: Any, capability: str) -> None:
        if not cv.offered(flag):
            raise CapabilityNotSupported(method, capability)

    def _list_sessions(self, params: m.ListSessionsRequest) -> PendingRequest[Any]:
        self._require("session/list", self._session_caps.list, "sessionCapabilities.list")
        wire = v1.ListSessionsRequest(cwd=params.cwd, cursor=params.cursor)

        def result(raw: bytes) -> m.ListSessionsResponse:
            page = _LIST(raw)
            return m.ListSessionsResponse(sessions=cv.session_infos(page.sessions), next_cursor=page.next_cursor)

        return self._send("session/list", wire, result)

    def _close_session(self, params: m.CloseSessionRequest) -> PendingRequest[Any]:
        self._require("session/close", self._session_caps.close, "sessionCapabilities.close")
        return self._send(
            "session/close", v1.CloseSessionRequest(session_id=params.session_id), _empty(m.CloseSessionResponse)
        )

    def _delete_session(self, params: m.DeleteSessionRequest) -> PendingRequest[Any]:
        self._require("session/delete", self._session_caps.delete, "sessionCapabilities.delete")
        return self._send(
            "session/delete", v1.DeleteSessionRequest(session_id=params.session_id), _empty(m.DeleteSessionResponse)
        )

    def _set_config_option(self, params: Any) -> PendingRequest[Any]:
        session_id, config_id, value = params.session_id, params.config_id, params.value
        state = self.session(session_id)

        def options(_: bytes) -> m.SetSessionConfigOptionResponse:
            return m.SetSessionConfigOptionResponse(config_options=state.options())

        if isinstance(value, str) and state.is_mode_option(config_id):

            def mode_set(raw: bytes) -> m.SetSessionConfigOptionResponse:
                state.set_current_mode(value)
                return options(raw)

            return self._send(
                "session/set_mode", v1.SetSessionModeRequest(session_id=session_id, mode_id=value), mode_set
            )
        if isinstance(value, str) and state.is_model_option(config_id):

            def model_set(raw: bytes) -> m.SetSessionConfigOptionResponse:
                state.set_current_model(value)
                return options(raw)

            return self._send("session/set_model", _SetModel(session_id=session_id, model_id=value), model_set)
        wire = v1.SetSessionConfigOptionRequest(
            session_id=session_id,
            config_id=config_id,
            value=value,
            type="boolean" if isinstance(value, bool) else UNSET,
        )

        def result(raw: bytes) -> m.SetSessionConfigOptionResponse:
            state.agent_options = cv.config_options(_SET_CONFIG(raw).config_options)
            return options(raw)

        return self._send("session/set_config_option", wire, result)

    def _login(self, params: m.LoginAuthRequest) -> PendingRequest[Any]:
        return self._send(
            "authenticate", v1.AuthenticateRequest(method_id=params.method_id), _empty(m.LoginAuthResponse)
        )

    def _logout(self, params: m.LogoutAuthRequest) -> PendingRequest[Any]:
        auth = self._caps.auth
        self._require("auth/logout", auth.logout if isinstance(auth, v1.AgentAuthCapabilities) else None, "auth.logout")
        return self._send("logout", v1.LogoutRequest(), _empty(m.LogoutAuthResponse))

    # -- prompts ---------------------------------------------------------------------------------------------

    def prompt(self, session_id: str, blocks: Sequence[m.ContentBlock]) -> PromptExchange:
        state = self.session(session_id)
        message_id = state.new_id("user")
        wire = v1.PromptRequest(session_id=session_id, prompt=[cv.content_block_to_v1(b) for b in blocks])
        answer: list[Any] = []

        def result(raw: bytes) -> m.PromptResponse:
            answer[:] = [_PROMPT(raw)]
            return m.PromptResponse(message_id=message_id)

        request: PendingRequest[m.PromptResponse] = self._send("session/prompt", wire, result)
        turn: list[V1Turn] = []

        def start() -> None:
            state.end_message()
            self._emit(session_id, m.UserMessage(message_id=message_id, content=list(blocks)))
            self._emit(session_id, m.StateUpdate(state="running"))

        def begin() -> None:
            # The turn starts now, or once the session's earlier prompts are answered (turns.py).
            turn.append(state.turns.add(start))

        def end() -> None:
            try:
                if not answer:  # the client's settle decoded it already, unless it failed
                    request.outcome()
            except AcpError as exc:
                error = m.Error(
                    code=getattr(exc, "code", -32603), message=getattr(exc, "message", str(exc)), data=_error_data(exc)
                )
                idle: Any = m.StateUpdate(state="idle", error=error)
            else:
                response = answer[0]
                usage = response.usage
                if usage not in (UNSET, None):
                    idle = mu.StateUpdate(
                        state="idle", stop_reason=response.stop_reason, usage=convert(to_builtins(usage), mu.Usage)
                    )
                else:
                    idle = m.StateUpdate(state="idle", stop_reason=response.stop_reason)

            def finish() -> None:
                state.end_message()
                self._emit(session_id, idle)

            if turn:
                state.turns.answered(turn[0], finish, inserted=bool(answer), go_on=not self.rpc.closed)

        return PromptExchange(request, message_id, begin, end)

    def _emit(self, session_id: str, update: Any) -> None:
        client = self._client
        if client is not None:
            client.deliver_synthetic(m.UpdateSessionNotification(session_id=session_id, update=update))

    # -- incoming --------------------------------------------------------------------------------------------

    def install(self, client: ClientSide) -> None:
        self._client = client
        super().install(client)

    def session_opened(self, session_id: str, cwd: str, additional_directories: Sequence[str]) -> None:
        client = self._client
        if client is None:
            return
        for provider in (client.file_system, client.terminals):
            opened = getattr(provider, "open_session", None)
            if opened is not None:
                opened(session_id, cwd, list(additional_directories))

    def session_closed(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._unopened.pop(session_id, None)
        client = self._client
        if client is None:
            return
        for provider in (client.file_system, client.terminals):
            closed = getattr(provider, "close_session", None)
            if closed is not None:
                client.run_soon(closed, session_id)


def _empty(tp: type[T]) -> Callable[[bytes], T]:
    """A result mapper for v1 answers whose content the model does not use (only ``_meta``)."""

    def result(raw: bytes) -> T:
        plain = _IGNORE.decode(raw)
        meta = plain.get("_meta") if isinstance(plain, dict) else None
        return tp(meta=meta) if isinstance(meta, dict) else tp()  # type: ignore[call-arg]

    return result


def _error_data(exc: AcpError) -> Any:
    data = getattr(exc, "data", None)
    return UNSET if data is None else data


def _system_prompt(params: Any) -> Any:
    """A model request's ``systemPrompt`` (Preview) for the v1 wire: the same JSON (text blocks), or omitted."""
    value = getattr(params, "system_prompt", UNSET)
    return UNSET if value is UNSET or value is None else to_builtins(value)


def _same_shape(method: str) -> Callable[[V1Protocol, Any], PendingRequest[Any]]:
    """A Preview method whose v1 shape is the model's (title, archive, status, auth status, providers)."""
    result_type = mu.AGENT_METHODS[method].result

    def send(adapter: V1Protocol, params: Any) -> PendingRequest[Any]:
        return adapter._send(method, params, lambda raw: convert(_IGNORE.decode(raw), result_type))

    return send


_REQUESTS: dict[str, Callable[[V1Protocol, Any], PendingRequest[Any]]] = {
    "session/new": V1Protocol._new_session,
    "session/resume": V1Protocol._resume_session,
    "session/list": V1Protocol._list_sessions,
    "session/close": V1Protocol._close_session,
    "session/delete": V1Protocol._delete_session,
    "session/set_config_option": V1Protocol._set_config_option,
    "auth/login": V1Protocol._login,
    "auth/logout": V1Protocol._logout,
    "session/fork": V1Protocol._fork_session,
    **{
        method: _same_shape(method)
        for method in (
            "session/set_title",
            "session/archive",
            "session/unarchive",
            "session/status",
            "auth/status",
            "providers/list",
            "providers/set",
            "providers/disable",
        )
    },
}
"""Model method -> how the v1 adapter sends it (``session/prompt`` has its own path: ``prompt``)."""
