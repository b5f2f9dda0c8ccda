"""Sessions that belong to the server, not to one connection (``acp-reference-agent --listen``).

Every connection's ``ReferenceAgent`` shares one ``SessionStore`` and one task group, so a turn outlives the
connection that started it. A session is served by the connection that last created or resumed it: its updates
go there, or nowhere while no connection serves it (they are still kept in its history, so a resume with replay
delivers them once), and a permission request the turn waits for is asked again on the connection that resumes
the session.
"""

from __future__ import annotations

import logging
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from acp_session.errors import ConnectionClosed, RpcError
from acp_session.rpc import Connection, PendingRequest
from acp_session.schema import unstable as mu
from acp_session.schema.types import RequestPermissionRequest, RequestPermissionResponse

from .sessions import Session, SessionStore

__all__ = ["ServingAgent", "SharedSessions"]

_log = logging.getLogger("acp_conformance.agent")
_DELIVERY_ERRORS = (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError)


class ServingAgent(Protocol):
    """What the shared sessions need of the agent serving one connection (``server.ReferenceAgent``): its
    connection, whether its client speaks v1, sending an update to that client and asking it for permission. A
    protocol, so this module (and the v1 front) stay below the server that implements it."""

    @property
    def conn(self) -> Connection: ...

    @property
    def v1(self) -> object:
        """The v1 front when the client negotiated protocol version 1, else None."""
        ...

    async def send_update(self, session_id: str, update: mu.SessionUpdate) -> None: ...

    def ask_permission(self, request: RequestPermissionRequest) -> PendingRequest[RequestPermissionResponse]: ...


class SharedSessions:
    """The server's sessions and which connection (``ServingAgent``) serves each one now."""

    def __init__(self, tg: TaskGroup, store_path: str | None = None) -> None:
        self.tg = tg
        """Where turns and background work run: the server's task group, not a connection's."""
        self.store = SessionStore(store_path, self.send_update)
        self._served_by: dict[str, ServingAgent] = {}
        self._served: dict[str, anyio.Event] = {}  # set while a connection serves the session (after any replay)
        self._held: dict[str, list[tuple[str, mu.SessionUpdate]]] = {}  # live updates held while a resume replays

    def serves(self, session_id: str, agent: ServingAgent) -> bool:
        return self._served_by.get(session_id) is agent

    def serving(self, session_id: str) -> ServingAgent | None:
        """The connection's agent that serves the session now (a subagent's: its parent's), if any."""
        return self._served_by.get(self._parent_id(session_id))

    def attach(self, session_id: str, agent: ServingAgent) -> None:
        """``agent``'s connection serves the session from now on (session/new, session/fork)."""
        self._served_by[session_id] = agent
        self._event(session_id).set()

    def begin_resume(self, session_id: str, agent: ServingAgent) -> None:
        """A resume starts on ``agent``: live updates wait until its replay went out (``end_resume``)."""
        self._served_by[session_id] = agent
        self._held.setdefault(session_id, [])

    async def end_resume(self, session_id: str) -> None:
        """Send the updates held during the replay, then go live; a waiting permission request is asked now."""
        held = self._held.get(session_id)
        try:
            while held:
                update_session_id, update = held.pop(0)
                await self._deliver(update_session_id, update, session_id)
        finally:
            self._held.pop(session_id, None)
        if session_id in self._served_by:
            self._event(session_id).set()

    def detach(self, agent: ServingAgent) -> None:
        """``agent``'s connection ended: its sessions go on unserved until a connection resumes them."""
        for session_id in [sid for sid, served_by in self._served_by.items() if served_by is agent]:
            del self._served_by[session_id]
            self._held.pop(session_id, None)
            event = self._served.get(session_id)
            if event is not None and event.is_set():
                del self._served[session_id]  # the next wait gets a fresh event (an unset one may have waiters)

    def forget(self, session_id: str) -> None:
        self._served_by.pop(session_id, None)
        self._held.pop(session_id, None)

    def _event(self, session_id: str) -> anyio.Event:
        event = self._served.get(session_id)
        if event is None:
            event = self._served[session_id] = anyio.Event()
        return event

    def _parent_id(self, session_id: str) -> str:
        """A subagent's updates go where its parent session is served."""
        if session_id in self._served_by or self.store.get(session_id) is not None:
            return session_id
        for parent in self.store.all():
            if session_id in parent.subagents:
                return parent.session_id
        return session_id

    async def send_update(self, session_id: str, update: mu.SessionUpdate) -> None:
        """Every session's ``emit_raw``: to the connection serving it, held during a replay, else dropped."""
        home = self._parent_id(session_id)
        held = self._held.get(home)
        if held is not None:
            held.append((session_id, update))
            return
        await self._deliver(session_id, update, home)

    async def _deliver(self, session_id: str, update: mu.SessionUpdate, home: str) -> None:
        agent = self._served_by.get(home)
        if agent is None:
            return
        try:
            await agent.send_update(session_id, update)
        except _DELIVERY_ERRORS:
            _log.debug("session %s: its connection is gone; the update is kept in its history only", session_id)

    async def request_permission(
        self, session: Session, request: RequestPermissionRequest
    ) -> RequestPermissionResponse | None:
        """Ask whichever connection serves the session; when that connection ends first, ask again on the next."""
        asked = False
        while True:
            await self._event(session.session_id).wait()
            agent = self._served_by.get(session.session_id)
            if agent is None:
                self._served.pop(session.session_id, None)
                continue
            pending = agent.ask_permission(request)
            session.permissions.add(pending)
            try:
                if not asked:
                    asked = True
                    # The whole foreground workflow waits for the user now (ACP2-048, ACP2-052).
                    await session.set_state("requires_action")
                answer: RequestPermissionResponse = await pending
                return answer
            except ConnectionClosed:
                if self._served_by.get(session.session_id) is agent:
                    self.detach(agent)
            except RpcError:
                return None  # any error answer is not an approval
            finally:
                session.permissions.discard(pending)
