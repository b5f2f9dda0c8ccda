"""docs/conversation.md maps every method of the seed documents to this library: each row is tested or explained.

The two tables under "The seed's API, method by method" are parsed: every row that is not "not applicable" is
listed in COVERED with the tests that exercise it (they must exist), and every API it names must exist.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation, SessionClosed
from acp_session import conversation as conversation_module
from acp_session.conversation import SessionState, Step, prompt_content
from tests.conversation.wire import state, unstable_update
from tests.schema_source import REPO

DOC = REPO / "docs" / "conversation.md"
SEEDS = REPO.parent / "shared" / "spec" / "seeds"

CE2E = "tests/conversation/test_chat_e2e.py"
HIST = "tests/conversation/test_chat_history.py"
STREAMS = "tests/conversation/test_streams.py"
SE2E = "tests/conversation/test_streams_e2e.py"
DISC = "tests/conversation/test_disconnect.py"
SELF = "tests/conversation/test_seed_api.py"

COVERED: dict[str, list[str]] = {
    # The Conversation document.
    "`Conversation::new(conn, max_history_size)`": [
        f"{HIST}::test_history_trimming_keeps_turn_indices_right",
        f"{SELF}::test_a_conversation_built_on_a_session_handle",
    ],
    "`Agent::builder()...start()`, `agent.conversation()`, `agent.stop()`": [
        f"{DISC}::test_an_owned_connection_is_closed_by_disconnect",
        f"{DISC}::test_leaving_the_spawn_block_disconnects_even_on_an_error",
    ],
    "`chat(prompt)`": [f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"],
    "`chat_to_completion(prompt)`": [f"{CE2E}::test_chat_to_completion_tools_and_progress"],
    "`send(prompt)`": [f"{SE2E}::test_send_registers_the_turn_and_wait_for_idle_ends_it"],
    "`receive_steps()`": [
        f"{STREAMS}::test_steps_equal_the_fold_events_whether_runs_take_the_fast_path_or_not",
        f"{SE2E}::test_background_work_between_turns_reaches_receive_chunks",
        f"{SE2E}::test_replays_through_receive_steps_match_the_live_steps",
    ],
    "`receive_chunks()`": [
        f"{STREAMS}::test_chunks_keep_agent_text_thoughts_and_each_tool_call_once",
        f"{STREAMS}::test_a_replay_is_marked_and_is_no_chunk",
        f"{SE2E}::test_background_work_between_turns_reaches_receive_chunks",
        f"{SE2E}::test_two_consumers_at_different_speeds",
    ],
    "`connection()`": [f"{DISC}::test_a_borrowed_connection_stays_open_for_the_callers_other_sessions"],
    "`conversation_id()`": [f"{DISC}::test_a_borrowed_connection_stays_open_for_the_callers_other_sessions"],
    "`is_idle()`": [f"{HIST}::test_wait_for_idle_follows_the_turn"],
    "`disconnect()`": [
        f"{DISC}::test_a_borrowed_connection_stays_open_for_the_callers_other_sessions",
        f"{DISC}::test_disconnect_during_a_turn_the_agent_cancels_it_and_a_held_prompt_is_withdrawn",
        f"{DISC}::test_an_owned_connection_is_closed_by_disconnect",
        f"{DISC}::test_a_v1_agent_without_session_close_is_forgotten_locally",
    ],
    "`history()`": [f"{HIST}::test_history_trimming_keeps_turn_indices_right"],
    "`turn_count()`": [f"{HIST}::test_history_trimming_keeps_turn_indices_right"],
    "`compaction_indices()`": [
        f"{STREAMS}::test_compaction_indices_beside_turn_start_indices_and_after_trimming",
        f"{SE2E}::test_compaction_indices_end_to_end",
    ],
    "`last_response()`": [f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"],
    "`total_usage()`": [f"{SELF}::test_usage_totals_through_the_conversation"],
    "`last_turn_usage()`": [f"{SELF}::test_usage_totals_through_the_conversation"],
    "`clear_history()`": [f"{HIST}::test_history_trimming_keeps_turn_indices_right"],
    "`wait_for_idle()`": [f"{HIST}::test_wait_for_idle_follows_the_turn"],
    "`Agent::chat_content(&Content)` (multimodal, slash commands)": [
        f"{CE2E}::test_prompt_content_is_checked_before_sending",
        "tests/client/test_sessions.py::test_prompt_is_sent_at_call_time_and_cleaned",
        "tests/conversation/test_chat_files.py::test_reference_agent_edit_two_files_and_a_failed_edit",
    ],
    "`ConversationState { steps, turn_start_indices, compaction_indices, cumulative_usage, turn_usage }`": [
        f"{STREAMS}::test_compaction_indices_beside_turn_start_indices_and_after_trimming",
        f"{SELF}::test_usage_totals_through_the_conversation",
    ],
    "`StreamChunk::{Thought, Text, ToolCall}`": [
        f"{STREAMS}::test_chunks_keep_agent_text_thoughts_and_each_tool_call_once"
    ],
    "`Step { id, step_index, type, source, target, status, content, content_delta, thinking, ... }`": [
        f"{STREAMS}::test_steps_equal_the_fold_events_whether_runs_take_the_fast_path_or_not",
        f"{STREAMS}::test_step_index_is_the_history_index_at_fold_time_and_trimming_shifts_it",
    ],
    # The ask() document.
    "`agent.start()`": [
        f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done",
        f"{DISC}::test_an_owned_connection_is_closed_by_disconnect",
    ],
    "`conversation.id`": [f"{DISC}::test_a_borrowed_connection_stays_open_for_the_callers_other_sessions"],
    "`ws.conversation(id)` (no network call)": [f"{HIST}::test_replay_is_idempotent_and_reconnect_continues"],
    "`await conversation.ask(message)`": [f"{CE2E}::test_awaiting_and_iterating_the_same_turn_raises"],
    "`for await (const e of conversation.ask(message))`": [
        f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"
    ],
    "ask once: sent when called; awaiting and iterating the same turn throws": [
        f"{CE2E}::test_awaiting_and_iterating_the_same_turn_raises",
        "tests/client/test_sessions.py::test_prompt_is_sent_at_call_time_and_cleaned",
    ],
    "event `start` (exactly once)": [f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"],
    "event `progress` (the whole step list, every time)": [f"{CE2E}::test_chat_to_completion_tools_and_progress"],
    "event `tool` (begins and ends, paired)": [f"{CE2E}::test_chat_to_completion_tools_and_progress"],
    "event `text` (fragments: append)": [f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"],
    "event `file`": ["tests/conversation/test_chat_files.py::test_reference_agent_edit_two_files_and_a_failed_edit"],
    "event `done` (the whole reply) or `error` (the stream ends)": [
        f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done",
        f"{CE2E}::test_agent_death_ends_the_turn_with_connection_closed",
    ],
    "attachment `{kind: 'image'}`": [f"{CE2E}::test_prompt_content_is_checked_before_sending"],
    "attachment `{kind: 'file'}` (written into the conversation's drive)": [
        f"{CE2E}::test_prompt_content_is_checked_before_sending"
    ],
    "your connection can drop: the work goes on; read `messages()` when you reconnect": [
        f"{HIST}::test_replay_is_idempotent_and_reconnect_continues",
        "tests/conversation/test_reconnect_subprocess.py::test_sigkill_mid_turn_restarts_resumes_and_the_next_turn_works",
        "tests/conversation/test_reconnect_subprocess.py::test_the_agent_lost_the_session_ends_the_turn_with_session_lost",
    ],
    "`conversation.messages()`, `[{ role, content, at }]`": [
        f"{CE2E}::test_streaming_turn_yields_fragments_and_one_done"
    ],
    "`agent.conversations()`": [
        "tests/client/test_sessions.py::test_list_sessions_walks_every_page_and_delete_is_idempotent"
    ],
    "two conversations share nothing": [
        "tests/conversation/test_batch_delivery.py::test_two_conversations_on_one_connection_share_interleaved_runs"
    ],
}

# What the seed's Conversation document names, so a row cannot silently go missing from the table.
SEED_METHODS = [
    "Conversation::new",
    "chat",
    "chat_to_completion",
    "send",
    "receive_steps",
    "receive_chunks",
    "connection",
    "conversation_id",
    "is_idle",
    "disconnect",
    "history",
    "turn_count",
    "compaction_indices",
    "last_response",
    "total_usage",
    "last_turn_usage",
    "clear_history",
    "wait_for_idle",
    "last_structured_output",
    "chat_content",
]


def rows() -> list[list[str]]:
    text = DOC.read_text()
    section = text[text.index("## The seed's API, method by method") :]
    out = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| seed ") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            assert len(cells) == 3, line
            out.append(cells)
    return out


def test_every_seed_method_has_a_row() -> None:
    firsts = " ".join(row[0] for row in rows())
    for name in SEED_METHODS:
        assert re.search(rf"`[^`]*\b{re.escape(name)}\(", firsts), name


def test_the_seed_documents_name_nothing_the_table_lacks() -> None:
    """Where the seed documents are at hand: every method name in the Conversation document's tables is a row."""
    seed = next((p for p in sorted(SEEDS.glob("*.txt")) if p.read_text().startswith("Conversation\n")), None)
    if seed is None:
        pytest.skip(f"the seed documents are not in {SEEDS}")
    named = set(re.findall(r"^(\w+)\(\S*\)\t", seed.read_text(), re.MULTILINE))
    assert named and named <= set(SEED_METHODS)


