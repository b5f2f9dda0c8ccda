"""What ``ClientConnection.start_conversation`` calls to open a ``Conversation``: installed by the package facade
(``acp_session/__init__.py``, above the client and the conversation layer), held here, below both, so that the
facade installs it without importing the client (the facade is lazy: ``import acp_session.rpc`` pays for no client).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["ConversationOpener", "conversation_opener", "set_conversation_opener"]

ConversationOpener = Callable[..., Awaitable[Any]]
_opener: list[ConversationOpener] = []


def set_conversation_opener(opener: ConversationOpener) -> None:
    """Install what ``ClientConnection.start_conversation`` calls: ``Conversation.open``."""
    _opener[:] = [opener]


def conversation_opener() -> ConversationOpener | None:
    """The installed opener, or None (only if the facade was never imported, which Python's import system rules
    out: a submodule's parent package is imported first)."""
    return _opener[0] if _opener else None
