"""Protocol version 2: the model is the wire, so this adapter only passes calls through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from ..codec import decoder
from ..rpc import PendingRequest
from ..schema import unstable as mu
from ..schema.types import (
    CompleteElicitationNotification,
    ContentBlock,
    CreateElicitationRequest,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
)
from .base import AUTH_STATUS_ROUTES, ClientSide, PromptExchange, ProtocolAdapter
from .routes import Route, Target
from .usage_quirk import SkippedUsage, skip_unknown_usage

__all__ = ["V2Protocol"]

T = TypeVar("T")
_PROMPT = decoder(PromptResponse)


class V2Protocol(ProtocolAdapter):
    version: ClassVar[int] = 2
    routes: ClassVar[tuple[Route, ...]] = (
        Route(
            "session/update",
            "notification",
            # The superset: nothing the unstable schema defines is lost; a usage update with a null count is
            # skipped (usage_quirk.py), so single updates go through the adapter's _on_update.
            skip_unknown_usage(decoder(mu.UpdateSessionNotification)),
            Target("adapter", "_on_update"),
            batch=Target("client", "receive_updates"),
        ),
        Route(
            "session/request_permission",
            "request",
            decoder(RequestPermissionRequest),
            Target("client", "decide_permission"),
        ),
        Route(
            "elicitation/create", "request", decoder(CreateElicitationRequest), Target("client", "decide_elicitation")
        ),
        Route(
            "elicitation/complete",
            "notification",
            decoder(CompleteElicitationNotification),
            Target("client", "elicitation_complete"),
            when="elicitation_complete",
        ),
        *AUTH_STATUS_ROUTES,
    )

    def __init__(self, rpc: Any, initialize_response: Any, record: Any) -> None:
        super().__init__(rpc, initialize_response, record)
        self.session_close_hooks: list[Callable[[str], None]] = []
        """Called with a session's id when it is closed here (the client's built-in MCP servers end with it)."""

    def request(self, method: str, params: Any, decode: Callable[[bytes], T]) -> PendingRequest[T]:
        return self.rpc.request(method, params, decode=decode)

    async def notify(self, method: str, params: Any) -> None:
        await self.rpc.notify(method, params)

    def session_closed(self, session_id: str) -> None:
        for hook in self.session_close_hooks:
            hook(session_id)

    def prompt(self, session_id: str, blocks: Sequence[ContentBlock]) -> PromptExchange:
        params = PromptRequest(session_id=session_id, prompt=list(blocks))
        return PromptExchange(self.rpc.request("session/prompt", params, decode=_PROMPT))

    _client: ClientSide | None = None

    def install(self, client: ClientSide) -> None:
        self._client = client
        super().install(client)

    def _on_update(self, note: mu.UpdateSessionNotification | SkippedUsage) -> Any:
        """One update for the client. A run of updates decoded in one pass goes to ``receive_updates`` directly:
        only a frame that failed that pass comes here, so only here can it be skipped (usage_quirk.py)."""
        if isinstance(note, SkippedUsage):
            note.report(self.rpc.peer_log)
            return None
        if self._client is None:
            return None
        return self._client.receive_update(note)
