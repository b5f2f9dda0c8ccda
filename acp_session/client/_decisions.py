"""The answers to the agent's interactive requests (internal): permission and elicitation.

A handler decides; a cancelled or failed handler, a request ``cancel_active_work`` covers, or an option the agent
never offered all become the cancelled answer, never an approval.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec

from .._counted_log import CountedLog
from ..interactions import Interaction, InteractionRegistry, ReaderMark, call_handler, readers_caught_up
from ..rpc import Connection
from ..schema.types import (
    CommandPermissionSubject,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationCancelAction,
    ElicitationFormMode,
    ElicitationUrlMode,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
)
from ..session import (
    SessionTrack,
)
from .permission_answers import CANCELLED_PERMISSION as _CANCELLED_PERMISSION
from .permission_answers import permission_response
from .permission_policy import PermissionDecision, ToolFacts

if TYPE_CHECKING:
    from ._settings import BuilderSettings

_log = logging.getLogger("acp_session.client")
T = TypeVar("T")


class Decisions:
    """The permission and elicitation answers of one connection."""

    def __init__(
        self,
        rpc: Connection,
        builder: BuilderSettings,
        interactions: InteractionRegistry,
        session_tracks: Mapping[str, SessionTrack],
        reader_marks: Callable[[str | None], list[ReaderMark]] = lambda session_id: [],
    ) -> None:
        self.rpc = rpc
        self.builder = builder
        self.interactions = interactions
        self.session_tracks = session_tracks
        self.reader_marks = reader_marks
        """Where the readers of a session's events stand (``UpdateRouting.reader_marks``): a request's handler is
        called once they took the events that came before it (``readers_caught_up``), so it is asked in wire
        order with them."""

    async def decide_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        subject = request.subject
        tool_call_id = request.tool_call_id
        terminal_id: str | None = None
        if isinstance(subject, CommandPermissionSubject) and isinstance(subject.terminal_id, str):
            terminal_id = subject.terminal_id
        policy = self.builder._policy
        if policy is not None:
            decision = policy.decide(request, self._known_facts(request.session_id, tool_call_id))
            if decision.action != "ask":
                if self.builder._policy_listener is not None:  # told in wire order too
                    await readers_caught_up(self.reader_marks(request.session_id))
                return self._by_policy(request, decision, tool_call_id, terminal_id)
        fn = self.builder._permission
        if fn is None:
            self.rpc.peer_log.warning(
                "permission requests without a handler",
                "no permission handler: answering %r with the cancelled outcome",
                request.title[:200],
                logger=_log,
            )
            return _CANCELLED_PERMISSION
        item = Interaction("permission", request.session_id, tool_call_id, terminal_id, request)
        marks = self.reader_marks(request.session_id)  # where the readers stand as the request comes

        async def decide(params: RequestPermissionRequest) -> RequestPermissionResponse:
            await readers_caught_up(marks)
            return permission_response(await call_handler(fn, params))

        answer = await self._decide(item, decide, lambda: _CANCELLED_PERMISSION)
        return _offered_only(request, answer, self.rpc.peer_log)

    def _known_facts(self, session_id: str, tool_call_id: str | None) -> ToolFacts | None:
        """What the tool call's earlier updates on this connection said (its kind and paths)."""
        track = self.session_tracks.get(session_id)
        if track is None or tool_call_id is None or tool_call_id not in track.tool_facts:
            return None
        kind, paths = track.tool_facts[tool_call_id]
        return ToolFacts(tool_call_id, kind, paths)

    def _by_policy(
        self,
        request: RequestPermissionRequest,
        decision: PermissionDecision,
        tool_call_id: str | None,
        terminal_id: str | None,
    ) -> RequestPermissionResponse:
        """The policy's answer, unless ``cancel_active_work`` covers the request (then cancelled, like a handler's);
        the listener hears of it either way, with the option actually sent."""
        item = Interaction("permission", request.session_id, tool_call_id, terminal_id, request)
        answer = _CANCELLED_PERMISSION
        if decision.option_id is not None and not self._declines(item, self.rpc.request_receipt()):
            answer = RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=decision.option_id))
        sent = answer.outcome.option_id if isinstance(answer.outcome, SelectedPermissionOutcome) else None
        listener = self.builder._policy_listener
        if listener is not None:
            try:
                listener(request, dataclasses.replace(decision, option_id=sent))
            except Exception:
                self.rpc.peer_log.exception(
                    "failures of the on_decision listener",
                    "the permission policy's on_decision listener failed",
                    logger=_log,
                )
        return answer

    async def _decide(self, item: Interaction, fn: Callable[[Any], Any], cancelled: Callable[[], T]) -> T:
        """Run an interactive request's handler, unless ``cancel_active_work`` covers the request; a handler that
        fails, or is cancelled or withdrawn while it decides, gets the ``cancelled()`` answer (never an approval;
        the failure is logged here, nothing of it reaches the agent)."""
        receipt = self.rpc.request_receipt()
        if self._declines(item, receipt):
            return cancelled()  # its work was cancelled before its handler could start
        try:
            answer: T = await self.interactions.run(item, fn, cancelled)
        except Exception:
            self.rpc.peer_log.exception(
                f"failures of the {item.kind} handler",
                "the %s handler failed; answering with the cancelled outcome",
                item.kind,
                logger=_log,
            )
            return cancelled()
        if self._declines(item, receipt) or anyio.current_effective_deadline() == -math.inf:
            return cancelled()  # cancelled (or withdrawn) while the handler was deciding
        return answer

    def _declines(self, item: Interaction, receipt: int | None) -> bool:
        """Whether ``cancel_active_work`` covers this request: it was read before the cancelled work ended and
        its subject is not background work (which keeps running)."""
        track = self.session_tracks.get(item.session_id or "")
        if track is None or receipt is None or receipt >= track.cancel_barrier:
            return False
        return not item.subject_in(track.background)

    def waiting_interactions(self, session_id: str, background: frozenset[tuple[str, str]]) -> int:
        """Interactive requests of ``session_id`` read but still waiting for a handler slot (they will be
        declined when they start), for ``cancel_active_work``'s count."""
        count = 0
        for method, params in self.rpc.waiting_requests():
            if method not in ("session/request_permission", "elicitation/create") or params is None:
                continue
            try:
                peek = _PEEK_INTERACTION.decode(params)
            except msgspec.DecodeError:
                continue
            if peek.sessionId != session_id:
                continue
            tool_call = peek.toolCall or (peek.subject or {}).get("toolCall") or {}
            tool_call_id = tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
            if ("tool_call", tool_call_id) not in background:
                count += 1
        return count

    async def decide_elicitation(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        fn = self.builder._elicitation
        mode = (
            "form"
            if isinstance(request, ElicitationFormMode)
            else "url"
            if isinstance(request, ElicitationUrlMode)
            else ""
        )
        if fn is None or mode not in self.builder._elicitation_modes:
            return ElicitationCancelAction()  # a mode we did not advertise, or unknown (ACP2-025)
        assert isinstance(request, (ElicitationFormMode, ElicitationUrlMode))
        session_id = request.session_id if isinstance(request.session_id, str) else None
        tool_call_id = request.tool_call_id if isinstance(request.tool_call_id, str) else None
        item = Interaction("elicitation", session_id, tool_call_id, None, request)
        marks = self.reader_marks(session_id)  # where the readers stand as the request comes

        async def decide(params: Any) -> Any:
            await readers_caught_up(marks)
            return await call_handler(fn, params)

        answer: CreateElicitationResponse = await self._decide(item, decide, ElicitationCancelAction)
        return answer


class _InteractionPeek(msgspec.Struct):
    """The few fields of a waiting permission/elicitation request that ``cancel_active_work`` counts by."""

    sessionId: Any = None
    toolCall: Any = None
    subject: Any = None


_PEEK_INTERACTION = msgspec.json.Decoder(_InteractionPeek)


def _offered_only(
    request: RequestPermissionRequest, response: RequestPermissionResponse, log: CountedLog
) -> RequestPermissionResponse:
    """A selected option the agent never offered is not an approval: it becomes cancelled (and is logged)."""
    outcome = response.outcome
    if isinstance(outcome, SelectedPermissionOutcome):
        offered = {option.option_id for option in request.options}
        if outcome.option_id not in offered:
            log.warning(
                "answers with an option the agent did not offer",
                "the permission handler chose %r, which the agent did not offer (%s): answering cancelled",
                outcome.option_id,
                ", ".join(sorted(offered)) or "no options",
                logger=_log,
            )
            return _CANCELLED_PERMISSION
    return response