def test_every_row_is_tested_or_explained() -> None:
    table = rows()
    firsts = [row[0] for row in table]
    assert len(set(firsts)) == len(firsts)
    for first, here, why in table:
        if here == "not applicable":
            assert first not in COVERED and len(why) > 80, first
        else:
            assert first in COVERED, first
    assert set(COVERED) <= set(firsts), set(COVERED) - set(firsts)
    for tests in COVERED.values():
        for test in tests:
            path, name = test.split("::")
            assert re.search(rf"^(async )?def {name}\(", (REPO / path).read_text(), re.MULTILINE), test


ROOTS: dict[str, Any] = {
    "ClientBuilder": ClientBuilder,
    "client": ClientConnection,
    "conversation": Conversation,
    "Conversation": Conversation,
    "prompt_content": prompt_content,
    "state": SessionState,
}


def test_every_api_the_table_names_exists() -> None:
    """The first name in each "here" cell (and every ``x.y`` with a known root) resolves."""
    checked = 0
    for _, here, _ in rows():
        for code in re.findall(r"`([^`]+)`", here):
            code = code.removeprefix("await ").removeprefix("async for event in ")
            match = re.match(r"([A-Za-z_][\w.]*)", code)
            if match is None:
                continue
            parts = match.group(1).split(".")
            if parts[0] in ROOTS:
                target: Any = ROOTS[parts[0]]
                for part in parts[1:]:
                    target = getattr(target, part)
            else:
                assert len(parts) == 1, code
                homes = (Conversation, conversation_module, prompt_content, Step)  # the builders; a Step's `entry`
                found = [hasattr(home, parts[0]) for home in homes]
                assert any(found), code
            checked += 1
    assert checked > 40


