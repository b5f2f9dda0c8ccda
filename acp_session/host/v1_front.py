"""A client that speaks protocol version 1, served by a host whatever its agent speaks.

The host keeps its sessions in the model's words (the library's client reads a v1 agent into the v2 types; a v2
agent speaks them); this wire says them in v1's again (``protocol.v1.outgoing``): updates without what v1 has no
word for, permission requests with a bare ``toolCall``, config options keyed ``id``. v1's turn is its
``session/prompt`` request, so a prompt is answered once this client was sent the whole turn (the idle state
update that ends it, which v1 does not see, tells its stop reason). ``session/load`` attaches: the session's
history, then, when a turn runs, its live updates until it ends, then the answer (its ``_meta`` names the last
turn's stop reason), then the live stream.
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio
import msgspec

from .._version import __version__
from ..codec import convert, decoder, to_builtins
from ..errors import InvalidParams
from ..protocol.base import LAST_STOP_REASON_META
from ..protocol.v1.convert import content_block
from ..protocol.v1.outgoing import (
    V1UpdateMapper,
    config_options_to_v1,
    permission_request_to_v1,
    stop_reason_to_v1,
)
from ..rpc import Connection
from ..schema import types as m
from ..schema.v1 import types as v1
from .core import HOST_META, HostSession

__all__ = ["V1Wire"]

_note = decoder(m.UpdateSessionNotification)
_IDLE = "idle"


def _mcp_servers(servers: Any) -> list[Any]:
    """v1 MCP server configs in the model's shape (a v1 stdio server has no ``type``)."""
    out = []
    for server in to_builtins(servers) if isinstance(servers, list) else []:
        if isinstance(server, dict) and "type" not in server:
            server = {"type": "stdio", **server}
        out.append(server)
    return out


def _model_servers(servers: Any) -> list[Any]:
    """v1 MCP server configs as the model's typed ones (what the host keeps and gives the agent)."""
    return convert(_mcp_servers(servers), list[m.McpServer])


def _marker(value: Any) -> bool:
    return value not in (msgspec.UNSET, None, False)


class Front(Protocol):
    """What this wire needs of its client connection (``front.ClientFront``; a protocol keeps the two apart)."""

    host: Any
    rpc: Connection
    key: str

    def _attached(self, session_id: str) -> HostSession: ...

    async def _attach(self, session: HostSession, cursor: int, *, snapshot: bool = False) -> None: ...


