"""The agent's interactive requests, relayed to the host's clients: permission requests and ``elicitation/create``.

Each request belongs to a host session: its own, or for a subagent's (a child session's) request the root session
whose log keeps the child. It is asked of every client attached to that session that can answer it
(``front.ClientFront.can_answer``), in the session's feed after the updates that came before it, and of each such
client that attaches while it waits. The first answer wins; the other clients' requests are withdrawn
(``$/cancel_request``). After ``permission_timeout`` without an answer: the policy for a permission request
(cancelled unless ``HostOptions.policy`` approves or rejects), for an elicitation the ``cancel`` action (nobody
saw it, so nobody declined it), or ``decline`` when the policy rejects what it does not know (``--deny-all``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..schema.types import (
    CancelledPermissionOutcome,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationCancelAction,
    ElicitationDeclineAction,
    ElicitationUrlMode,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
)
from .core import ELICITATION_METHOD, HostSession, PermissionAsk, elicitation_mode, struct_tag

if TYPE_CHECKING:
    from .options import HostOptions
    from .tracing import NoTracing

__all__ = ["Asks", "AskingHost"]

_log = logging.getLogger("acp_session.host")
_CANCELLED = RequestPermissionResponse(outcome=CancelledPermissionOutcome())
_MAX_URL_ELICITATIONS = 1024
"""URL elicitations remembered for their ``elicitation/complete`` (the oldest forgotten beyond it)."""


class AskingHost(Protocol):
    """What the relay needs of its host (``host.Host``; a protocol keeps this module below it)."""

    sessions: dict[str, HostSession]
    options: HostOptions
    tracing: NoTracing

    def root_of(self, session_id: str) -> HostSession | None: ...

    def attached_fronts(self, session: HostSession) -> list[Any]: ...

    def emit(self, kind: Any, session_id: str | None = None, client: str | None = None, **detail: Any) -> None: ...


class Asks:
    """The interactive requests of one host's agent, waiting for its clients (``Host.asks``)."""

    def __init__(self, host: AskingHost) -> None:
        self.host = host
        self._settled: dict[PermissionAsk[Any], anyio.Event] = {}
        self._url_sessions: OrderedDict[str, str] = OrderedDict()  # elicitation id -> host session

    def _owner(self, session_id: str) -> tuple[HostSession | None, bool]:
        """The host session a request of ``session_id`` belongs to, and whether it is a subagent's request."""
        session = self.host.sessions.get(session_id)
        if session is not None:
            return session, False
        root = self.host.root_of(session_id)
        return root, root is not None

    async def on_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        """The agent asks for permission: relayed; unanswered in time, the policy answers."""
        session, subagent = self._owner(request.session_id)
        if session is None:
            return _CANCELLED
        ask: PermissionAsk[Any] = PermissionAsk(request, session_id=session.session_id, subagent=subagent)
        tracing = self.host.tracing
        tracing.permission_asked(ask)
        detail: dict[str, Any] = {"toolCallId": request.tool_call_id}
        if subagent:
            detail["subagent"] = request.session_id
        self.host.emit("permission_asked", session.session_id, **detail)
        if await self._relay(session, ask):
            answer: RequestPermissionResponse = ask.answer
            tracing.permission_settled(ask, str(ask.answered_by), answer)
            self.host.emit("permission_answered", session.session_id, str(ask.answered_by), **_outcome(answer))
            return answer
        answer = self._by_policy(request)
        tracing.permission_settled(ask, None, answer)
        self.host.emit("permission_answered", session.session_id, None, by="policy", **_outcome(answer))
        return answer

    async def on_elicitation(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        """The agent asks the user for input (``elicitation/create``): a session-scoped request is relayed like a
        permission request; unanswered in time (or request-scoped: no client's request is its scope), ``cancel``."""
        session_id = getattr(request, "session_id", None)
        mode = elicitation_mode(request)
        session, subagent = self._owner(session_id) if isinstance(session_id, str) else (None, False)
        if session is None or mode is None:
            return ElicitationCancelAction()
        ask: PermissionAsk[Any] = PermissionAsk(
            request, session_id=session.session_id, method=ELICITATION_METHOD, subagent=subagent
        )
        detail: dict[str, Any] = {"mode": mode}
        if subagent:
            detail["subagent"] = session_id
        if isinstance(request, ElicitationUrlMode):
            self._url_sessions[request.elicitation_id] = session.session_id
            while len(self._url_sessions) > _MAX_URL_ELICITATIONS:
                self._url_sessions.popitem(last=False)
        self.host.emit("elicitation_asked", session.session_id, **detail)
        if await self._relay(session, ask):
            answer: CreateElicitationResponse = ask.answer  # an unknown action is kept raw (ACP2-089)
            action = struct_tag(answer) or "other"
            self.host.emit("elicitation_answered", session.session_id, str(ask.answered_by), action=action)
            return answer
        policy = self.host.options.policy
        if policy is not None and policy.default == "deny":  # the operator refuses what nobody answered
            self.host.emit("elicitation_answered", session.session_id, None, by="policy", action="decline")
            return ElicitationDeclineAction()
        self.host.emit("elicitation_answered", session.session_id, None, by="policy", action="cancel")
        return ElicitationCancelAction()

    def on_elicitation_complete(self, note: CompleteElicitationNotification) -> None:
        """A URL elicitation is complete: told to the clients attached to its session that take URL elicitations."""
        session_id = self._url_sessions.pop(note.elicitation_id, None)
        session = self.host.sessions.get(session_id) if session_id is not None else None
        if session is None:
            return
        for front in self.host.attached_fronts(session):
            if "url" in front.elicitation:
                front.tell("elicitation/complete", note)

    async def _relay(self, session: HostSession, ask: PermissionAsk[Any]) -> bool:
        """Ask the clients that can answer (and those that attach meanwhile); True when one answered in time."""
        settled = self._settled[ask] = anyio.Event()
        session.waiting(ask)
        try:
            for front in self.host.attached_fronts(session):
                front.ask_permission(ask)
            with anyio.move_on_after(self.host.options.permission_timeout):
                await settled.wait()
            return ask.settled and ask.answered_by is not None
        finally:
            for handle in ask.withdraw_all():
                handle.cancel()
            session.done(ask)
            self._settled.pop(ask, None)

    def answered(self, ask: PermissionAsk[Any], client: Hashable, answer: Any) -> None:
        """A client's answer: the first one settles the request, the others' requests are withdrawn."""
        others = ask.settle(client, answer)
        if others is None:
            return
        for handle in others:
            handle.cancel()
        event = self._settled.get(ask)
        if event is not None:
            event.set()

    def forget(self, client: Hashable) -> None:
        """``client`` went away: no request waits for it any more."""
        for ask in list(self._settled):
            ask.forget(client)

    def _by_policy(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        policy = self.host.options.policy
        if policy is None:
            return _CANCELLED
        decision = policy.decide(request)
        if decision.action == "ask" or decision.option_id is None:
            return _CANCELLED
        return RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=decision.option_id))


def _outcome(answer: RequestPermissionResponse) -> dict[str, Any]:
    outcome = answer.outcome
    if isinstance(outcome, SelectedPermissionOutcome):
        return {"outcome": "selected", "optionId": outcome.option_id}
    return {"outcome": "cancelled"}
