"""acp-session: a typed, fast client for the Agent Client Protocol (ACP), versions 1 and 2 behind one API."""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .auth import AuthenticationRequired, LoginMethod
from .client import (
    PROTOCOL_VERSION,
    AgentView,
    Authentication,
    ClientBuilder,
    ClientConnection,
    ClientTools,
    ModelProviders,
    PermissionAnswer,
    PermissionDecision,
    PermissionHandler,
    PermissionPolicy,
    PermissionRule,
    Reconnection,
    ToolFacts,
)
from .client.active_session import ActiveSession
from .client.connection import set_conversation_opener
from .client_errors import CapabilityNotSupported, ProtocolVersionMismatch, SessionClosed
from .interactions import Interaction
from .session import TRACKED_UPDATES, BatchUpdateListener, Limits, SentRequest, TrackedPrompt

if TYPE_CHECKING:
    from .conversation import ChatResponse, ChatTurn, Conversation, SessionState

# The conversation layer is imported on first use: a client that only sends prompts and handles updates
# imports 20 to 30 % faster without it (``ClientConnection.start_conversation`` imports it too).
_CONVERSATION = frozenset({"ChatResponse", "ChatTurn", "Conversation", "SessionState"})


async def _open_conversation(client: ClientConnection, cwd: Any, **options: Any) -> Any:
    """``ClientConnection.start_conversation``: the conversation layer builds on the client, so the facade, above
    both, hands the client this opener instead of the client importing the layer above it."""
    from .conversation.conversation import Conversation

    return await Conversation.open(client, cwd, **options)


set_conversation_opener(_open_conversation)


def __getattr__(name: str) -> Any:
    if name in _CONVERSATION:
        from . import conversation

        value = getattr(conversation, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PROTOCOL_VERSION",
    "TRACKED_UPDATES",
    "ActiveSession",
    "AgentView",
    "Authentication",
    "AuthenticationRequired",
    "BatchUpdateListener",
    "CapabilityNotSupported",
    "ChatResponse",
    "ChatTurn",
    "ClientBuilder",
    "ClientConnection",
    "ClientTools",
    "Conversation",
    "Interaction",
    "Limits",
    "LoginMethod",
    "ModelProviders",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionHandler",
    "PermissionPolicy",
    "PermissionRule",
    "ProtocolVersionMismatch",
    "Reconnection",
    "SentRequest",
    "SessionClosed",
    "SessionState",
    "ToolFacts",
    "TrackedPrompt",
    "__version__",
]
