"""Subagent (child session) updates through ``acp-session serve``, with the reference agent's ``/subagent``: a client
that asked for them (``ClientBuilder.with_subagents``) sees the child live, a client that attaches after the turn
gets the child's history in the replay, and a client that did not ask gets none of them (nothing outside the pinned
v2 schema), only the parent's own updates; over Streamable HTTP and WebSocket, the host on the test's backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, Conversation
from acp_session.codec import to_builtins
from acp_session.schema.types import UpdateSessionNotification

from .conftest import Host

pytestmark = pytest.mark.anyio

SUBAGENT_KINDS = {"subagent_update", "session_message", "session_message_chunk"}
SUMMARY = "The subagent found 2 files."


class Seen(list[dict[str, Any]]):
    """Every ``session/update`` a client got, as JSON; ``until`` waits for one that matches."""

    def __init__(self) -> None:
        super().__init__()
        self._grew = anyio.Event()

    def add(self, note: UpdateSessionNotification) -> None:
        self.append(to_builtins(note))
        self._grew.set()
        self._grew = anyio.Event()

    async def until(self, match: Callable[[dict[str, Any]], bool]) -> None:
        while not any(match(note) for note in self):
            await self._grew.wait()


def _builder(subagents: bool, seen: Seen) -> ClientBuilder:
    builder = ClientBuilder("sub-editor", "1.0").with_subagents(subagents)
    builder.on_session_update(seen.add)
    return builder


def _ended(session_id: str) -> Callable[[dict[str, Any]], bool]:
    def match(note: dict[str, Any]) -> bool:
        update = note["update"]
        return note["sessionId"] == session_id and update.get("stopReason") == "end_turn"

    return match


def _child_of(conversation: Conversation) -> Any:
    assert len(conversation.subagents) == 1, conversation.subagents
    (child,) = conversation.subagents.values()
    assert child.title == "Explorer"
    texts = [getattr(entry, "text", "") for entry in child.history()]
    assert "Found 2 files." in texts, texts
    assert child.state.state == "idle"
    return child


def _child_ended(parent: str) -> Callable[[dict[str, Any]], bool]:
    """The child's own idle ``state_update`` (over HTTP the child's stream is its own: it may come after the
    parent's turn ended)."""

    def match(note: dict[str, Any]) -> bool:
        update = note["update"]
        return (
            note["sessionId"] != parent and update.get("sessionUpdate") == "state_update" and update["state"] == "idle"
        )

    return match


def _subagent_notes(seen: list[dict[str, Any]], parent: str) -> list[dict[str, Any]]:
    return [n for n in seen if n["sessionId"] != parent or n["update"].get("sessionUpdate") in SUBAGENT_KINDS]


@pytest.mark.parametrize("profile", ["http", "ws"])
async def test_subagents_live_on_replay_and_only_to_clients_that_asked(
    start_host: Callable[..., Host], tmp_path: Path, profile: str, anyio_backend: str
) -> None:
    host = start_host(backend=anyio_backend)
    url = host.url_for(profile)
    cwd = str(tmp_path)
    live, plain = Seen(), Seen()
    with anyio.fail_after(90):
        async with (
            _builder(True, live).connect_url(url) as asking,
            _builder(False, plain).connect_url(url) as other,
        ):
            conversation = await asking.start_conversation(cwd)
            session_id = conversation.session_id
            assert session_id is not None
            watching = await Conversation.resume(other, session_id, cwd, replay_from=None)
            reply = await conversation.chat_to_completion("/subagent")
            assert reply.stop_reason == "end_turn" and reply.text == SUMMARY
            await live.until(_child_ended(session_id))
            child = _child_of(conversation)
            assert any(n["sessionId"] == child.session_id for n in live)
            await plain.until(_ended(session_id))
            # The client that did not ask: the parent's turn, and nothing of the subagent.
            assert SUMMARY in [m.text for m in watching.messages()]
            assert not watching.subagents
            assert plain and not _subagent_notes(plain, session_id), _subagent_notes(plain, session_id)
        later, unasked = Seen(), Seen()
        async with _builder(True, later).connect_url(url) as client:
            resumed = await Conversation.resume(client, session_id, cwd)
            await later.until(_child_ended(session_id))
            assert _child_of(resumed).session_id == child.session_id
            assert any(n["sessionId"] == child.session_id for n in later)
            assert SUMMARY in [m.text for m in resumed.messages()]
        async with _builder(False, unasked).connect_url(url) as client:
            resumed = await Conversation.resume(client, session_id, cwd)
            assert not resumed.subagents
            assert SUMMARY in [m.text for m in resumed.messages()]
            assert unasked and not _subagent_notes(unasked, session_id)
    # The child is kept in its parent's log, not listed as a session of its own.
    async with ClientBuilder().connect_url(url) as client:
        listed = [info.session_id async for info in client.list_sessions()]
    assert listed == [session_id]