class V1Wire:
    """The v1 half of one ``ClientFront``: its v1 methods, and its updates and requests in v1's shape."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.mappers: dict[str, V1UpdateMapper] = {}
        self._idle: dict[str, tuple[int, str | None]] = {}  # session -> (seq, stop reason) of the last idle sent
        self._sent = anyio.Event()
        on = front.rpc.on_request
        on("session/new", self.new_session, decoder(v1.NewSessionRequest))
        on("session/load", self.load_session, decoder(v1.LoadSessionRequest))
        on("session/resume", self.resume_session, decoder(v1.ResumeSessionRequest))
        on("session/prompt", self.prompt, decoder(v1.PromptRequest))
        on("session/set_config_option", self.set_config_option, decoder(v1.SetSessionConfigOptionRequest))
        # session/list, session/close, session/delete and session/cancel have the same shape in both versions.

    def initialize(self) -> dict[str, Any]:
        """v1's ``initialize`` answer, from what the agent said (in the model's words), with the host's session
        methods."""
        agent = self.front.host.client.agent.initialize_response
        assert agent is not None
        caps: Any = to_builtins(agent.capabilities) if agent.capabilities is not msgspec.UNSET else {}
        session = caps.get("session") if isinstance(caps, dict) else None
        session_caps: dict[str, Any] = session if isinstance(session, dict) else {}
        prompt = session_caps.get("prompt")
        prompt = prompt if isinstance(prompt, dict) else {}
        mcp = session_caps.get("mcp")
        mcp = mcp if isinstance(mcp, dict) else {}
        answer: dict[str, Any] = {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {key: _marker(prompt.get(key)) for key in ("image", "audio", "embeddedContext")},
                "mcpCapabilities": {"http": _marker(mcp.get("http")), "sse": _marker(mcp.get("sse"))},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
            },
            "authMethods": [],
            "_meta": {HOST_META: {"version": __version__}},
        }
        info = to_builtins(agent.info) if isinstance(agent.info, msgspec.Struct) else None
        if isinstance(info, dict):
            answer["agentInfo"] = {k: info[k] for k in ("name", "version", "title") if info.get(k) is not None}
        return answer

    # -- what the front sends ----------------------------------------------------------------------------

    def _mapper(self, session_id: str) -> V1UpdateMapper:
        mapper = self.mappers.get(session_id)
        if mapper is None:
            mapper = self.mappers[session_id] = V1UpdateMapper()
        return mapper

    async def send_update(self, session_id: str, seq: int, params: bytes, *, replay: bool) -> None:
        """One logged update (model JSON) as the v1 updates it becomes; an idle state update, which v1 does not
        see, marks where a turn ended for ``turn_end``."""
        try:
            update = _note(params).update
        except (msgspec.ValidationError, msgspec.DecodeError):
            return
        if isinstance(update, m.StateUpdate) and update.state == _IDLE:
            reason = update.stop_reason if isinstance(update.stop_reason, str) else None
            self._idle[session_id] = (seq, reason)
            self._sent.set()
            self._sent = anyio.Event()
            return
        for plain in self._mapper(session_id).map(update, replay=replay):
            await self.front.rpc.notify("session/update", {"sessionId": session_id, "update": plain})

    def permission_request(self, request: m.RequestPermissionRequest) -> dict[str, Any]:
        return permission_request_to_v1(request)

    async def turn_end(self, session_id: str, after: int) -> str | None:
        """Wait until this client was sent the end of a turn logged after ``after``; its stop reason."""
        while True:
            sent = self._sent
            seq, reason = self._idle.get(session_id, (0, None))
            if seq > after:
                return reason
            await sent.wait()

    # -- v1's session methods ----------------------------------------------------------------------------

    def _values(self, session: HostSession) -> dict[str, Any]:
        """A session's config options in v1's shape (what the library's client keeps of them)."""
        host = self.front.host
        if not session.live:
            return {}
        track = host.client.session(session.session_id).track
        options = track.config_options if track is not None else None
        return {"configOptions": config_options_to_v1(options)} if options else {}

    async def new_session(self, request: v1.NewSessionRequest) -> dict[str, Any]:
        plain: dict[str, Any] = {"cwd": request.cwd, "mcpServers": _mcp_servers(request.mcp_servers)}
        if isinstance(request.additional_directories, list):
            plain["additionalDirectories"] = request.additional_directories
        session, _ = await self.front.host.new_session(convert(plain, m.NewSessionRequest))
        await self.front._attach(session, 0)
        return {"sessionId": session.session_id, **self._values(session)}

    def _session(self, session_id: str, cwd: str) -> HostSession:
        session: HostSession = self.front.host.session(session_id)
        if cwd != session.cwd:
            raise InvalidParams(data={"reason": "cwd differs from the session's working directory"})
        return session

    async def load_session(self, request: v1.LoadSessionRequest) -> dict[str, Any]:
        """Attach with the whole history; a running turn is followed to its end before the answer (v1 learns of a
        turn's end only from an answer), which names the last turn's stop reason."""
        session = self._session(request.session_id, request.cwd)
        await self.front.host.give_mcp_servers(session, _model_servers(request.mcp_servers))
        self._mapper(session.session_id).reset()
        await self.front._attach(session, 0)
        self.front.host.emit("session_attached", session.session_id, self.front.key, replayed=session.log.last_seq)
        if session.state != _IDLE:
            await self.turn_end(session.session_id, self._idle.get(session.session_id, (0, None))[0])
        values = self._values(session)
        if session.state == _IDLE and session.stop_reason not in (None, "error"):
            values["_meta"] = {LAST_STOP_REASON_META: stop_reason_to_v1(session.stop_reason)}
        return values

    async def resume_session(self, request: v1.ResumeSessionRequest) -> dict[str, Any]:
        """Attach without the history (v1's resume replays nothing): the live stream from now on."""
        session = self._session(request.session_id, request.cwd)
        await self.front.host.give_mcp_servers(session, _model_servers(request.mcp_servers))
        await self.front._attach(session, session.log.last_seq)
        self.front.host.emit("session_attached", session.session_id, self.front.key, replayed=0)
        return self._values(session)

    async def prompt(self, request: v1.PromptRequest) -> dict[str, Any]:
        """The turn, answered with its stop reason once this client was sent all of it."""
        session = self.front._attached(request.session_id)
        after = session.log.last_seq
        blocks = [content_block(block) for block in request.prompt]
        request_model = m.PromptRequest(session_id=session.session_id, prompt=blocks)
        await self.front.host.prompt(session, request_model, self.front.key)
        reason = await self.turn_end(session.session_id, after)
        return {"stopReason": stop_reason_to_v1(reason)}

    async def set_config_option(self, request: v1.SetSessionConfigOptionRequest) -> dict[str, Any]:
        self.front._attached(request.session_id)
        change = convert(to_builtins(request), m.SetSessionConfigOptionRequest)
        answer = await self.front.host.client.request("session/set_config_option", change)
        return {"configOptions": config_options_to_v1(getattr(answer, "config_options", None))}
