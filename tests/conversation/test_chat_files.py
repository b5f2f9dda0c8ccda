"""``ChatFile``: the files a turn's agent wrote (issue 21).

Fold level: updates go through ``Conversation._on_note`` into a started turn, exactly as the connection delivers
them, and the turn's events are read back; then the reference agent's ``/edit`` scenario end to end. The v1 side
(``fs/write_text_file`` through the client) is in tests/interop/test_v1_files.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.agent.scenarios import EDIT_DIR, EDITS, LOCKED
from acp_session import ClientBuilder
from acp_session.conversation import (
    ChatDone,
    ChatEvent,
    ChatFile,
    ChatResponse,
    ChatToolEnd,
    ChatTurn,
    Conversation,
)
from acp_session.conversation import turn as turn_module
from acp_session.schema import UpdateSessionNotification
from tests.conversation.wire import state, tool, tool_chunk

pytestmark = pytest.mark.anyio

V1_DIFF = "acpSession/v1Diff"
PATCH = {"format": "git_patch", "text": "diff --git a/r/a.txt b/r/a.txt\n"}


def diff(*changes: dict[str, Any], patch: Any = None, meta: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "diff", "changes": list(changes)}
    if patch is not None:
        out["patch"] = patch
    if meta is not None:
        out["_meta"] = meta
    return out


def v1_meta(path: str, new: str, old: str | None = None) -> dict[str, Any]:
    return {V1_DIFF: {"path": path, "oldText": old, "newText": new}}


async def run_turn(updates: list[Any], *, mode: str = "iterate", between: Any = None) -> tuple[list[Any], ChatTurn]:
    """Feed ``updates`` (then an idle end_turn) to a started turn; its events (iterated) and the turn.

    ``between`` is called after the update at that index: ``(index, conversation)``."""
    conversation = Conversation(max_history_size=0)
    conversation.state.session_id = "s1"
    turn = ChatTurn()
    conversation._start(turn, "u1")
    for index, item in enumerate([state("running"), *updates, state("idle", stopReason="end_turn")]):
        conversation._on_note(UpdateSessionNotification(session_id="s1", update=item))
        if between is not None:
            between(index - 1, conversation)
    assert turn.finished
    if mode == "await":
        await turn
        return [], turn
    with anyio.fail_after(5):
        events = [event async for event in turn]
    return events, turn


def files(events: list[ChatEvent]) -> list[ChatFile]:
    return [event for event in events if isinstance(event, ChatFile)]


def tags(events: list[ChatEvent]) -> list[str]:
    """``tool_end:<id>:<status>`` / ``file:<path>`` / the kind, for checking the order."""
    out: list[str] = []
    for event in events:
        if isinstance(event, ChatToolEnd):
            out.append(f"tool_end:{event.tool_call.tool_call_id}:{event.status}")
        elif isinstance(event, ChatFile):
            out.append(f"file:{event.path}")
        elif event.kind not in ("tool_update",):
            out.append(event.kind)
    return out


def response_of(events: list[ChatEvent]) -> ChatResponse:
    done = events[-1]
    assert isinstance(done, ChatDone)
    return done.response


async def test_a_completed_tool_call_gives_one_file_per_path_after_its_end_and_before_done() -> None:
    two = diff(
        {"operation": "add", "path": "/r/a.txt", "mimeType": "text/plain"},
        {"operation": "modify", "path": "/r/b.md", "mimeType": "text/markdown"},
        patch=PATCH,
    )
    events, _ = await run_turn(
        [
            tool("t1", title="edit", kind="edit", status="in_progress"),
            tool_chunk("t1", two),
            tool("t1", status="completed"),
            tool("t2", status="in_progress"),
            tool("t2", status="completed"),  # no diffs: no files
        ]
    )
    assert tags(events) == [
        "start",
        "tool_begin",
        "tool_end:t1:completed",
        "file:/r/a.txt",
        "file:/r/b.md",
        "tool_begin",
        "tool_end:t2:completed",
        "done",
    ]
    a, b = files(events)
    assert a == ChatFile("/r/a.txt", None, "t1", "text/plain", "add", None, PATCH["text"], "tool_call")
    assert b == ChatFile("/r/b.md", None, "t1", "text/markdown", "modify", None, PATCH["text"], "tool_call")
    assert a.kind == "file" and not a.deleted
    response = response_of(events)
    assert response.files == [a, b]
    assert response.file_paths == ["/r/a.txt", "/r/b.md"]


@pytest.mark.parametrize("final", ["failed", "cancelled"])
async def test_failed_and_cancelled_tool_calls_give_no_file(final: str) -> None:
    events, _ = await run_turn(
        [
            tool("t1", status="in_progress", content=[diff({"operation": "modify", "path": "/r/a.txt"})]),
            tool("t1", status=final),
            tool("t1", status="completed"),  # a late "completed" after the end changes nothing
        ]
    )
    assert tags(events) == ["start", "tool_begin", f"tool_end:t1:{final}", "done"]
    assert response_of(events).files == []


async def test_a_tool_call_unfinished_at_the_end_of_the_turn_or_cancelled_locally_gives_no_file() -> None:
    edit = [diff({"operation": "modify", "path": "/r/a.txt"})]

    def cancel_t2(index: int, conversation: Conversation) -> None:
        if index == 1:
            for event in conversation.state.mark_cancelled(["t2"]):  # what Conversation.cancel() does
                conversation._route(event)

    events, _ = await run_turn(
        [tool("t1", status="in_progress", content=edit), tool("t2", status="in_progress", content=edit)],
        between=cancel_t2,
    )
    assert [t for t in tags(events) if t.startswith(("tool_end", "file"))] == [
        "tool_end:t2:cancelled",
        "tool_end:t1:in_progress",
    ]


async def test_the_new_text_comes_from_a_v1_diff_and_a_path_is_reported_once_per_tool_call() -> None:
    events, _ = await run_turn(
        [
            tool(
                "t1",
                status="completed",
                content=[
                    diff({"operation": "add", "path": "/r/a.txt"}, meta=v1_meta("/r/a.txt", "first")),
                    diff({"operation": "modify", "path": "/r/b.txt"}, meta=v1_meta("/r/other.txt", "not b's")),
                    diff({"operation": "modify", "path": "/r/a.txt"}, meta=v1_meta("/r/a.txt", "second", "first")),
                ],
            ),
            tool("t2", status="completed", content=[diff({"operation": "modify", "path": "/r/a.txt"})]),
        ]
    )
    got = [(f.path, f.text, f.tool_call_id, f.operation) for f in files(events)]
    assert got == [
        ("/r/a.txt", "second", "t1", "modify"),  # where it first appeared, as last changed
        ("/r/b.txt", None, "t1", "modify"),  # the v1 value names another path: no text
        ("/r/a.txt", None, "t2", "modify"),  # another tool call: reported again
    ]
    assert response_of(events).file_paths == ["/r/a.txt", "/r/b.txt"]


async def test_deletes_moves_copies_and_unknown_changes() -> None:
    events, _ = await run_turn(
        [
            tool(
                "t1",
                status="completed",
                content=[
                    diff(
                        {"operation": "delete", "path": "/r/gone.txt", "mimeType": "text/plain"},
                        {"operation": "move", "oldPath": "/r/old.py", "path": "/r/new.py"},
                        {"operation": "copy", "oldPath": "/r/tpl.py", "path": "/r/copy.py"},
                        {"operation": "_chmod", "path": "/r/run.sh", "mode": "755"},
                        {"operation": "_nopath"},
                    )
                ],
            )
        ]
    )
    got = [(f.path, f.operation, f.old_path, f.text, f.deleted, f.mime_type) for f in files(events)]
    assert got == [
        ("/r/gone.txt", "delete", None, None, True, "text/plain"),
        ("/r/new.py", "move", "/r/old.py", None, False, None),
        ("/r/copy.py", "copy", "/r/tpl.py", None, False, None),
        ("/r/run.sh", "_chmod", None, None, False, None),
    ]


async def test_a_deleted_file_has_no_text_even_from_a_v1_value() -> None:
    events, _ = await run_turn(
        [
            tool(
                "t1",
                status="completed",
                content=[diff({"operation": "delete", "path": "/r/a.txt"}, meta=v1_meta("/r/a.txt", "stale"))],
            )
        ]
    )
    (gone,) = files(events)
    assert gone.deleted and gone.text is None


async def test_writes_through_the_client_go_to_the_current_turn_in_order() -> None:
    def write(index: int, conversation: Conversation) -> None:
        if index == 0:
            conversation._on_file_written("/r/w.txt", "written")

    events, _ = await run_turn(
        [
            tool("t1", status="in_progress"),
            tool("t1", status="completed", content=[diff({"operation": "add", "path": "/r/w.txt"})]),
        ],
        between=write,
    )
    assert tags(events) == ["start", "tool_begin", "file:/r/w.txt", "tool_end:t1:completed", "file:/r/w.txt", "done"]
    written, reported = files(events)
    assert written == ChatFile("/r/w.txt", "written", None, None, "write", None, None, "fs_write")
    assert (reported.source, reported.tool_call_id, reported.text) == ("tool_call", "t1", None)
    assert response_of(events).file_paths == ["/r/w.txt"]


async def test_a_write_while_no_turn_runs_is_not_reported() -> None:
    conversation = Conversation(max_history_size=0)
    conversation.state.session_id = "s1"
    conversation._on_file_written("/r/w.txt", "nobody's")  # nothing to attach it to, nothing raised
    assert conversation._receiver is None and not conversation._segments


async def test_an_awaited_turn_lists_its_files_too() -> None:
    _, turn = await run_turn(
        [tool("t1", status="completed", content=[diff({"operation": "add", "path": "/r/a.txt"})])], mode="await"
    )
    assert [f.path for f in turn.response.files] == ["/r/a.txt"]


def test_the_v1_meta_key_is_the_adapters() -> None:
    from acp_session.protocol.v1.convert import V1_DIFF_META

    assert turn_module.V1_DIFF_META == V1_DIFF_META == V1_DIFF


# -- the reference agent's /edit ----------------------------------------------------------------------------------

REFERENCE = [sys.executable, "-m", "acp_conformance.agent"]


async def test_reference_agent_edit_two_files_and_a_failed_edit(tmp_path: Path) -> None:
    directory = tmp_path / EDIT_DIR
    expected = {str(directory / name): (mime, text) for name, mime, text in EDITS}
    with anyio.fail_after(20):
        async with ClientBuilder("chat-files", "1.0").spawn(REFERENCE) as client:
            conversation = await client.start_conversation(str(tmp_path))
            events = [event async for event in conversation.chat("/edit")]
            ends = [e for e in events if isinstance(e, ChatToolEnd)]
            assert [e.status for e in ends] == ["completed", "failed"]
            written = files(events)
            assert [f.path for f in written] == list(expected)
            for file in written:
                mime, text = expected[file.path]
                assert (file.mime_type, file.operation, file.source) == (mime, "add", "tool_call")
                assert file.tool_call_id == ends[0].tool_call.tool_call_id
                assert file.text is None  # a v2 diff carries no new text: the file is read from disk
                assert Path(file.path).read_text() == text
                assert file.patch is not None and f"+{text.splitlines()[0]}" in file.patch
            # After the completed tool call's end, before the failed one and before ChatDone.
            positions = [events.index(f) for f in written]
            assert events.index(ends[0]) < min(positions) and max(positions) < events.index(ends[1])
            assert isinstance(events[-1], ChatDone)
            assert events[-1].response.files == written
            # The failed edit of locked.txt reported a diff, but gave no file and wrote nothing.
            assert ends[1].tool_call.diffs and not (directory / LOCKED).exists()

            again = await conversation.chat_to_completion("/edit")
            assert again.file_paths == list(expected)
            assert [f.operation for f in again.files] == ["modify", "modify"]
            assert all(f.tool_call_id == again.tool_calls[0].tool_call_id for f in again.files)
