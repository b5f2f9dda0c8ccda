"""One client connection of a host: the host as an ACP agent (protocol version 2) on the connection's transport.

Sessions are the host's (``host.Host``): ``session/new`` makes one on the agent, ``session/resume`` attaches this
connection to one (the log replayed from the start, a snapshot of its turn state, then live), ``session/list``
lists the host's. Each attached session is fed from its log by a task of this connection (``_feed``), so a
client that reads slowly only falls behind in the log; a permission request is sent in the feed too, after the
updates that came before it. Everything else session-scoped is forwarded to the agent through the library's
client, for the sessions this connection is attached to.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec
from anyio.abc import TaskGroup

from .._version import __version__
from ..codec import convert, decoder, to_builtins
from ..errors import (
    ConnectionClosed,
    InvalidParams,
    MethodNotFound,
    ResourceNotFound,
    RpcError,
    UnsupportedProtocolVersion,
)
from ..protocol.routes import SUBAGENTS_META
from ..rpc import Connection, PendingRequest, json_decode
from ..schema import unstable as mu
from ..schema.types import (
    AGENT_METHODS,
    AgentCapabilities,
    CancelSessionNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    CreateElicitationResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    NewSessionRequest,
    PromptRequest,
    ReplayFromStart,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    StateUpdate,
    UpdateSessionNotification,
)
from ..server import IncomingConnection
from .core import ELICITATION_METHOD, HOST_META, HostSession, PermissionAsk, elicitation_mode, ordered
from .tracing import Handled

if TYPE_CHECKING:
    from ..client import ClientConnection
    from .events import EventKind
    from .tracing import NoTracing
    from .v1_front import V1Wire

__all__ = ["HOST_META", "ClientFront", "ServingHost", "serve_client"]

_log = logging.getLogger("acp_session.host")
_PERMISSION = decoder(RequestPermissionResponse)
_ELICITATION = decoder(CreateElicitationResponse)
_GONE = (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError)
PAGE_SIZE = 100
_UPDATE_FRAME = b'{"jsonrpc":"2.0","method":"session/update","params":'
_HANDLED = {
    "initialize",
    "session/new",
    "session/list",
    "session/resume",
    "session/prompt",
    "session/close",
    "session/delete",
}


class ServingHost(Protocol):
    """What a client connection needs of its host (``host.Host`` is one; a protocol keeps this module below it)."""

    sessions: dict[str, HostSession]
    tracing: NoTracing

    @property
    def client(self) -> ClientConnection: ...

    def session(self, session_id: str) -> HostSession: ...

    def root_of(self, session_id: str) -> HostSession | None: ...

    def emit(
        self, kind: EventKind, session_id: str | None = None, client: str | None = None, **detail: Any
    ) -> None: ...

    def changed(self, session_id: str) -> anyio.Event: ...

    def wake(self, session_id: str) -> None: ...

    def register(self, key: Hashable, front: Any) -> None: ...

    def unregister(self, key: Hashable) -> None: ...

    async def new_session(self, params: Any) -> tuple[HostSession, Any]: ...

    async def prompt(self, session: HostSession, params: Any, client: str) -> Any: ...

    async def cancel(self, session: HostSession, session_id: str | None = None) -> None: ...

    async def delete_session(self, session_id: str) -> None: ...

    async def give_mcp_servers(self, session: HostSession, servers: Any) -> None: ...

    def answered(self, ask: PermissionAsk[Any], client: Hashable, answer: Any) -> None: ...


async def serve_client(host: ServingHost, incoming: IncomingConnection) -> None:
    """The ``ConnectionHandler``: serve one client until its connection ends; its sessions go on."""
    key = incoming.connection_id
    async with Connection(incoming.transport, peer_name=f"client {key}") as rpc, anyio.create_task_group() as tg:
        front = ClientFront(host, rpc, incoming, tg)
        host.register(key, front)
        try:
            await rpc.wait_closed()
        finally:
            tg.cancel_scope.cancel()
            host.unregister(key)


class ClientFront:
    """The handlers of one client connection and the feeds of the sessions it is attached to."""

    def __init__(self, host: ServingHost, rpc: Connection, incoming: IncomingConnection, tg: TaskGroup) -> None:
        self.host = host
        self.rpc = rpc
        self.key = incoming.connection_id
        self.profile = incoming.profile
        self.incoming = incoming
        self._tg = tg
        self._feeds: dict[str, anyio.CancelScope] = {}
        self.subagents = False
        """The client asked for subagent (child session) updates (``asks_for_subagents``); others get none."""
        self.elicitation: frozenset[str] = frozenset()
        """The elicitation modes the client offers (``form``, ``url``): the agent's elicitations it is asked."""
        self._reach: dict[str, int] = {}
        """Per attached session, the newest update this connection's feed holds (sent or about to be)."""
        self.v1: V1Wire | None = None
        """Set when the client speaks protocol version 1 (``v1_front.V1Wire``): it says the host's updates and
        requests in v1's words."""
        self._asks: dict[str, list[tuple[int, PermissionAsk[Any]]]] = {}
        self._direct_limit = rpc.max_frame_size - len(_UPDATE_FRAME) - 1
        """Params longer than this make a frame the rpc layer refuses (``MessageTooLarge``): such a batch goes
        through it."""
        host.tracing.serving(rpc)
        on = rpc.on_request
        on("initialize", self.initialize, json_decode)
        on("session/new", self.new_session, decoder(NewSessionRequest))
        on("session/list", self.list_sessions, decoder(ListSessionsRequest))
        on("session/resume", self.resume_session, decoder(ResumeSessionRequest))
        on("session/prompt", self.prompt, decoder(PromptRequest))
        on("session/close", self.close_session, decoder(CloseSessionRequest))
        on("session/delete", self.delete_session, decoder(DeleteSessionRequest))
        rpc.on_notification("session/cancel", self.cancel, decoder(CancelSessionNotification))
        for method, spec in {**mu.AGENT_METHODS, **AGENT_METHODS}.items():
            if method not in _HANDLED:
                on(method, self._forwarder(method), decoder(spec.params))
        rpc.set_fallback_request_handler(self._extension)

    # -- connection ------------------------------------------------------------------------------------

    async def initialize(self, params: Any) -> Any:
        """v2 for a client that offers 2 or more; v1 for one that offers 1, whatever the agent speaks (the host keeps
        sessions in the model's words and says them again in v1's: ``v1_front``). The version is read before the
        shape: a v1 offer is not a valid v2 request."""
        offered = params.get("protocolVersion") if isinstance(params, dict) else None
        if not isinstance(offered, int) or isinstance(offered, bool):
            raise InvalidParams(data={"reason": "protocolVersion must be an integer", "supportedVersions": [1, 2]})
        if offered < 1:
            raise UnsupportedProtocolVersion(data={"supported": [1, 2], "requested": offered})
        if offered < 2:
            self.elicitation = elicitation_modes(params.get("clientCapabilities"))
            from .v1_front import V1Wire

            self.v1 = V1Wire(self)
            return self.v1.initialize()
        try:
            convert(params, InitializeRequest)
        except (msgspec.ValidationError, TypeError) as exc:
            raise InvalidParams(data={"reason": f"not a v2 initialize request: {exc}"}) from None
        self.subagents = asks_for_subagents(params.get("capabilities"))
        self.elicitation = elicitation_modes(params.get("capabilities"))
        agent = self.host.client.agent.initialize_response
        assert agent is not None
        caps = agent.capabilities if isinstance(agent.capabilities, AgentCapabilities) else AgentCapabilities()
        session_caps = caps.session if isinstance(caps.session, SessionCapabilities) else SessionCapabilities()
        # The host lists, resumes and closes sessions itself (the baseline methods); the rest is the agent's.
        caps = msgspec.structs.replace(caps, session=session_caps)
        return InitializeResponse(
            protocol_version=2,
            info=agent.info,
            capabilities=caps,
            auth_methods=agent.auth_methods,
            meta={HOST_META: {"version": __version__}},
        )

    # -- sessions --------------------------------------------------------------------------------------

    def _attached(self, session_id: str) -> HostSession:
        session = self.host.session(session_id)
        if self.key not in session.attached:
            raise ResourceNotFound(
                message="Session is not active on this connection (resume it first)",
                data={"sessionId": session_id},
            )
        return session

    async def new_session(self, params: NewSessionRequest) -> Any:
        with self.host.tracing.handling("session/new", self.key, None, params.meta) as handled:
            session, response = await self.host.new_session(params)
            handled.session_id = session.session_id
            await self._attach(session, 0)
        return response

    async def list_sessions(self, params: ListSessionsRequest) -> ListSessionsResponse:
        sessions = ordered(self.host.sessions.values())
        if isinstance(params.cwd, str):
            sessions = [s for s in sessions if s.cwd == params.cwd]
        start = 0
        if isinstance(params.cursor, str):
            prefix, _, number = params.cursor.partition(":")
            if prefix != "offset" or not number.isdigit() or int(number) > len(sessions):
                raise InvalidParams(data={"reason": "invalid cursor"})
            start = int(number)
        page = sessions[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(sessions)
        return ListSessionsResponse(
            sessions=[_info(s) for s in page],
            next_cursor=f"offset:{start + PAGE_SIZE}" if more else msgspec.UNSET,
        )

    async def resume_session(self, params: ResumeSessionRequest) -> ResumeSessionResponse:
        """Attach: the session's log from the start (``replayFrom: {"type": "start"}``; without it, nothing of
        the past), its turn state now, then the live stream and any permission request still waiting."""
        with self.host.tracing.handling("session/resume", self.key, params.session_id, params.meta) as handled:
            return await self._resume(params, handled)

    async def _resume(self, params: ResumeSessionRequest, handled: Handled) -> ResumeSessionResponse:
        session = self.host.session(params.session_id)
        if params.cwd != session.cwd:
            raise InvalidParams(data={"reason": "cwd differs from the session's working directory"})
        replay = params.replay_from
        if replay not in (msgspec.UNSET, None) and not isinstance(replay, ReplayFromStart):
            raise InvalidParams(data={"reason": "unsupported replay cursor"})
        cursor = 0 if replay not in (msgspec.UNSET, None) else session.log.last_seq
        await self.host.give_mcp_servers(session, params.mcp_servers or [])
        await self._attach(session, cursor, snapshot=True)
        handled.replayed = session.log.last_seq - cursor
        self.host.emit("session_attached", session.session_id, self.key, replayed=handled.replayed)
        meta: Any = msgspec.UNSET
        reason = session.read_only_reason()
        if reason is not None:
            meta = {HOST_META: {"readOnly": reason}}
        track = self.host.client.session(session.session_id).track if session.live else None
        options = track.config_options if track is not None and track.config_options else msgspec.UNSET
        return ResumeSessionResponse(config_options=options, meta=meta)

    async def _send_updates(self, session_id: str, batch: list[tuple[int, bytes]], *, replay: bool = False) -> None:
        """Logged updates to this client, in order (``replay``: part of the history sent on attach); to a version
        2 client as they were logged, queued at once."""
        if self.v1 is None:
            encoded = [params for _, params in batch]
            if max(map(len, encoded)) <= self._direct_limit:
                # Straight to the connection (over HTTP onto the session's stream in one piece), after what the
                # rpc layer holds.
                await self.rpc.queued_written()
                await self.incoming.send_notifications(session_id, "session/update", encoded)
                return
            await self.rpc.notify_encoded("session/update", encoded)  # it refuses a frame that is too large
            return
        for seq, params in batch:
            await self.v1.send_update(session_id, seq, params, replay=replay)

    async def _attach(self, session: HostSession, cursor: int, *, snapshot: bool = False) -> None:
        """Send the log after ``cursor`` (and the turn state), then feed this connection from there on."""
        sid = session.session_id
        old = self._feeds.pop(sid, None)
        if old is not None:
            old.cancel()
        if session.log.first_seq > cursor + 1:  # the oldest asked for are no longer kept: said first (v2)
            notice = _not_kept(session, cursor)
            cursor = session.log.first_seq - 1
            if self.v1 is None:
                await self.rpc.notify("session/update", notice)
        self._reach[sid] = cursor
        while cursor < session.log.last_seq:
            if session.log.first_seq > cursor + 1:  # dropped while this replay was being sent
                self.fell_behind(session, cursor)
                return
            batch, last = session.log.feed(cursor, 256, subagents=self.subagents)
            self._reach[sid] = last
            if batch:
                await self._send_updates(sid, batch, replay=True)
            cursor = last
        if snapshot and self.v1 is None:  # v1 has no state updates
            update = StateUpdate(state=session.state)
            if session.state == "idle" and session.stop_reason is not None:
                update = StateUpdate(state="idle", stop_reason=session.stop_reason)
            await self.rpc.notify("session/update", UpdateSessionNotification(session_id=sid, update=update))
        asks = session.attach(self.key)
        self._asks[sid] = [(cursor, ask) for ask in asks]
        scope = anyio.CancelScope()
        self._feeds[sid] = scope
        self._tg.start_soon(self._feed, session, cursor, scope)

    def detach(self, session_id: str) -> None:
        scope = self._feeds.pop(session_id, None)
        if scope is not None:
            scope.cancel()
        self._asks.pop(session_id, None)
        self._reach.pop(session_id, None)
        session = self.host.sessions.get(session_id)
        if session is not None and session.detach(self.key):
            self.host.emit("session_detached", session_id, self.key)

    async def _feed(self, session: HostSession, cursor: int, scope: anyio.CancelScope) -> None:
        """Every update of the session after ``cursor``, in order, as it comes; a permission request after the
        updates that preceded it."""
        sid = session.session_id
        with scope:
            try:
                while True:
                    changed = self.host.changed(sid)
                    before = cursor
                    if session.log.first_seq > cursor + 1:
                        self.fell_behind(session, cursor)
                        return
                    batch, last = session.log.feed(cursor, 256, subagents=self.subagents)
                    if last != cursor:
                        self._reach[sid] = last
                        if batch:
                            await self._send_updates(sid, batch)
                        cursor = last
                    asks = self._asks.get(sid)
                    due = [ask for after, ask in asks or () if after <= cursor]
                    if due and asks is not None:
                        self._asks[sid] = [(after, ask) for after, ask in asks if ask not in due]
                        for ask in due:
                            self._send_ask(ask)
                    if cursor == before and not due:
                        await changed.wait()
            except _GONE:
                pass

    def check_behind(self, session: HostSession) -> None:
        """The session's log dropped its oldest updates: when some of them never reached this connection's feed,
        the connection ends (``fell_behind``) rather than go on with a hole its client cannot see."""
        reach = self._reach.get(session.session_id)
        if reach is not None and session.log.first_seq > reach + 1:
            self.fell_behind(session, reach)

    def fell_behind(self, session: HostSession, reach: int) -> None:
        """This client read so slowly that the log dropped updates before its feed took them: the connection
        ends, its WebSocket closed with code 1013 and the reason. A client that reconnects and resumes the
        session (acp-session's client does) gets a replay of what the log still keeps, led by a notice of what
        is no longer kept (``_not_kept``)."""
        if self.incoming.closed:
            return
        sid = session.session_id
        missed = session.log.first_seq - reach - 1
        self.host.emit("client_fell_behind", sid, self.key, missed=missed, kept=session.log.max_entries)
        self.incoming.close(
            f"fell behind session {sid} by more than the host keeps: {missed} updates dropped unsent; "
            "reconnect and resume"
        )

    # -- permissions -----------------------------------------------------------------------------------

    def can_answer(self, ask: PermissionAsk[Any]) -> bool:
        """Whether this client is asked ``ask``: a subagent's request only when the client asked for subagents
        (it knows the child, and over Streamable HTTP reads the child's stream, where the request goes); an
        elicitation only in a mode the client offers."""
        if ask.subagent and (not self.subagents or self.v1 is not None):
            return False
        if ask.method == ELICITATION_METHOD:
            return elicitation_mode(ask.request) in self.elicitation
        return True

    def ask_permission(self, ask: PermissionAsk[Any]) -> None:
        """Ask this client (in the session's feed, after the updates so far), when it can answer."""
        sid = ask.session_id
        if sid not in self._feeds or not self.can_answer(ask):
            return
        session = self.host.sessions.get(sid)
        after = session.log.last_seq if session is not None else 0
        self._asks.setdefault(sid, []).append((after, ask))
        self.host.wake(sid)

    def _send_ask(self, ask: PermissionAsk[Any]) -> None:
        if ask.settled or ask.asked(self.key) or not self.can_answer(ask):
            return
        try:
            request: Any = ask.request
            if ask.method == ELICITATION_METHOD:  # the same shape in both versions
                plain = to_builtins(request)
                handle: Any = self.rpc.request(ELICITATION_METHOD, plain, decode=_ELICITATION)
            else:
                if self.v1 is not None:
                    request = self.v1.permission_request(request)
                handle = self.host.tracing.asking(
                    ask, self.key, lambda: self.rpc.request("session/request_permission", request, decode=_PERMISSION)
                )
        except _GONE:
            return
        ask.ask(self.key, handle)
        handle.add_done_callback(lambda done: self._answered(ask, done))

    def _answered(self, ask: PermissionAsk[Any], handle: PendingRequest[Any]) -> None:
        traced = ask.method != ELICITATION_METHOD
        try:
            answer = handle.outcome()
        except Exception as exc:  # an error answer, the withdrawal's -32800, or the connection gone: not an answer
            if traced:
                self.host.tracing.client_answered(ask, self.key, None, exc)
            ask.forget(self.key)
            return
        if traced:
            self.host.tracing.client_answered(ask, self.key, answer, None)
        self.host.answered(ask, self.key, answer)

    def tell(self, method: str, params: Any) -> None:
        """A notification of the agent's for this client (``elicitation/complete``), sent in the background."""

        async def send() -> None:
            with contextlib.suppress(*_GONE):
                await self.rpc.notify(method, params)

        self._tg.start_soon(send)

    # -- turns and the rest ----------------------------------------------------------------------------

    async def prompt(self, params: PromptRequest) -> Any:
        """Relayed to the agent, under the client's trace context when its ``_meta`` carries one."""
        with self.host.tracing.handling("session/prompt", self.key, params.session_id, params.meta):
            session = self._attached(params.session_id)
            return await self.host.prompt(session, params, self.key)

    async def cancel(self, params: CancelSessionNotification) -> None:
        """The session's turn, or a subagent's work alone (the child's id: forwarded when this client is attached
        to the child's root session; the parent's turn goes on)."""
        session = self.host.sessions.get(params.session_id)
        if session is not None and self.key in session.attached:
            await self.host.cancel(session)
            return
        root = self.host.root_of(params.session_id) if session is None else None
        if root is not None and self.key in root.attached:
            await self.host.cancel(root, params.session_id)

    async def close_session(self, params: CloseSessionRequest) -> CloseSessionResponse:
        """This connection stops following the session; the host keeps it (and its turn) for other clients."""
        self.detach(params.session_id)
        return CloseSessionResponse()

    async def delete_session(self, params: DeleteSessionRequest) -> DeleteSessionResponse:
        await self.host.delete_session(params.session_id)
        return DeleteSessionResponse()

    def _forwarder(self, method: str) -> Callable[[Any], Any]:
        async def forward(params: Any) -> Any:
            session_id = getattr(params, "session_id", None)
            if isinstance(session_id, str):
                self._attached(session_id)
            try:
                return await self.host.client.request(method, params)
            except RpcError:
                raise
            except Exception as exc:
                raise RpcError(-32603, f"{method}: the agent did not answer ({exc})") from None

        return forward

    async def _extension(self, method: str, params: bytes) -> Any:
        if not method.startswith("_"):
            raise MethodNotFound(data={"method": method})
        value = json_decode(params) if params else None
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            self._attached(value["sessionId"])
        return await self.host.client.request(method, value)


def asks_for_subagents(capabilities: Any) -> bool:
    """Whether a version 2 client's ``capabilities`` ask for subagent updates (outside the pinned v2
    schema): ``_meta["acpSession/subagents"]`` set (not null or false), or a ``subagents`` object, the name of
    version 1's unstable opt-in."""
    if not isinstance(capabilities, dict):
        return False
    meta = capabilities.get("_meta")
    if isinstance(meta, dict) and meta.get(SUBAGENTS_META) not in (None, False):
        return True
    return isinstance(capabilities.get("subagents"), dict)


def elicitation_modes(capabilities: Any) -> frozenset[str]:
    """The elicitation modes (``form``, ``url``) a client's ``initialize`` capabilities offer (v1 and v2 alike:
    ``elicitation: {"form": {}, "url": {}}``; null or absent is not offered)."""
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    if not isinstance(elicitation, dict):
        return frozenset()
    return frozenset(mode for mode in ("form", "url") if isinstance(elicitation.get(mode), dict))


def _not_kept(session: HostSession, cursor: int) -> UpdateSessionNotification:
    """A replay that cannot start where it was asked to, said first: the log dropped the oldest updates."""
    from ..schema.types import Notice

    log = session.log
    gone = log.first_seq - cursor - 1
    notice = Notice(
        severity="warning",
        title=f"The {gone} oldest updates of this session are no longer kept",
        description=f"The host keeps the newest {log.max_entries} updates ({log.max_bytes} bytes) of a session; "
        f"this replay starts at update {log.first_seq}.",
    )
    return UpdateSessionNotification(session_id=session.session_id, update=notice)


def _info(session: HostSession) -> SessionInfo:
    from datetime import datetime, timezone

    updated = datetime.fromtimestamp(session.updated_at, timezone.utc).isoformat().replace("+00:00", "Z")
    return SessionInfo(
        session_id=session.session_id,
        cwd=session.cwd,
        additional_directories=list(session.additional_directories) or msgspec.UNSET,
        title=session.title if session.title is not None else msgspec.UNSET,
        updated_at=updated,
    )