# -- rows no other test covers through the Conversation itself ---------------------------------------------------


def idle_with_usage(total: int) -> Any:
    usage = {"totalTokens": total, "inputTokens": total - 1, "outputTokens": 1}
    return unstable_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "usage": usage})


def test_usage_totals_through_the_conversation() -> None:
    from acp_session.schema import UpdateSessionNotification

    made = Conversation(max_history_size=0)
    made.state.session_id = "s1"
    assert made.total_usage is None and made.last_turn_usage is None
    for item in [state("running"), idle_with_usage(10), state("running"), idle_with_usage(5)]:
        made._on_note(UpdateSessionNotification(session_id="s1", update=item))
    assert made.total_usage is not None and made.total_usage.total_tokens == 15
    assert made.last_turn_usage is not None and made.last_turn_usage.total_tokens == 5
    made.clear_history()
    assert made.total_usage is None and made.last_turn_usage is None


@pytest.mark.anyio
async def test_a_conversation_built_on_a_session_handle(tmp_path: Path) -> None:
    """``Conversation(session)``: the seed's ``Conversation::new(conn, ...)`` over a session opened by hand."""
    import anyio

    from tests.conversation.chat_support import chat_agent

    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            session = await client.new_session("/w")
            made = Conversation(session, max_history_size=5)
            assert made.max_history_size == 5 and made.conversation_id == session.session_id
            assert not made.owns_connection and made.connection is client
            assert (await made.chat_to_completion("stream 2")).text == "w0 w1 "
            await made.disconnect()
            with pytest.raises(SessionClosed):
                session.send_prompt("again")
