"""Protocol versions: one adapter per version between the model (the v2 types) and that version's wire."""

from typing import TYPE_CHECKING, Any

from .base import ClientSide, PromptExchange, ProtocolAdapter
from .negotiate import SUPPORTED_VERSIONS, negotiate
from .v2 import V2Protocol

if TYPE_CHECKING:
    from .v1.adapter import V1Protocol

__all__ = [
    "SUPPORTED_VERSIONS",
    "ClientSide",
    "PromptExchange",
    "ProtocolAdapter",
    "V1Protocol",
    "V2Protocol",
    "negotiate",
]


def __getattr__(name: str) -> Any:
    # The v1 adapter (and the v1 unstable types it reads) is imported when a v1 agent answers, not at start-up.
    if name == "V1Protocol":
        from .v1.adapter import V1Protocol

        return V1Protocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
