"""acp-session: a typed, fast client for the Agent Client Protocol (ACP) version 2."""

__version__ = "0.1.0"

from .client import PROTOCOL_VERSION, ClientBuilder, ClientConnection
from .client_errors import CapabilityNotSupported, ProtocolVersionMismatch, SessionClosed
from .conversation import ChatResponse, ChatTurn, Conversation, SessionState
from .interactions import Interaction
from .session import TRACKED_UPDATES, ActiveSession, BatchUpdateListener, SentRequest, TrackedPrompt

__all__ = [
    "PROTOCOL_VERSION",
    "TRACKED_UPDATES",
    "ActiveSession",
    "BatchUpdateListener",
    "CapabilityNotSupported",
    "ChatResponse",
    "ChatTurn",
    "ClientBuilder",
    "ClientConnection",
    "Conversation",
    "Interaction",
    "ProtocolVersionMismatch",
    "SentRequest",
    "SessionClosed",
    "SessionState",
    "TrackedPrompt",
    "__version__",
]
