"""Property tests: the fold against a small reference model, and replay idempotence."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session import codec
from acp_session.conversation import Message, SessionState, ToolCall
from acp_session.schema import Content, ResumeSessionResponse, TextContent

from .wire import OMIT, chunk, fold, joined, state, text, tool, tool_chunk, unstable_update, update, upsert

ROLES = {"user_message": "user", "agent_message": "agent", "agent_thought": "thought"}
IDS = st.sampled_from(["a", "b", "c"])
KINDS = st.sampled_from(list(ROLES))
WORDS = st.text(alphabet="xyz ", min_size=0, max_size=3)
META = st.one_of(
    st.just(OMIT),
    st.none(),
    st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), st.one_of(st.none(), st.integers(0, 3)), max_size=3),
)
CONTENT = st.one_of(st.just(OMIT), st.none(), st.lists(WORDS, max_size=3))

MESSAGE_OP = st.one_of(
    st.tuples(st.just("chunk"), KINDS, IDS, WORDS, META),
    st.tuples(st.just("upsert"), KINDS, IDS, CONTENT, META),
)


def patch(stored: dict[str, Any] | None, meta: Any) -> dict[str, Any] | None:
    if meta is OMIT:
        return stored
    if meta is None:
        return None
    merged = dict(stored or {})
    for key, value in meta.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@settings(max_examples=300, deadline=None)
@given(st.lists(MESSAGE_OP, max_size=40))
def test_messages_match_reference_model(ops: list[tuple[Any, ...]]) -> None:
    """Any interleaving of upserts and chunks folds like the plain reference model below."""
    session = SessionState()
    model: dict[tuple[str, str], tuple[list[str], dict[str, Any] | None]] = {}
    order: list[tuple[str, str]] = []
    for op, kind, message_id, payload, meta in ops:
        key = (ROLES[kind], message_id)
        if key not in model:
            model[key] = ([], None)
            order.append(key)
        texts, stored_meta = model[key]
        if op == "chunk":
            session.apply(chunk(message_id, payload, kind=kind, meta=meta))
            # Plain text chunks join the last block (chunk _meta is chunk-scoped: stored meta unchanged).
            texts = joined(texts, payload)
        else:
            session.apply(upsert(message_id, payload, kind=kind, meta=meta))
            if payload is not OMIT:
                texts = list(payload or [])
            stored_meta = patch(stored_meta, meta)
        model[key] = (texts, stored_meta)
    timeline = [entry for entry in session.timeline if isinstance(entry, Message)]
    assert [(entry.role, entry.message_id) for entry in timeline] == order
    for entry in timeline:
        texts, stored_meta = model[(entry.role, entry.message_id)]
        assert [block.text for block in entry.content if isinstance(block, TextContent)] == texts
        assert entry.text == "".join(texts)
        assert entry.meta == stored_meta


TOOL_OP = st.one_of(
    st.tuples(st.just("chunk"), IDS, WORDS),
    st.tuples(
        st.just("update"),
        IDS,
        st.fixed_dictionaries(
            {},
            optional={
                "status": st.one_of(st.none(), st.sampled_from(["in_progress", "completed", "_custom"])),
                "title": st.one_of(st.none(), WORDS),
                "content": st.one_of(st.none(), st.lists(WORDS, max_size=2)),
            },
        ),
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(TOOL_OP, max_size=30))
def test_tool_calls_match_reference_model(ops: list[tuple[Any, ...]]) -> None:
    session = SessionState()
    model: dict[str, dict[str, Any]] = {}
    for op, call_id, payload in ops:
        current = model.setdefault(call_id, {"status": "pending", "title": None, "content": []})
        if op == "chunk":
            session.apply(tool_chunk(call_id, {"type": "content", "content": text(payload)}))
            current["content"] = [*current["content"], payload]
            continue
        fields = dict(payload)
        if "content" in fields:
            current["content"] = list(fields["content"] or [])
            fields["content"] = [{"type": "content", "content": text(word)} for word in fields["content"] or []]
        if "status" in fields:
            current["status"] = fields["status"] or "pending"
        if "title" in fields:
            current["title"] = fields["title"]
        session.apply(tool(call_id, **fields))
    assert [entry.tool_call_id for entry in session.timeline if isinstance(entry, ToolCall)] == list(model)
    for call_id, expected in model.items():
        call = session.tool_calls[call_id]
        words = [item.content.text for item in call.content if isinstance(item, Content)]  # type: ignore[union-attr]
        assert (call.status, call.title, words) == (expected["status"], expected["title"], expected["content"])


def _b64(word: str) -> str:
    return base64.b64encode(word.encode()).decode()


ANY_UPDATE = st.one_of(
    MESSAGE_OP.map(
        lambda op: (
            chunk(op[2], op[3], kind=op[1], meta=op[4])
            if op[0] == "chunk"
            else upsert(op[2], op[3], kind=op[1], meta=op[4])
        )
    ),
    st.tuples(IDS, WORDS).map(lambda op: tool_chunk(op[0], {"type": "content", "content": text(op[1])})),
    st.tuples(IDS, st.sampled_from(["in_progress", "completed", None])).map(lambda op: tool(op[0], status=op[1])),
    st.sampled_from(["running", "idle", "requires_action", "_custom"]).map(lambda value: state(value)),
    st.tuples(IDS, WORDS).map(
        lambda op: update({"sessionUpdate": "terminal_output_chunk", "terminalId": op[0], "data": _b64(op[1])})
    ),
    st.tuples(IDS, WORDS).map(
        lambda op: update({"sessionUpdate": "compaction_summary_chunk", "compactionId": op[0], "content": text(op[1])})
    ),
    st.tuples(IDS, WORDS).map(
        lambda op: update(
            {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": op[0], "content": op[1]}}
        )
    ),
    IDS.map(lambda plan_id: unstable_update({"sessionUpdate": "plan_removed", "planId": plan_id})),
    st.integers(0, 2).map(lambda n: update({"sessionUpdate": "_marker", "n": n})),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_UPDATE, max_size=40))
def test_replay_onto_live_state_gives_identical_state(updates: list[Any]) -> None:
    """Folding the same history again inside a replaying resume leaves the snapshot unchanged."""
    live = fold(updates)
    before = live.to_snapshot()
    live.begin_resume(replay=True)
    for item in updates:
        live.apply(item)
    live.apply_resume_response(codec.convert({}, ResumeSessionResponse))
    assert live.to_snapshot() == before


def test_replay_of_a_removed_then_recreated_plan_keeps_entries_it_jumped_over() -> None:
    """Found by the property above: replay matches the first plan to the re-created one further on; once that
    plan is removed again, the entries between (an unknown update here) are still matched, not duplicated."""
    updates = [
        chunk("a", "", kind="user_message"),
        unstable_update({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": ""}}),
        unstable_update({"sessionUpdate": "plan_removed", "planId": "p"}),
        update({"sessionUpdate": "_marker", "n": 0}),
        unstable_update({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": ""}}),
    ]
    live = fold(updates)
    before = live.to_snapshot()
    assert [entry["entity"] for entry in before["timeline"]] == ["message", "unknown", "plan"]
    live.begin_resume(replay=True)
    for item in updates:
        live.apply(item)
    live.apply_resume_response(codec.convert({}, ResumeSessionResponse))
    assert live.to_snapshot() == before


def test_replay_matches_an_unknown_entry_that_precedes_a_recreated_plan() -> None:
    """Hypothesis case: the first replayed plan update is matched to the plan re-created later; the unknown update
    replayed next must still match the existing entry before it, not be added twice."""
    plan = {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": ""}}
    updates = [
        unstable_update(plan),
        update({"sessionUpdate": "_marker", "n": 0}),
        unstable_update({"sessionUpdate": "plan_removed", "planId": "p"}),
        unstable_update(plan),
    ]
    live = fold(updates)
    before = live.to_snapshot()
    assert [entry["entity"] for entry in before["timeline"]] == ["unknown", "plan"]
    live.begin_resume(replay=True)
    for item in updates:
        live.apply(item)
    live.apply_resume_response(codec.convert({}, ResumeSessionResponse))
    assert live.to_snapshot() == before
