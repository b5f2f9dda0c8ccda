"""``Host``: one agent process, its sessions kept by the host, served to any number of clients.

The host is an ACP client to the agent (the library's ``ClientBuilder.spawn``: whatever version the agent speaks,
the host sees the v2 model) and an ACP agent to its clients (``front.ClientFront``, one per connection of
``acp_session.server``). Turns run in the host's task group, so they go on when their client goes away; every
update is logged (``core.UpdateLog``) and each attached client is fed from the log, so a client that attaches
later gets what it missed, then the live stream. Permission requests and elicitations wait for a client's answer
(the first one wins) for ``permission_timeout`` seconds, then the policy answers (``asks.Asks``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from .._version import __version__
from ..client import ClientBuilder, ClientConnection
from ..client.connection import hub_of
from ..client.opening import open_new_session, open_resumed_session
from ..errors import AcpError, ConnectionClosed, InvalidParams, InvalidRequest, ResourceNotFound, RpcError
from ..schema.types import PromptResponse, UpdateSessionNotification
from ..server import Server, open_server
from ..session import BatchUpdateListener
from .asks import Asks
from .core import _KINDS, _PLAIN, HostSession, PermissionAsk, _now
from .events import EventKind, HostEvent
from .front import serve_client
from .options import HostOptions
from .tracing import NoTracing

if TYPE_CHECKING:
    from .store import SessionStore

__all__ = ["Host", "open_host"]

_log = logging.getLogger("acp_session.host")
_encode = msgspec.json.Encoder().encode


class Host:
    """An agent's sessions, served: ``await task_group.start(host.run)`` returns the URL (or use ``open_host``).

    ``on_event`` (a plain function) hears each ``HostEvent``; it must not block."""

    def __init__(self, options: HostOptions, *, on_event: Callable[[HostEvent], None] | None = None) -> None:
        self.options = options
        self.on_event = on_event
        self.sessions: dict[str, HostSession] = {}
        self.url: str | None = None
        self.server: Server | None = None
        self.store: SessionStore | None = None
        self._client: ClientConnection | None = None
        self._agent_ready = anyio.Event()
        self._tg: TaskGroup | None = None
        self._changed: dict[str, anyio.Event] = {}
        self.asks = Asks(self)
        """The agent's permission requests and elicitations waiting for clients."""
        self._fronts: dict[Hashable, Any] = {}  # client key -> front.ClientFront
        self.agent_starts = 0
        self._failed: str | None = None
        self.tracing = host_tracing(options)
        """OpenTelemetry spans of what clients do through the host (``options.instrument``), or no-op hooks."""

    # -- running ---------------------------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the agent, open the store and the server, then serve until cancelled (the URL goes to
        ``task_status``). The agent is restarted (its sessions resumed) when it dies, up to
        ``restart_attempts`` times in a row."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self.options.store is not None:
                await self._open_store(self.options.store)
            try:
                tg.start_soon(self._keep_agent)
                await self._agent_ready.wait()
                async with open_server(lambda conn: serve_client(self, conn), self.options.server) as server:
                    self.server = server
                    self.url = server.url
                    self.emit("listening", url=server.url, agent=self.options.label)
                    task_status.started(server.url)
                    await anyio.sleep_forever()
            finally:
                tg.cancel_scope.cancel()
                if self.store is not None:
                    with anyio.CancelScope(shield=True):
                        await self.store.aclose()

    async def _open_store(self, directory: str) -> None:
        from .durable import restore_sessions
        from .store import SessionStore

        self.store = await SessionStore.open(directory)
        for session in await restore_sessions(self.store, self.options):
            self.sessions[session.session_id] = session

    def builder(self) -> ClientBuilder:
        """The library client the agent is driven with: every update to the host's log, permission requests and
        (unless ``options.elicitation`` is off) form and URL elicitations to the clients, files and commands only
        when allowed."""
        builder = ClientBuilder("acp-session-host", __version__)
        builder.on_session_update(BatchUpdateListener(self._on_update, self._on_updates))
        builder.on_request_permission(self.asks.on_permission)
        if self.options.elicitation:
            builder.on_elicitation(self.asks.on_elicitation, modes=("form", "url"))
            builder.on_elicitation_complete(self.asks.on_elicitation_complete)
        if self.options.allow_files:
            builder.with_file_system()
        if self.options.allow_terminal:
            builder.with_terminals()
        if self.options.instrument:
            builder.instrument(self.options.tracer_provider, self.options.meter_provider)
        return builder

    async def _keep_agent(self) -> None:
        """Run the agent; when it dies, start it again and resume its sessions. After ``restart_attempts`` failed
        starts in a row the host gives up on the agent (``agent_failed``): it goes on serving the sessions'
        history, read-only, and refuses prompts with a typed error."""
        failures = 0
        last = ""
        while True:
            started = False
            try:
                async with self.builder().spawn(
                    self.options.argv,
                    cwd=self.options.agent_cwd,
                    initialize_timeout=self.options.initialize_timeout,
                ) as client:
                    started = True
                    self._client = client
                    self.agent_starts += 1
                    self.emit(
                        "agent_started",
                        agent=self.options.label,
                        protocolVersion=client.protocol.version,
                        starts=self.agent_starts,
                        pid=getattr(client.rpc.transport, "pid", None),
                    )
                    await self._revive_sessions(client)
                    self._agent_ready.set()
                    closed = await client.wait_closed()
                    last = str(closed)
                    self.emit("agent_exited", reason=last)
            except Exception as exc:
                if not self._agent_ready.is_set() and not started:
                    raise  # the first start failed: the host cannot serve
                last = str(exc) or type(exc).__name__
                self.emit("agent_exited", reason=last)
            finally:
                self._client = None
                self._agent_lost()
            failures = 0 if started else failures + 1
            if failures >= self.options.restart_attempts:
                self._give_up(f"the agent exited and could not be started again ({failures} attempts): {last}")
                return
            await anyio.sleep(0.5 * failures)

    def _agent_lost(self) -> None:
        """The agent process is gone: each session waits for the next one; a turn it was running is lost (ended,
        with an error, in the log) and the attached clients are told."""
        from ..schema.types import Error, Notice, StateUpdate

        for session in self.sessions.values():
            was_live, session.live = session.live, False
            if session.state != "idle":
                lost = Error(code=-32603, message="the agent process exited; the turn is lost")
                note = UpdateSessionNotification(
                    session_id=session.session_id, update=StateUpdate(state="idle", stop_reason="error", error=lost)
                )
                self._on_update(note)
            if was_live and session.attached:
                notice = Notice(
                    severity="warning",
                    title="The agent exited; the host is starting it again",
                    description="A turn that was running is lost; the session goes on once the agent is back.",
                )
                self.notify_attached(session, notice)

    def _give_up(self, reason: str) -> None:
        """No more restarts: said to the operator (``agent_failed``) and to every client from now on."""
        from ..schema.types import Notice

        self._failed = reason
        self.emit("agent_failed", reason=reason)
        _log.error("%s", reason)
        for session in self.sessions.values():
            session.resumable = False
            if session.attached:
                self.notify_attached(session, Notice(severity="error", title="The agent is gone", description=reason))

    def notify_attached(self, session: HostSession, notice: Any) -> None:
        """A live notice (not kept for replays) to each attached client that speaks version 2."""
        note = UpdateSessionNotification(session_id=session.session_id, update=notice)
        for front in self.attached_fronts(session):
            if self._tg is not None and getattr(front, "v1", None) is None:
                self._tg.start_soon(_notify, front.rpc, note)

    async def _revive_sessions(self, client: ClientConnection) -> None:
        """After a (re)start: resume each session the agent had (``session/resume``, v1 ``session/load``), so
        their clients go on; one the agent cannot take back is read-only."""
        for session in list(self.sessions.values()):
            if not session.resumable:
                continue
            try:
                await open_resumed_session(
                    hub_of(client),
                    session.session_id,
                    session.cwd,
                    None,
                    session.mcp_servers,
                    session.additional_directories,
                )
            except (AcpError, ValueError) as exc:
                session.resumable = False
                self.emit("session_read_only", session.session_id, reason=str(exc))
                await self.persist(session)
            else:
                session.live = True
                if self.agent_starts > 1 and session.attached:
                    from ..schema.types import Notice

                    back = Notice(severity="info", title="The agent was restarted; the session goes on")
                    self.notify_attached(session, back)

    @property
    def client(self) -> ClientConnection:
        """The connection to the agent now; ``RpcError`` (-32603) while it is being restarted."""
        if self._client is None:
            if self._failed is not None:
                raise RpcError(-32603, self._failed)
            raise RpcError(-32603, "the agent is restarting; try again shortly")
        return self._client

    def emit(self, kind: EventKind, session_id: str | None = None, client: str | None = None, **detail: Any) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(HostEvent(kind, session_id, client, detail))
        except Exception:
            _log.exception("the host's on_event callback failed")

    # -- sessions --------------------------------------------------------------------------------------

    def session(self, session_id: str) -> HostSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(data={"sessionId": session_id, "reason": "no such session on this host"})
        return session

    def root_of(self, session_id: str) -> HostSession | None:
        """The host's session a subagent (child session, at any depth) belongs to, from the parents the
        connection to the agent tracks; None for a session that is no host session's child."""
        client = self._client
        if client is None:
            return None
        tracks = hub_of(client).session_tracks
        seen: set[str] = set()
        track = tracks.get(session_id)
        while track is not None and track.parent is not None and track.parent not in seen:
            seen.add(track.parent)
            session = self.sessions.get(track.parent)
            if session is not None:
                return session
            track = tracks.get(track.parent)
        return None

    def changed(self, session_id: str) -> anyio.Event:
        """Set when the session's log grows (a fresh event after each)."""
        event = self._changed.get(session_id)
        if event is None:
            event = self._changed[session_id] = anyio.Event()
        return event

    def wake(self, session_id: str) -> None:
        event = self._changed.pop(session_id, None)
        if event is not None:
            event.set()

    async def new_session(self, params: Any) -> tuple[HostSession, Any]:
        """``session/new`` on the agent; the host keeps the session (the agent's id is the clients' id)."""
        client = self.client
        active, response = await open_new_session(
            hub_of(client), params.cwd, params.mcp_servers or (), params.additional_directories or ()
        )
        session = self.sessions.get(active.session_id)
        if session is None:  # updates that came before the answer made it already
            session = self._make(active.session_id, params.cwd, client.protocol.version)
        session.cwd = params.cwd  # a session made by an update that came first knew no cwd yet
        session.additional_directories = list(params.additional_directories or [])
        session.mcp_servers = list(params.mcp_servers or [])
        self.emit("session_created", session.session_id, cwd=session.cwd)
        await self.persist(session)
        return session, response

    async def give_mcp_servers(self, session: HostSession, servers: Sequence[Any]) -> None:
        """A client's resume gave MCP servers: when they are not the session's already, the agent (which has the
        session live) is sent ``session/resume`` with them, the complete set replacing the earlier one (no replay).
        None given keeps the session's: an attaching client does not take away another client's servers."""
        if not servers or list(servers) == session.mcp_servers:
            return
        reason = session.read_only_reason()
        if reason is not None:
            raise InvalidRequest(message=f"Session is read-only: {reason}", data={"sessionId": session.session_id})
        client = self.client
        if not client.agent.supports("session/resume"):
            raise InvalidParams(
                data={
                    "reason": "the agent cannot take new MCP servers for a session it has (it does not resume "
                    "sessions): start a new session with them"
                }
            )
        await open_resumed_session(
            hub_of(client), session.session_id, session.cwd, None, servers, session.additional_directories
        )
        session.mcp_servers = list(servers)
        self.emit("session_mcp_servers", session.session_id, servers=[_name(s) for s in servers])

    def _make(self, session_id: str, cwd: str, version: int) -> HostSession:
        from .core import UpdateLog

        session = HostSession(
            session_id,
            cwd,
            self.options.label,
            protocol_version=version,
            log=UpdateLog(self.options.max_log_entries, self.options.max_log_bytes),
        )
        self.sessions[session_id] = session
        return session

    def _on_update(self, note: UpdateSessionNotification) -> None:
        """Every agent update (sync, in wire order): logged, then the attached clients' feeds wake. (Runs once per
        update the agent streams: kept short.)"""
        session = self.sessions.get(note.session_id)
        subagent = False
        if session is None:
            session = self._session_of_other(note.session_id)
            if session is None:
                return
            subagent = session.session_id != note.session_id
        params = _encode(note)
        before = session.state
        log = session.log
        dropped = log.dropped
        session.record(params, note.update, subagent=subagent)
        if log.dropped != dropped and session.attached:
            fronts = self._fronts
            for key in session.attached:
                front = fronts.get(key)
                if front is not None:
                    front.check_behind(session)
        if before != "idle" and session.state == "idle":
            detail = {"stopReason": session.stop_reason} if session.stop_reason is not None else {}
            self.emit("turn_ended", session.session_id, session.prompted_by, **detail)
            if self._tg is not None:
                self._tg.start_soon(self.persist, session)
        if self.store is not None and self._tg is not None:
            self._tg.start_soon(self._store_update, session, params)
        event = self._changed.pop(session.session_id, None)  # ``wake``, inline
        if event is not None:
            event.set()

    def _on_updates(self, notes: list[UpdateSessionNotification]) -> None:
        """A run of agent updates that one read brought in (the client's ``BatchUpdateListener.many``): what
        ``_on_update`` does for each, in order, with the plain updates of a known session (chunks, tool calls:
        nothing to follow but the log) logged in one loop, and once per session at the run's end the clock,
        the attached clients' fell-behind check and the wake (nothing else runs meanwhile, so the feeds see the
        same log). Every other update (a state, a title, a subagent's, an unknown session's) and every update
        of a host with a store takes ``_on_update`` whole."""
        if self.store is not None:
            for note in notes:
                self._on_update(note)
            return
        sessions = self.sessions
        kinds = _KINDS
        touched: dict[str, tuple[HostSession, int]] = {}  # session id -> the session, its log's drops before
        if len({note.session_id for note in notes}) == 1:  # the common run: one session's chunks
            only = sessions.get(notes[0].session_id)
            if only is not None and all(kinds.get(kind) == _PLAIN for kind in {type(n.update) for n in notes}):
                touched[only.session_id] = (only, only.log.dropped)
                only.log.add_run([_encode(note) for note in notes])
                self._ran(touched)
                return
        current: str | None = None
        session: HostSession | None = None
        run: list[bytes] = []  # the encoded plain updates of ``session`` not logged yet
        for note in notes:
            if note.session_id != current:
                if run:
                    assert session is not None
                    session.log.add_run(run)
                    run = []
                current = note.session_id
                session = sessions.get(current)
                if session is not None and current not in touched:
                    touched[current] = (session, session.log.dropped)
            if session is not None and kinds.get(type(note.update)) == _PLAIN:
                run.append(_encode(note))
                continue
            if run:
                assert session is not None
                session.log.add_run(run)
                run = []
            self._on_update(note)
        if run:
            assert session is not None
            session.log.add_run(run)
        self._ran(touched)

    def _ran(self, touched: dict[str, tuple[HostSession, int]]) -> None:
        """After a run (``_on_updates``), once for each session it logged updates of: the clock, the attached
        clients' fell-behind check (``dropped`` is the log's count before the run), the wake."""
        if not touched:
            return
        now = _now()
        fronts = self._fronts
        changed = self._changed
        for session_id, (session, dropped) in touched.items():
            session.updated_at = now
            if session.log.dropped != dropped and session.attached:
                for key in session.attached:
                    front = fronts.get(key)
                    if front is not None:
                        front.check_behind(session)
            event = changed.pop(session_id, None)  # ``wake``, inline
            if event is not None:
                event.set()

    def _session_of_other(self, session_id: str) -> HostSession | None:
        """The host's session an update of a session it does not keep goes to: a subagent's root, or a session
        the agent made (and the host did not know yet: made here); None when the connection does not track it."""
        client = self._client
        if client is None or session_id not in hub_of(client).session_tracks:
            _log.debug("an update of session %s, which the host does not keep", session_id)
            return None
        root = self.root_of(session_id)
        if root is not None:
            return root
        cwd = hub_of(client).session_cwds.get(session_id, "")
        return self._make(session_id, cwd, client.protocol.version)

    async def _store_update(self, session: HostSession, params: bytes) -> None:
        if self.store is None:
            return
        from .durable import stored_message

        try:
            await self.store.append(session.session_id, [stored_message(params)])
        except Exception:
            _log.exception("keeping an update of session %s in the store failed", session.session_id)

    async def persist(self, session: HostSession) -> None:
        if self.store is None:
            return
        from .durable import stored_session

        try:
            await self.store.put_session(stored_session(session))
        except Exception:
            _log.exception("keeping session %s in the store failed", session.session_id)

    async def prompt(self, session: HostSession, params: Any, client: str) -> PromptResponse:
        """A turn: sent to the agent and awaited here; when the asking client goes away, the turn goes on in the
        host's task group and settles there."""
        reason = session.read_only_reason()
        if reason is not None:
            raise InvalidRequest(message=f"Session is read-only: {reason}", data={"sessionId": session.session_id})
        sent = self.client.session(session.session_id).send_prompt_blocks(params.prompt)
        session.turns += 1
        session.prompted_by = client
        self.emit("turn_started", session.session_id, client)
        try:
            return await sent  # v2: the prompt accepted; the turn ends with the idle state_update (``_on_update``)
        except RpcError:
            raise
        except Exception as exc:
            raise RpcError(-32603, f"the turn failed: {exc}") from None
        finally:
            session.turns -= 1

    async def delete_session(self, session_id: str) -> None:
        """``session/delete``: the agent deletes it (when it can), the host forgets it and its clients."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return  # deleting an unknown session succeeds
        for front in self.attached_fronts(session):
            front.detach(session_id)
        client = self._client
        if client is not None and session.live and client.agent.supports("session/delete"):
            try:
                await client.delete_session(session_id)
            except AcpError as exc:
                _log.info("the agent did not delete session %s: %s", session_id, exc)
        if self.store is not None:
            await self.store.forget(session_id)

    async def cancel(self, session: HostSession, session_id: str | None = None) -> None:
        """``session/cancel`` to the agent: for the session, or for ``session_id``, a subagent of it (the agent's
        ids are the clients' ids), when the child advertises ``capabilities.cancel``; its parent's turn goes on."""
        client = self._client
        if client is None or not session.live:
            return
        try:
            await client.session(session_id or session.session_id).cancel_active_work()
        except AcpError as exc:  # a subagent that cannot be cancelled, or no longer tracked
            _log.info("session/cancel of %s not sent to the agent: %s", session_id, exc)

    # -- clients ---------------------------------------------------------------------------------------

    def register(self, key: Hashable, front: Any) -> None:
        self._fronts[key] = front
        self.tracing.connected(str(key), front.profile)
        self.emit("client_connected", client=str(key), profile=front.profile)

    def unregister(self, key: Hashable) -> None:
        self._fronts.pop(key, None)
        for session in self.sessions.values():
            if session.detach(key):
                self.emit("session_detached", session.session_id, str(key))
        self.asks.forget(key)
        self.emit("client_disconnected", client=str(key))
        self.tracing.disconnected(str(key))

    def attached_fronts(self, session: HostSession) -> list[Any]:
        return [self._fronts[key] for key in session.attached if key in self._fronts]

    def answered(self, ask: PermissionAsk[Any], client: Hashable, answer: Any) -> None:
        self.asks.answered(ask, client, answer)


def host_tracing(options: HostOptions) -> NoTracing:
    """Spans of what clients do when ``options.instrument`` is set (``spans``, the ``otel`` extra), else hooks
    that do nothing (OpenTelemetry never imported)."""
    if not options.instrument:
        return NoTracing()
    from .spans import HostSpans

    return HostSpans(options.tracer_provider)


def _name(server: Any) -> str:
    name = getattr(server, "name", None)
    return name if isinstance(name, str) else "?"


@asynccontextmanager
async def open_host(
    options: HostOptions, *, on_event: Callable[[HostEvent], None] | None = None
) -> AsyncIterator[Host]:
    """Run a host for the block (in a task group of its own); ``host.url`` is set on entry."""
    host = Host(options, on_event=on_event)
    async with anyio.create_task_group() as tg:
        await tg.start(host.run)
        try:
            yield host
        finally:
            tg.cancel_scope.cancel()


async def _notify(rpc: Any, note: UpdateSessionNotification) -> None:
    try:
        await rpc.notify("session/update", note)
    except Exception:  # the client went away meanwhile
        _log.debug("a notice was not delivered", exc_info=True)


def is_gone(exc: BaseException) -> bool:
    return isinstance(exc, (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError))
