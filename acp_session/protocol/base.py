"""The seam between the client and one protocol version's wire.

Everything above this layer (``ClientConnection``, ``ActiveSession``, ``Conversation``) sees one model: the
v2 generated types. A ``ProtocolAdapter`` owns one version's wire: which method a model call becomes, how
params and results map, which incoming methods exist and how they reach the client, and what has to be
synthesised. Negotiation picks the adapter once, at ``initialize``; nothing above it branches on the version.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ..codec import decoder
from ..rpc import Connection, PendingRequest, json_decode
from ..schema import unstable as mu
from ..schema.types import (
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    InitializeResponse,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    UpdateSessionNotification,
)
from .capabilities import method_offered
from .routes import ClientOffer, Route, Target, install_routes

if TYPE_CHECKING:
    from ..providers import FileSystemProvider, TerminalProvider

__all__ = [
    "AUTH_STATUS_ROUTES",
    "LAST_STOP_REASON_META",
    "V1_DIFF_META",
    "ClientSide",
    "PromptExchange",
    "ProtocolAdapter",
]

T = TypeVar("T")

V1_DIFF_META = "acpSession/v1Diff"
"""``_meta`` key under which a diff converted from v1 keeps the original ``path`` / ``oldText`` / ``newText``
(v1's ``newText`` is the file's whole new text, which ``ChatFile`` reports). Here, not in ``protocol/v1/``, so
that the conversation layer reads it without loading the v1 adapter."""

LAST_STOP_REASON_META = "acpSession/lastStopReason"
"""``_meta`` key of a v1 ``session/load`` answer: the stop reason of the session's last turn, which had ended when
the answer was sent. v1 tells a turn's stop reason only in its ``session/prompt`` answer, which is lost with the
connection that asked; an agent that keeps its sessions across connections (``acp-reference-agent --listen``)
says it here, so a turn cut by a reconnect ends with it (``conversation/recovery.py``)."""


class ClientSide(Protocol):
    """What an adapter hands incoming traffic to (``ClientConnection`` implements it), in model types."""

    def receive_update(self, note: UpdateSessionNotification) -> Any: ...

    def receive_updates(self, notes: list[UpdateSessionNotification]) -> Any: ...

    def deliver_synthetic(self, note: UpdateSessionNotification) -> None: ...

    def auth_status_changed(self, note: mu.AuthStatusUpdateNotification) -> Any: ...

    def ext_auth_status_changed(self, params: Any) -> Any: ...

    def run_soon(self, fn: Callable[[Any], Any], arg: Any) -> None: ...

    def file_written(self, session_id: str, path: str, content: str) -> None: ...

    async def decide_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse: ...

    async def decide_elicitation(self, request: CreateElicitationRequest) -> CreateElicitationResponse: ...

    @property
    def offer(self) -> ClientOffer:
        """What the client offers: the conditions of the adapters' routes."""
        ...

    @property
    def elicitation_complete(self) -> Callable[[Any], Any] | None: ...

    @property
    def file_system(self) -> FileSystemProvider | None: ...

    @property
    def terminals(self) -> TerminalProvider | None: ...


AUTH_STATUS_ROUTES: tuple[Route, ...] = (
    Route(
        "auth/status_update",
        "notification",
        decoder(mu.AuthStatusUpdateNotification),
        Target("client", "auth_status_changed"),
    ),
    Route(  # the extension real agents push (``{"authStatus": {"kind", "label", ...}}``), read as plain JSON
        "_auth/status_update",
        "notification",
        json_decode,
        Target("client", "ext_auth_status_changed"),
    ),
)
"""Preview: the agent's auth state changes, the same shapes in both versions."""


class PromptExchange:
    """One prompt as the negotiated version sends it.

    ``request`` resolves to the model's ``PromptResponse`` (the accepted user message's id).
    ``message_id`` is that id when the version knows it before the answer (v1 assigns it locally).
    ``begin()`` runs once the prompt is tracked and ``end()`` once its answer was settled; v1 reports
    the user message and the running state in ``begin`` and the idle state with the stop reason in
    ``end``, which v2 agents report themselves.
    """

    __slots__ = ("_begin", "_end", "message_id", "request")

    def __init__(
        self,
        request: PendingRequest[PromptResponse],
        message_id: str | None = None,
        begin: Callable[[], None] | None = None,
        end: Callable[[], None] | None = None,
    ) -> None:
        self.request = request
        self.message_id = message_id
        self._begin = begin
        self._end = end

    def begin(self) -> None:
        if self._begin is not None:
            self._begin()

    def end(self) -> None:
        if self._end is not None:
            self._end()


class ProtocolAdapter(ABC):
    """One protocol version's wire, behind the model the client speaks."""

    version: ClassVar[int]
    routes: ClassVar[tuple[Route, ...]]
    """This version's incoming methods (``routes.Route``): ``install`` registers those the client's offer meets."""
    mcp_transports: frozenset[str] = frozenset()
    """The MCP server transports the agent advertised (``stdio``, ``http``, ``sse``, ``acp``; set at ``initialize``)."""
    narrow_offer: bool = False
    """The agent answered 1 to the v2 offer and refused the v1 offer sent after it (``negotiate.py``): it has seen
    none of v1's file-system and terminal capabilities, so their methods are not served."""

    def __init__(self, rpc: Connection, initialize_response: InitializeResponse, record: mu.InitializeResponse) -> None:
        self.rpc = rpc
        self.initialize_response = initialize_response
        """The agent's ``initialize`` answer in the model's shape."""
        self.capability_record = record
        """The same answer in the unstable schema's types (``capabilities.py``): every capability kept, the
        Preview ones (fork, title, system prompt, auth status, providers, ...) included."""

    @abstractmethod
    def request(self, method: str, params: Any, decode: Callable[[bytes], T]) -> PendingRequest[T]:
        """Send the model's ``method`` with model ``params``; the handle resolves to ``decode``'s model type.

        Raises ``CapabilityNotSupported`` when the agent cannot do it in this version.
        """

    @abstractmethod
    async def notify(self, method: str, params: Any) -> None:
        """Send the model's notification ``method``."""

    def supports(self, method: str) -> bool:
        """Whether the agent offers ``method`` (a model method name) in this version: read from the capability
        record (baseline methods with sessions, the others when their capability is advertised)."""
        return method_offered(self.capability_record, method)

    @abstractmethod
    def prompt(self, session_id: str, blocks: Sequence[ContentBlock]) -> PromptExchange:
        """Send ``session/prompt``."""

    def install(self, client: ClientSide) -> None:
        """Register this version's incoming methods on the rpc connection: the rows of ``routes`` whose
        condition the client's offer meets (with ``narrow_offer``, none of the file-system and terminal ones)."""
        offer = client.offer
        if self.narrow_offer:
            offer = replace(offer, file_system=False, read_files=False, write_files=False, terminals=False)
        install_routes(self.rpc, self.routes, self, client, offer)

    def session_opened(self, session_id: str, cwd: str, additional_directories: Sequence[str]) -> None:  # noqa: B027
        """A session was created or resumed on this connection (its roots, for the client-side providers)."""

    def session_closed(self, session_id: str) -> None:  # noqa: B027
        """A session was closed on this connection."""
