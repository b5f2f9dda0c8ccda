"""Protocol versions: one adapter per version between the model (the v2 types) and that version's wire."""

from .base import ClientSide, PromptExchange, ProtocolAdapter
from .negotiate import SUPPORTED_VERSIONS, negotiate
from .v1.adapter import V1Protocol
from .v2 import V2Protocol

__all__ = [
    "SUPPORTED_VERSIONS",
    "ClientSide",
    "PromptExchange",
    "ProtocolAdapter",
    "V1Protocol",
    "V2Protocol",
    "negotiate",
]
