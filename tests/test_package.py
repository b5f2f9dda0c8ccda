"""The package's top level: every name in ``__all__`` is there, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import acp_session


def test_every_public_name_resolves() -> None:
    for name in acp_session.__all__:
        assert getattr(acp_session, name) is not None, name
    assert acp_session.Conversation.__module__ == "acp_session.conversation.conversation"


def test_the_conversation_layer_is_imported_on_first_use() -> None:
    """A client that only sends prompts and handles updates does not pay for the conversation layer at start-up
    (20 to 30 % of the import time); ``from acp_session import Conversation`` still works."""
    probe = (
        "import sys, acp_session\n"
        "before = 'acp_session.conversation' in sys.modules\n"
        "from acp_session import Conversation, SessionState\n"
        "print(before, 'acp_session.conversation' in sys.modules, Conversation.__name__, SessionState.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "True", "Conversation", "SessionState"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        acp_session.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
