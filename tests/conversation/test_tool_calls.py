"""Tool call upserts (patch semantics) and content chunks, keyed by toolCallId."""

from __future__ import annotations

from typing import Any

from acp_session.conversation import SessionState, ToolCall, ToolCallChanged, diff_patch_text, diff_paths
from acp_session.schema import Content, Diff, ToolCallCapabilities, UnknownDiffChange, UnknownToolCallContent

from .wire import fold, state, text, tool, tool_chunk


def content_item(value: str) -> dict[str, Any]:
    return {"type": "content", "content": text(value)}


def call_of(session: SessionState, tool_call_id: str = "t") -> ToolCall:
    call = session.tool_calls.get(tool_call_id)
    assert call is not None
    return call


def item_texts(call: ToolCall) -> list[str]:
    return [item.content.text for item in call.content if isinstance(item, Content)]  # type: ignore[union-attr]


def test_new_tool_call_starts_at_protocol_defaults() -> None:
    call = call_of(fold([tool("t")]))
    assert (call.name, call.title, call.kind, call.status) == (None, None, "other", "pending")
    assert call.content == [] and call.locations == [] and call.capabilities is None and call.meta is None
    assert call.raw_input is None and call.raw_output is None and not call.can_cancel


def test_omitted_keeps_null_clears_value_replaces() -> None:
    session = fold([tool("t", name="bash", title="Run", kind="execute", status="in_progress", rawInput={"a": 1})])
    call = call_of(session)
    session.apply(tool("t"))
    assert (call.name, call.title, call.kind, call.status, call.raw_input) == (
        "bash",
        "Run",
        "execute",
        "in_progress",
        {"a": 1},
    )
    session.apply(tool("t", name=None, title=None, kind=None, status=None, rawInput=None, rawOutput=None))
    assert (call.name, call.title, call.kind, call.status) == (None, None, "other", "pending")
    assert call.raw_input is None and call.raw_output is None
    session.apply(tool("t", kind="read", status="completed", rawOutput=[1, 2]))
    assert (call.kind, call.status, call.raw_output) == ("read", "completed", [1, 2])


def test_content_chunks_append_and_later_content_replaces() -> None:
    session = fold([tool("t"), tool_chunk("t", content_item("a")), tool_chunk("t", content_item("b"))])
    call = call_of(session)
    assert item_texts(call) == ["a", "b"] and call.text == "ab"
    session.apply(tool("t", content=[content_item("C")]))
    assert item_texts(call) == ["C"]
    session.apply(tool_chunk("t", content_item("d")))
    assert item_texts(call) == ["C", "d"]
    session.apply(tool("t", status="completed"))
    assert item_texts(call) == ["C", "d"]


def test_null_and_empty_collections_clear() -> None:
    location = {"path": "/src/a.py", "line": 3}
    for cleared in (None, []):
        session = fold([tool("t", content=[content_item("x")], locations=[location])])
        session.apply(tool("t", content=cleared, locations=cleared))
        call = call_of(session)
        assert call.content == [] and call.locations == []


def test_locations_replace_as_a_whole() -> None:
    session = fold([tool("t", locations=[{"path": "/a"}, {"path": "/b"}]), tool("t", locations=[{"path": "/c"}])])
    assert [loc.path for loc in call_of(session).locations] == ["/c"]


def test_chunk_for_unseen_tool_call_creates_it() -> None:
    session = SessionState()
    event = session.apply(tool_chunk("new", content_item("x")))
    assert isinstance(event, ToolCallChanged) and event.created and event.appended is not None
    assert call_of(session, "new").status == "pending" and session.timeline == [call_of(session, "new")]


def test_acp2_078_cancel_only_while_capability_is_advertised() -> None:
    """ACP2-078: can_cancel mirrors capabilities.cancel; {} means supported; null / omitted do not."""
    session = fold([tool("t", capabilities={"cancel": {}})])
    call = call_of(session)
    assert call.can_cancel
    session.apply(tool("t", status="in_progress"))
    assert call.can_cancel  # omitted keeps
    session.apply(tool("t", capabilities={}))
    assert not call.can_cancel  # an object replaces the whole value
    session.apply(tool("t", capabilities={"cancel": {}}))
    session.apply(tool("t", capabilities=None))
    assert call.capabilities is None and not call.can_cancel
    session.apply(tool("t", capabilities={"cancel": None}))
    assert call.capabilities == ToolCallCapabilities(cancel=None) and not call.can_cancel


