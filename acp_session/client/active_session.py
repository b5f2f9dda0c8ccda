"""``ActiveSession``: a cloneable command handle for one agent session.

The handle holds only the session id and its link to the connection (``SessionLink``, which the connection's hub
implements); what the agent reported lives in the connection's per-session ``SessionTrack``
(``acp_session.session``), so every clone agrees. A prompt is handed down once (``SessionLink.send_prompt``)
and its outcome comes back settled on the track.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from .._turn_state import OPEN_PROMPT_STATES
from ..client_errors import CapabilityNotSupported, SessionClosed, SessionLost
from ..codec import decoder
from ..errors import AcpError, ResourceNotFound
from ..protocol.capabilities import REQUIRED_CAPABILITY
from ..rpc import PendingRequest
from ..schema import unstable
from ..schema.types import (
    CancelSessionNotification,
    CancelTerminalRequest,
    CancelTerminalResponse,
    CancelToolCallRequest,
    CancelToolCallResponse,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentBlock,
    PromptResponse,
    SessionConfigOption,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionValueIdRequest,
    TextContent,
)
from ..session import SentRequest, SessionTrack, TrackedPrompt, UpdateListener, option_of_category

if TYPE_CHECKING:
    from ..interactions import InteractionRegistry
    from ..protocol.base import ProtocolAdapter
    from ..rpc import Connection
    from .connection import ClientConnection

__all__ = ["ActiveSession"]

T = TypeVar("T")


_CLOSE = decoder(CloseSessionResponse)
_SET_TITLE = decoder(unstable.SetSessionTitleResponse)
_ARCHIVE = decoder(unstable.ArchiveSessionResponse)
_UNARCHIVE = decoder(unstable.UnarchiveSessionResponse)
_STATUS = decoder(unstable.SessionStatusResponse)
_SET_CONFIG = decoder(SetSessionConfigOptionResponse)


class SessionLink(Protocol):
    """All an ``ActiveSession`` asks of its connection (the connection's hub, ``client._hub``, implements it).

    The handle calls nothing else on the connection (tests/client/test_session_link.py checks both). These names
    are a contract inside the package, not public API: the API reference leaves them out (mkdocs.yml).
    """

    @property
    def connection(self) -> ClientConnection:
        """The public connection the handle belongs to: ``ActiveSession.connection``."""
        ...

    @property
    def rpc(self) -> Connection:
        """The JSON-RPC peer: a new prompt's cancel barrier is its count of requests received so far."""
        ...

    @property
    def interactions(self) -> InteractionRegistry:
        """The agent's interactive requests in progress: cancelling work or closing answers the session's."""
        ...

    @property
    def protocol(self) -> ProtocolAdapter:
        """The negotiated version's adapter: told when a session closes."""
        ...

    @property
    def session_tracks(self) -> Mapping[str, SessionTrack]:
        """Each session's track by id: read without creating one on every command's open-check."""
        ...

    def session_track(self, session_id: str, /) -> SessionTrack:
        """The session's track, made if there is none yet: where every clone of a handle keeps its state."""
        ...

    def supports(self, method: str, /) -> bool:
        """Whether the agent offers ``method``: ``close`` sends ``session/close`` only if it does."""
        ...

    def send_prompt(
        self,
        session: ActiveSession,
        track: SessionTrack,
        blocks: Sequence[ContentBlock],
        on_settle: Callable[[TrackedPrompt], None] | None,
        on_tracked: Callable[[TrackedPrompt], None] | None,
        /,
    ) -> TrackedPrompt:
        """A prompt's whole way down (checked against the agent's capabilities, sent the negotiated version's
        way, tracked) and its outcome back (settled on ``track`` when its answer is read, in wire order with the
        updates around it; a lapsed time limit cancels the turn): the handle hands it over once."""
        ...

    def rpc_request(
        self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None, /
    ) -> PendingRequest[T]:
        """Send a request in the model types (the adapter maps it to the wire): the session's commands."""
        ...

    async def rpc_notify(self, method: str, params: Any, /) -> None:
        """Send a notification in the model types: ``session/cancel``."""
        ...

    def waiting_interactions(self, session_id: str, background: frozenset[tuple[str, str]], /) -> int:
        """Interactive requests read but not yet handled (declined once they start): ``cancel_active_work``'s count."""
        ...


class ActiveSession:
    """Command handle for one session; cheap to copy, every copy talks about the same remote session."""

    __slots__ = ("_conn", "_session_id")

    def __init__(self, connection: SessionLink, session_id: str) -> None:
        self._conn: SessionLink = connection
        self._session_id = session_id

    def __repr__(self) -> str:
        return f"<ActiveSession {self._session_id!r}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActiveSession) and (other._conn, other._session_id) == (self._conn, self._session_id)

    def __hash__(self) -> int:
        return hash((id(self._conn), self._session_id))

    def clone(self) -> ActiveSession:
        return ActiveSession(self._conn, self._session_id)

    __copy__ = clone

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def connection(self) -> ClientConnection:
        return self._conn.connection

    @property
    def track(self) -> SessionTrack:
        return self._conn.session_track(self._session_id)

    @property
    def pending_prompts(self) -> list[TrackedPrompt]:
        """Prompts sent through this connection and not yet answered, oldest first."""
        return [p for p in self.track.prompts if p.status in OPEN_PROMPT_STATES]

    @property
    def prompts(self) -> list[TrackedPrompt]:
        """Recent prompts, including answered ones still waiting for (or joined to) their user message."""
        return list(self.track.prompts)

    def _check_open(self) -> SessionTrack:
        track = self._conn.session_tracks.get(self._session_id) or self.track
        if track.lost is not None:  # the agent no longer has it: not its -32002 for each call from now on
            raise SessionLost(self._session_id, track.lost.cause)
        if track.closed:
            raise SessionClosed(self._session_id)
        return track

    # -- prompts -----------------------------------------------------------------------------------------

    def send_prompt(self, text: str, *, timeout: float | None = None) -> SentRequest[PromptResponse]:
        """Send a text prompt now; the result is the accepted user message's id, not the agent's reply.

        ``timeout`` (seconds; None: no limit) bounds the wait for the answer: when it passes, the request is
        withdrawn (``$/cancel_request``), the turn is cancelled (``session/cancel``, and this session's
        foreground permission questions are answered cancelled, as ``cancel_active_work``) and awaiting the
        result raises ``RequestTimeout``; the prompt is then ``failed``."""
        return self.send_prompt_blocks([TextContent(text=text)], timeout=timeout)

    def send_prompt_blocks(
        self, blocks: Sequence[ContentBlock], *, timeout: float | None = None
    ) -> SentRequest[PromptResponse]:
        """Send prompt content now. Not gated on the session being idle: the agent holds prompts while busy.
        ``timeout``: see ``send_prompt``."""
        sent = self.send_tracked(blocks).request
        if timeout is not None:
            sent._pending.set_timeout(timeout)
        return sent

    def send_tracked(
        self,
        blocks: Sequence[ContentBlock],
        on_settle: Callable[[TrackedPrompt], None] | None = None,
        on_tracked: Callable[[TrackedPrompt], None] | None = None,
    ) -> TrackedPrompt:
        """Send a prompt and track it; ``on_tracked`` runs before anything about it can be reported
        (a protocol that reports the user message itself, v1, does so right after). ``Conversation.chat``'s
        entry point (internal: the API reference leaves it out); ``send_prompt_blocks`` is the public one."""
        return self._conn.send_prompt(self, self._check_open(), blocks, on_settle, on_tracked)

    def add_update_listener(self, listener: UpdateListener) -> Callable[[], None]:
        """Call ``listener`` inline for each of this session's updates (after tracking, before the builder's
        handler). It must not block; exceptions are logged. Returns a function that removes it."""
        return self.track.listen(listener, take_early=True)

    # -- work --------------------------------------------------------------------------------------------

    async def cancel_active_work(self) -> int:
        """Send ``session/cancel``, then answer this session's foreground interactive requests cancelled.

        Requests whose subject is in the latest background list are left alone: that work keeps running.
        Returns how many pending requests were cancelled locally. For a subagent (child) session, only when the
        parent's ``subagent_update`` advertises the child's ``capabilities.cancel`` (else
        ``CapabilityNotSupported``).
        """
        track = self._check_open()
        if track.parent is not None and not track.cancellable:
            raise CapabilityNotSupported("session/cancel", f"capabilities.cancel of subagent {self._session_id!r}")
        # A barrier, set before session/cancel is sent: every interactive request of this session read before the
        # cancelled work ends (the agent's idle, or our next prompt) is answered cancelled from now on, whether its
        # handler is running, waiting for a slot, or starts later (ClientConnection.declines).
        track.cancel_barrier = math.inf
        await self._conn.rpc_notify("session/cancel", CancelSessionNotification(session_id=self._session_id))
        background = track.background
        running = self._conn.interactions.cancel(self._session_id, keep=lambda item: item.subject_in(background))
        return running + self._conn.waiting_interactions(self._session_id, background)

    async def set_config_option(
        self, config_id: str, value: str | bool, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Set an option (a value id for selects, a boolean for boolean options); returns the complete new list.
        ``timeout``: see ``ClientConnection.new_session``."""
        track = self._check_open()
        params: Any
        if isinstance(value, bool):
            params = SetSessionConfigOptionBooleanRequest(session_id=self._session_id, config_id=config_id, value=value)
        elif isinstance(value, str):
            params = SetSessionConfigOptionValueIdRequest(session_id=self._session_id, config_id=config_id, value=value)
        else:
            raise TypeError(f"config value must be a value id (str) or a bool, not {type(value).__name__}")
        pending = self._conn.rpc_request("session/set_config_option", params, _SET_CONFIG, timeout)
        # The answer is the complete list (ACP2-033): record it where it sits on the wire, so a later
        # config_option_update still wins, and listeners (a Conversation's state) fold it like an update.
        pending.add_done_callback(track.answered_options)
        response = await pending
        return response.config_options

    async def set_mode(
        self, value: str, options: Sequence[Any] | None = None, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Switch the session's mode: set the config option of category ``mode`` (for a v1 agent, its modes
        are that option, and this sends ``session/set_mode``). ``options`` is the current option list
        (e.g. ``Conversation.state.config_options``); by default the last one this connection saw."""
        return await self._set_category("mode", value, options, timeout)

    async def set_model(
        self, value: str, options: Sequence[Any] | None = None, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Switch the session's model: set the config option of category ``model`` (v1: ``session/set_model``)."""
        return await self._set_category("model", value, options, timeout)

    async def _set_category(
        self, category: str, value: str, options: Sequence[Any] | None, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        known = list(options) if options is not None else self._check_open().config_options
        option = option_of_category(known, category)
        if option is None:
            raise CapabilityNotSupported(f"set {category}", f"a config option of category {category!r}")
        return await self.set_config_option(option.config_id, value, timeout=timeout)

    @property
    def config_options(self) -> list[SessionConfigOption]:
        """The session's config options as last reported to this connection (session setup, updates, answers)."""
        return list(self.track.config_options)

    async def cancel_tool_call(self, tool_call_id: str, *, timeout: float | None = None) -> None:
        """Cancel one tool call; only allowed while its latest update advertises ``capabilities.cancel``."""
        track = self._check_open()
        if tool_call_id not in track.cancellable_tool_calls:
            raise CapabilityNotSupported("tool_call/cancel", f"capabilities.cancel on tool call {tool_call_id!r}")
        params = CancelToolCallRequest(session_id=self._session_id, tool_call_id=tool_call_id)
        await self._conn.rpc_request("tool_call/cancel", params, decoder(CancelToolCallResponse), timeout)

    async def cancel_terminal(self, terminal_id: str, *, timeout: float | None = None) -> None:
        """Cancel one terminal; only allowed while its latest update advertises ``capabilities.cancel``."""
        track = self._check_open()
        if terminal_id not in track.cancellable_terminals:
            raise CapabilityNotSupported("terminal/cancel", f"capabilities.cancel on terminal {terminal_id!r}")
        params = CancelTerminalRequest(session_id=self._session_id, terminal_id=terminal_id)
        await self._conn.rpc_request("terminal/cancel", params, decoder(CancelTerminalResponse), timeout)

    # -- Preview (unstable schema; each only when the agent advertises it) -------------------------------------

    def _preview(self, method: str) -> None:
        if not self._conn.supports(method):
            raise CapabilityNotSupported(method, REQUIRED_CAPABILITY.get(method, "it"))

    async def set_title(self, title: str, *, timeout: float | None = None) -> str:
        """``session/set_title`` (Preview, ``session.title``): returns the title the agent stored (it may
        normalise it); the agent also reports it with ``session_info_update``."""
        self._check_open()
        self._preview("session/set_title")
        params = unstable.SetSessionTitleRequest(session_id=self._session_id, title=title)
        response = await self._conn.rpc_request("session/set_title", params, _SET_TITLE, timeout)
        return response.title

    async def archive(self, *, timeout: float | None = None) -> None:
        """``session/archive`` (Preview, ``session.archive``): hide the session from default listings."""
        self._preview("session/archive")
        params = unstable.ArchiveSessionRequest(session_id=self._session_id)
        await self._conn.rpc_request("session/archive", params, _ARCHIVE, timeout)

    async def unarchive(self, *, timeout: float | None = None) -> None:
        """``session/unarchive`` (Preview, ``session.archive``)."""
        self._preview("session/unarchive")
        params = unstable.UnarchiveSessionRequest(session_id=self._session_id)
        await self._conn.rpc_request("session/unarchive", params, _UNARCHIVE, timeout)

    async def status(self, *, timeout: float | None = None) -> unstable.SessionStatusResponse:
        """``session/status`` (Preview, ``session.status``): ``open`` (in the agent's memory) or ``saved`` (an
        unknown value counts as ``saved``), with a foreground-state snapshot that is never a new completion."""
        self._preview("session/status")
        params = unstable.SessionStatusRequest(session_id=self._session_id)
        response = await self._conn.rpc_request("session/status", params, _STATUS, timeout)
        if response.status not in unstable.SESSION_STATUS_VALUES:
            response = msgspec.structs.replace(response, status="saved")
        return response

    async def close(self, *, timeout: float | None = None) -> None:
        """Close the remote session. Idempotent: closing twice, or a -32002 answer, counts as success."""
        track = self.track
        if track.closed:
            return
        if self._conn.supports("session/close"):
            with suppress(ResourceNotFound):  # an older agent's answer for an unknown or closed session (ACP2-074)
                request = CloseSessionRequest(session_id=self._session_id)
                await self._conn.rpc_request("session/close", request, _CLOSE, timeout)
        elif any(p.status in OPEN_PROMPT_STATES for p in track.prompts):
            # A v1 agent without session/close: stop the session's work, then forget it locally.
            await self._conn.rpc_notify("session/cancel", CancelSessionNotification(session_id=self._session_id))
        track.closed = True
        self._conn.interactions.cancel(self._session_id)
        self._conn.protocol.session_closed(self._session_id)


async def cancel_quietly(session: ActiveSession) -> None:
    with suppress(AcpError):  # closed meanwhile, or the connection ended: nothing left to stop
        await session.cancel_active_work()
