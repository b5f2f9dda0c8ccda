"""Plans, commands, config options, session info, usage, compactions, notices and unknown updates."""

from __future__ import annotations

from typing import Any

from acp_session.conversation import (
    Compaction,
    CompactionChanged,
    NoticeReceived,
    Plan,
    PlanChanged,
    SessionMessageChanged,
    SessionMessageEntry,
    SessionState,
    UnknownEntry,
    UsageChanged,
)
from acp_session.schema import (
    Command,
    Cost,
    SessionConfigBoolean,
    SessionConfigSelect,
    UnknownAvailableCommand,
    UnknownPlanUpdateContent,
    UnknownSessionConfigOption,
)

from .wire import chunk, fold, state, text, unstable_update, update


def plan(plan_id: str, *entries: str) -> Any:
    items = [{"content": entry, "priority": "high", "status": "pending"} for entry in entries]
    return update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": plan_id, "entries": items}})


def test_plan_update_replaces_per_plan_id() -> None:
    session = fold([plan("p1", "a", "b"), plan("p2", "x"), plan("p1", "c")])
    assert [entry.content for entry in session.plans["p1"].entries] == ["c"]
    assert [entry.content for entry in session.plans["p2"].entries] == ["x"]
    assert [(p.plan_id, p.position) for p in session.timeline if isinstance(p, Plan)] == [("p1", 0), ("p2", 1)]


def test_unknown_plan_content_is_kept_raw_and_still_replaces() -> None:
    raw = {"type": "_gantt", "planId": "p1", "bars": [1]}
    session = fold([plan("p1", "a"), update({"sessionUpdate": "plan_update", "plan": raw})])
    stored = session.plans["p1"]
    assert isinstance(stored.content, UnknownPlanUpdateContent) and dict(stored.content) == raw
    assert stored.entries == []


def test_unstable_markdown_plan_and_removal() -> None:
    markdown = {"type": "markdown", "planId": "md", "content": "- [ ] step"}
    session = fold([plan("p1", "a"), unstable_update({"sessionUpdate": "plan_update", "plan": markdown})])
    assert session.plans["md"].content.content == "- [ ] step"
    event = session.apply(unstable_update({"sessionUpdate": "plan_removed", "planId": "p1"}))
    assert isinstance(event, PlanChanged) and event.removed
    assert set(session.plans) == {"md"} and [entry.position for entry in session.timeline] == [0]
    gone = session.apply(unstable_update({"sessionUpdate": "plan_removed", "planId": "never"}))
    assert isinstance(gone, PlanChanged) and gone.removed and not gone.created


def test_available_commands_replaced_wholesale() -> None:
    first = {"type": "command", "name": "web", "description": "Search"}
    future = {"type": "_macro", "name": "m"}
    session = fold([update({"sessionUpdate": "available_commands_update", "availableCommands": [first, future]})])
    assert isinstance(session.available_commands[0], Command)
    assert isinstance(session.available_commands[1], UnknownAvailableCommand)
    session.apply(update({"sessionUpdate": "available_commands_update", "availableCommands": []}))
    assert session.available_commands == []


SELECT = {
    "type": "select",
    "configId": "mode",
    "name": "Mode",
    "currentValue": "ask",
    "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
}


def config_update(*options: dict[str, Any]) -> Any:
    return update({"sessionUpdate": "config_option_update", "configOptions": list(options)})


def test_config_options_replaced_wholesale() -> None:
    flag = {"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": True}
    session = fold([config_update(SELECT, flag), config_update(flag)])
    assert [option.config_id for option in session.config_options] == ["fast"]  # type: ignore[union-attr]
    assert isinstance(session.config_options[0], SessionConfigBoolean)


def test_acp2_034_missing_unknown_and_malformed_categories_are_handled() -> None:
    """ACP2-034 / ACP2-033: categories are optional hints; options work without understanding them."""
    options = [
        {**SELECT, "configId": "a"},
        {**SELECT, "configId": "b", "category": "_vendor_thing"},
        {**SELECT, "configId": "c", "category": "future_category"},
        {**SELECT, "configId": "d", "category": 17},
        {"type": "_slider", "configId": "e", "name": "Temperature"},
    ]
    session = fold([config_update(*options)])
    assert len(session.config_options) == 5
    b, c, d = (session.config_option(key) for key in "bcd")
    assert isinstance(b, SessionConfigSelect) and b.category == "_vendor_thing"
    assert isinstance(c, SessionConfigSelect) and c.category == "future_category"
    assert isinstance(d, SessionConfigSelect) and d.current_value == "ask"  # malformed category dropped
    assert isinstance(session.config_option("e"), UnknownSessionConfigOption)
    assert session.config_option("missing") is None


def test_session_info_patch() -> None:
    session = fold(
        [
            update({"sessionUpdate": "session_info_update", "title": "Fix bug", "updatedAt": "2025-01-01T00:00:00Z"}),
            update({"sessionUpdate": "session_info_update", "_meta": {"tag": 1}}),
        ]
    )
    info = session.session_info
    assert (info.title, info.updated_at, info.meta) == ("Fix bug", "2025-01-01T00:00:00Z", {"tag": 1})
    session.apply(update({"sessionUpdate": "session_info_update", "title": None, "_meta": {"tag": None}}))
    assert (info.title, info.updated_at, info.meta) == (None, "2025-01-01T00:00:00Z", {})


