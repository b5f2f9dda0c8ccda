"""Protocol version 2: the model is the wire, so this adapter only passes calls through."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from ..codec import decoder
from ..rpc import PendingRequest
from ..schema.types import (
    CompleteElicitationNotification,
    ContentBlock,
    CreateElicitationRequest,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    UpdateSessionNotification,
)
from .base import ClientSide, PromptExchange, ProtocolAdapter

__all__ = ["V2Protocol"]

T = TypeVar("T")
_PROMPT = decoder(PromptResponse)

# Methods a v2 agent that advertises ``capabilities.session`` must offer (the baseline).
_BASELINE = frozenset(
    {"session/new", "session/list", "session/resume", "session/close", "session/prompt", "session/cancel"}
)


class V2Protocol(ProtocolAdapter):
    version: ClassVar[int] = 2

    def request(self, method: str, params: Any, decode: Callable[[bytes], T]) -> PendingRequest[T]:
        return self.rpc.request(method, params, decode=decode)

    async def notify(self, method: str, params: Any) -> None:
        await self.rpc.notify(method, params)

    def supports(self, method: str) -> bool:
        return method in _BASELINE or not method.startswith("session/")

    def prompt(self, session_id: str, blocks: Sequence[ContentBlock]) -> PromptExchange:
        params = PromptRequest(session_id=session_id, prompt=list(blocks))
        return PromptExchange(self.rpc.request("session/prompt", params, decode=_PROMPT))

    def install(self, client: ClientSide) -> None:
        rpc = self.rpc
        rpc.on_notification(
            "session/update", client._on_update, decoder(UpdateSessionNotification), batch=client._on_updates
        )
        rpc.on_request("session/request_permission", client._on_permission, decoder(RequestPermissionRequest))
        rpc.on_request("elicitation/create", client._on_elicitation, decoder(CreateElicitationRequest))
        complete = client.elicitation_complete
        if complete is not None:
            rpc.on_notification("elicitation/complete", complete, decoder(CompleteElicitationNotification))