def test_acp2_008_tool_call_meta_patch() -> None:
    """ACP2-008: _meta patches by top-level key; null removes a key; null as a whole clears."""
    session = fold([tool("t", _meta={"a": 1, "b": 2}), tool("t", _meta={"b": None, "c": {"x": 1}})])
    call = call_of(session)
    assert call.meta == {"a": 1, "c": {"x": 1}}
    session.apply(tool("t", _meta={"c": {"y": 2}}))
    assert call.meta == {"a": 1, "c": {"y": 2}}
    session.apply(tool("t", title="keep"))
    assert call.meta == {"a": 1, "c": {"y": 2}}
    session.apply(tool("t", _meta=None))
    assert call.meta is None


def test_acp2_008_unrecognized_meta_keys_do_not_patch_fields() -> None:
    """ACP2-008: a status or content key inside _meta is opaque metadata, not a field patch."""
    session = fold([tool("t", status="in_progress", _meta={"status": "completed", "content": None, "kind": "read"})])
    call = call_of(session)
    assert (call.status, call.kind, call.content) == ("in_progress", "other", [])


def test_unknown_status_is_still_in_progress() -> None:
    session = fold([tool("t", status="_waiting_for_gpu")])
    call = call_of(session)
    assert call.status == "_waiting_for_gpu" and not call.is_final and not call.has_known_status
    for final in ("completed", "failed", "cancelled"):
        session.apply(tool("t", status=final))
        assert call.is_final


def test_acp2_040_tool_call_updates_after_cancel_are_applied() -> None:
    """ACP2-040: after the client sends session/cancel, final tool call updates still land."""
    session = fold(
        [
            state("running"),
            tool("t", status="in_progress", title="Build", capabilities={"cancel": {}}),
            # ... the client sends session/cancel here; the fold keeps accepting updates ...
            tool_chunk("t", content_item("partial output")),
            tool("t", status="cancelled", capabilities=None),
            state("idle", stopReason="cancelled"),
        ]
    )
    call = call_of(session)
    assert call.status == "cancelled" and call.text == "partial output" and not call.can_cancel
    assert session.is_idle and session.stop_reason == "cancelled" and session.completions == 1
    session.apply(tool("t", rawOutput={"late": True}))  # even after idle, nothing is dropped
    assert call.raw_output == {"late": True}


DIFF_CHANGES = [
    {"operation": "modify", "path": "/repo/a.py"},
    {"operation": "move", "oldPath": "/repo/old.py", "path": "/repo/new.py"},
    {"operation": "_chmod", "path": "/repo/run.sh"},
]


def test_acp2_018_diffs_without_patch() -> None:
    """ACP2-018: a diff whose patch is omitted or null is stored and its paths still readable."""
    session = fold(
        [
            tool("t", content=[{"type": "diff", "changes": DIFF_CHANGES}]),
            tool_chunk("t", {"type": "diff", "changes": DIFF_CHANGES[:1], "patch": None}),
        ]
    )
    diffs = call_of(session).diffs
    assert len(diffs) == 2
    for diff in diffs:
        assert diff_patch_text(diff) is None
    assert diff_paths(diffs[0]) == ["/repo/a.py", "/repo/old.py", "/repo/new.py", "/repo/run.sh"]
    assert isinstance(diffs[0].changes[2], UnknownDiffChange)


def test_acp2_016_changes_are_authoritative_over_patch_text() -> None:
    """ACP2-016: paths come from `changes`; patch text is only rendered, never parsed for paths."""
    patch = {"format": "git_patch", "text": "diff --git /repo/x.py /repo/x.py\n"}
    session = fold([tool("t", content=[{"type": "diff", "changes": DIFF_CHANGES[:1], "patch": patch}])])
    (diff,) = call_of(session).diffs
    assert isinstance(diff, Diff)
    assert diff_paths(diff) == ["/repo/a.py"]
    assert diff_patch_text(diff) == patch["text"]


def test_unknown_tool_call_content_and_terminal_anchor_kept() -> None:
    future = {"type": "_chart", "series": [1, 2]}
    session = fold([tool("t", content=[future, {"type": "terminal", "terminalId": "term-1"}])])
    call = call_of(session)
    assert isinstance(call.content[0], UnknownToolCallContent) and dict(call.content[0]) == future
    assert call.terminal_ids == ["term-1"]
    assert session.terminals == {}  # an anchor is not terminal state


def test_tool_call_timeline_position_fixed_by_first_update() -> None:
    session = fold([tool("a"), tool("b"), tool("a", status="completed"), tool_chunk("b", content_item("x"))])
    assert [(entry.tool_call_id, entry.position) for entry in session.timeline] == [  # type: ignore[union-attr]
        ("a", 0),
        ("b", 1),
    ]