def usage(used: int, size: int, **fields: Any) -> Any:
    return update({"sessionUpdate": "usage_update", "used": used, "size": size, **fields})


def test_usage_update_context_pressure_and_cost_patch() -> None:
    session = SessionState()
    event = session.apply(usage(53000, 200000, cost={"amount": 0.045, "currency": "USD"}))
    assert isinstance(event, UsageChanged)
    assert session.usage is not None
    assert (session.usage.used, session.usage.size, session.usage.fraction) == (53000, 200000, 0.265)
    session.apply(usage(60000, 200000))
    assert session.usage.used == 60000 and session.usage.cost == Cost(amount=0.045, currency="USD")
    session.apply(usage(1, 0, cost=None))
    assert session.usage.cost is None and session.usage.fraction == 0.0


def test_notices_are_live_events_not_history() -> None:
    session = fold([state("running")])
    event = session.apply(update({"sessionUpdate": "notice", "severity": "error", "title": "MCP server unavailable"}))
    assert isinstance(event, NoticeReceived) and event.notice.title == "MCP server unavailable"
    assert session.timeline == [] and session.state == "running"  # even "error" changes no state
    assert "notice" not in str(session.to_snapshot())


def test_unknown_updates_are_kept_raw_in_the_timeline() -> None:
    raw = {"sessionUpdate": "_telemetry", "n": 1}
    future = {"sessionUpdate": "mood_update", "mood": "happy"}
    session = fold([chunk("m", "a"), update(raw), chunk("m", "b"), update(future), update(raw)])
    entries = [entry for entry in session.timeline if isinstance(entry, UnknownEntry)]
    assert [dict(entry.raw) for entry in entries] == [raw, future, raw]
    assert [entry.position for entry in entries] == [1, 2, 3]
    assert entries[0].tag == "_telemetry" and entries[0].raw.is_extension and not entries[1].raw.is_extension
    assert session.message("m").text == "ab"  # type: ignore[union-attr]


def test_session_messages_are_history_entries() -> None:
    """Preview ``session_message`` upserts and chunks fold into one ``SessionMessageEntry`` (patch semantics)."""
    session = SessionState()
    event = session.apply(
        unstable_update({"sessionUpdate": "session_message", "messageId": "sm", "content": [text("hi")]})
    )
    assert isinstance(event, SessionMessageChanged) and event.created
    session.apply(
        unstable_update({"sessionUpdate": "session_message_chunk", "messageId": "sm", "content": text(" there")})
    )
    session.apply(unstable_update({"sessionUpdate": "session_message", "messageId": "sm", "senderSessionId": "child"}))
    (entry,) = session.timeline
    assert isinstance(entry, SessionMessageEntry) and entry.text == "hi there" and entry.sender_session_id == "child"
    session.apply(unstable_update({"sessionUpdate": "session_message", "messageId": "sm", "senderSessionId": None}))
    assert entry.sender_session_id is None and entry.text == "hi there"  # null clears, omitted keeps


def test_apply_rejects_non_updates() -> None:
    try:
        SessionState().apply(42)
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("expected TypeError")


def compaction(cid: str, status: str, **fields: Any) -> Any:
    return update({"sessionUpdate": "compaction_update", "compactionId": cid, "status": status, **fields})


def summary_chunk(cid: str, value: str) -> Any:
    return update({"sessionUpdate": "compaction_summary_chunk", "compactionId": cid, "content": text(value)})


def test_compaction_lifecycle_and_summary_patch() -> None:
    session = fold([chunk("m", "x"), compaction("c", "in_progress"), summary_chunk("c", "A"), summary_chunk("c", "B")])
    stored = session.compactions["c"]
    assert (stored.status, stored.summary_text, stored.position) == ("in_progress", "AB", 1)
    session.apply(compaction("c", "completed"))
    assert (stored.status, stored.summary_text) == ("completed", "AB")  # omitted summary keeps
    session.apply(compaction("c", "completed", summary=[text("C")], _meta={"k": 1}))
    assert stored.summary_text == "C" and stored.meta == {"k": 1}
    session.apply(compaction("c", "completed", summary=[]))
    assert stored.summary == []
    session.apply(compaction("c", "failed", summary=[text("D")], error="disk full"))
    session.apply(compaction("c", "failed", summary=None, error=None))
    assert (stored.status, stored.summary, stored.error) == ("failed", [], None)


def test_summary_chunk_for_unseen_compaction_creates_it_in_progress() -> None:
    session = SessionState()
    event = session.apply(summary_chunk("new", "S"))
    assert isinstance(event, CompactionChanged) and event.created and event.appended is not None
    stored = session.compactions["new"]
    assert isinstance(stored, Compaction) and stored.status == "in_progress" and stored.summary_text == "S"
    session.apply(compaction("new", "_archived"))
    assert stored.status == "_archived"  # unknown statuses preserved
