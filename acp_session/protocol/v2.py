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
from .base import AUTH_STATUS_ROUTES, PromptExchange, ProtocolAdapter
from .routes import Route, Target

__all__ = ["V2Protocol"]

T = TypeVar("T")
_PROMPT = decoder(PromptResponse)


class V2Protocol(ProtocolAdapter):
    version: ClassVar[int] = 2
    routes: ClassVar[tuple[Route, ...]] = (
        Route(
            "session/update",
            "notification",
            decoder(mu.UpdateSessionNotification),  # the superset: nothing the unstable schema defines is lost
            Target("client", "receive_update"),
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

    def request(self, method: str, params: Any, decode: Callable[[bytes], T]) -> PendingRequest[T]:
        return self.rpc.request(method, params, decode=decode)

    async def notify(self, method: str, params: Any) -> None:
        await self.rpc.notify(method, params)

    def prompt(self, session_id: str, blocks: Sequence[ContentBlock]) -> PromptExchange:
        params = PromptRequest(session_id=session_id, prompt=list(blocks))
        return PromptExchange(self.rpc.request("session/prompt", params, decode=_PROMPT))
