"""Message upserts and chunks (user / agent / thought), keyed by messageId."""

from __future__ import annotations

from acp_session.conversation import Message, MessageChanged, SessionState
from acp_session.schema import ImageContent, TextContent, UnknownContentBlock

from .wire import OMIT, chunk, fold, text, upsert


def texts(message: Message | None) -> list[str]:
    assert message is not None
    return [block.text for block in message.content if isinstance(block, TextContent)]


def test_schema_example_upsert_then_chunk_then_replacement() -> None:
    """[A], then chunk B -> A then B; then [C] -> [C]; later chunks append to [C]. Plain text chunks are
    joined into the block before them (``join_chunks``), so the content reads as one text block."""
    state = fold([upsert("m", ["A"]), chunk("m", "B")])
    assert texts(state.message("m")) == ["AB"]
    state.apply(upsert("m", ["C"]))
    assert texts(state.message("m")) == ["C"]
    state.apply(chunk("m", "D"))
    assert texts(state.message("m")) == ["CD"]


def test_plain_text_chunks_join_into_blocks_of_bounded_size() -> None:
    """A streamed reply costs about its text: chunks join the open block until it reaches TEXT_BLOCK_SIZE
    characters; the chunk that reaches it closes the block and the next chunk starts a new one."""
    state = fold([chunk("m", "x" * 100) for _ in range(25)])
    message = state.message("m")
    assert message is not None
    assert [len(block) for block in texts(message)] == [1100, 1100, 300]
    assert message.text == "x" * 2500


def test_chunks_with_annotations_meta_or_other_types_are_never_joined() -> None:
    annotated = {"type": "text", "text": "b", "annotations": {"priority": 1}}
    with_meta = {"type": "text", "text": "c", "_meta": {"k": 1}}
    image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
    state = fold([chunk("m", "a"), chunk("m", annotated), chunk("m", "x"), chunk("m", with_meta), chunk("m", image)])
    state.apply(chunk("m", "d"))
    state.apply(chunk("m", "e"))
    message = state.message("m")
    assert message is not None
    kinds = [(type(block).__name__, getattr(block, "text", None)) for block in message.content]
    assert kinds == [
        ("TextContent", "a"),
        ("TextContent", "b"),
        ("TextContent", "x"),
        ("TextContent", "c"),
        ("ImageContent", None),
        ("TextContent", "de"),
    ]
    assert message.content[1].annotations is not None  # type: ignore[union-attr]
    assert message.text == "abxcde"


def test_a_joined_block_is_a_new_block_never_a_mutated_one() -> None:
    """Blocks handed out (events carry each chunk's own block) are never changed behind the reader's back."""
    state = fold([chunk("m", "Hel")])
    message = state.message("m")
    assert message is not None
    first = message.content[0]
    event = state.apply(chunk("m", "lo"))
    assert first.text == "Hel"  # type: ignore[union-attr]
    assert event.appended.text == "lo"  # type: ignore[union-attr]
    assert texts(message) == ["Hello"]


def test_upsert_without_content_keeps_content_from_chunks() -> None:
    state = fold([chunk("m", "Hel"), chunk("m", "lo"), upsert("m", meta={"k": 1})])
    message = state.message("m")
    assert message is not None and message.text == "Hello" and message.meta == {"k": 1}


def test_null_and_empty_content_clear() -> None:
    for cleared in (None, []):
        state = fold([chunk("m", "x"), upsert("m", ["y"]), upsert("m", cleared)])
        assert texts(state.message("m")) == []
        state.apply(chunk("m", "z"))
        assert texts(state.message("m")) == ["z"]


def test_new_message_with_omitted_content_starts_empty() -> None:
    state = fold([upsert("m", OMIT)])
    message = state.message("m")
    assert message is not None and message.content == [] and message.meta is None


def test_chunks_of_different_messages_interleave() -> None:
    state = fold([chunk("a", "1"), chunk("b", "x"), chunk("a", "2"), chunk("b", "y")])
    assert state.message("a").text == "12"  # type: ignore[union-attr]
    assert state.message("b").text == "xy"  # type: ignore[union-attr]


def test_roles_have_separate_stores() -> None:
    state = fold(
        [
            chunk("m", "question", kind="user_message"),
            chunk("m", "answer"),
            chunk("m", "thinking", kind="agent_thought"),
            upsert("u2", ["hi"], kind="user_message"),
            upsert("t2", ["hmm"], kind="agent_thought"),
        ]
    )
    assert state.message("m", "user").text == "question"  # type: ignore[union-attr]
    assert state.message("m", "agent").text == "answer"  # type: ignore[union-attr]
    assert state.message("m", "thought").text == "thinking"  # type: ignore[union-attr]
    assert [(m.role, m.message_id) for m in state.timeline if isinstance(m, Message)] == [
        ("user", "m"),
        ("agent", "m"),
        ("thought", "m"),
        ("user", "u2"),
        ("thought", "t2"),
    ]
    assert set(state.messages("user")) == {"m", "u2"}


def test_message_text_joins_text_blocks_only_and_keeps_other_blocks() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    future = {"type": "hologram", "depth": 3}
    state = fold([chunk("m", "a"), chunk("m", image), chunk("m", future), chunk("m", "b")])
    message = state.message("m")
    assert message is not None
    assert message.text == "ab"
    assert isinstance(message.content[1], ImageContent)
    assert isinstance(message.content[2], UnknownContentBlock) and dict(message.content[2]) == future


def test_acp2_010_text_kept_verbatim_for_commonmark_rendering() -> None:
    """ACP2-010: the fold keeps Markdown source untouched (whitespace, fences) for the renderer."""
    source = "# Title\n\n```py\nx = 1\n```\n  trailing  "
    state = fold([chunk("m", source[:7]), chunk("m", source[7:])])
    assert state.message("m").text == source  # type: ignore[union-attr]


def test_acp2_007_meta_patch_by_top_level_key() -> None:
    """ACP2-007: _meta is patched by key and stored opaquely; unknown keys carry no meaning."""
    state = fold([upsert("m", ["x"], meta={"a": 1, "b": {"deep": 1}, "c": 3})])
    state.apply(upsert("m", meta={"b": {"other": 2}, "c": None, "d": 4}))
    message = state.message("m")
    assert message is not None
    assert message.meta == {"a": 1, "b": {"other": 2}, "d": 4}  # nested replaced, not merged
    assert message.text == "x"  # meta patch does not touch content
    state.apply(upsert("m", OMIT, meta=OMIT))
    assert message.meta == {"a": 1, "b": {"other": 2}, "d": 4}
    state.apply(upsert("m", meta=None))
    assert message.meta is None


def test_acp2_007_unrecognized_meta_keys_change_nothing_else() -> None:
    """ACP2-007: keys such as "content" or "messageId" inside _meta are not interpreted."""
    state = fold([upsert("m", ["x"], meta={"content": [], "messageId": "other", "role": "user"})])
    message = state.message("m")
    assert message is not None and message.text == "x" and message.role == "agent"
    assert state.message("other") is None and state.messages("user") == {}


def test_chunk_meta_is_chunk_scoped() -> None:
    state = fold([upsert("m", ["x"], meta={"keep": 1}), chunk("m", "y", meta={"keep": None, "new": 2})])
    assert state.message("m").meta == {"keep": 1}  # type: ignore[union-attr]
    fresh = fold([chunk("n", "y", meta={"new": 2})])
    assert fresh.message("n").meta is None  # type: ignore[union-attr]


def test_stored_meta_does_not_alias_the_update() -> None:
    first = upsert("m", meta={"a": 1})
    state = fold([first, upsert("m", meta={"b": 2})])
    assert first.meta == {"a": 1}
    assert state.message("m").meta == {"a": 1, "b": 2}  # type: ignore[union-attr]


def test_events_report_creation_and_appended_block() -> None:
    state = SessionState()
    created = state.apply(chunk("m", "a"))
    appended = state.apply(chunk("m", "b"))
    replaced = state.apply(upsert("m", ["c"]))
    assert isinstance(created, MessageChanged) and created.created and created.appended == TextContent(text="a")
    assert isinstance(appended, MessageChanged) and not appended.created
    assert appended.appended == TextContent(text="b")
    assert isinstance(replaced, MessageChanged) and replaced.appended is None
    assert created.message is appended.message is replaced.message


def test_first_appearance_fixes_timeline_position() -> None:
    state = fold([chunk("a", "1"), upsert("b", ["2"]), chunk("a", "3"), upsert("a", ["4"]), upsert("c", OMIT)])
    assert [(entry.message_id, entry.position) for entry in state.timeline] == [  # type: ignore[union-attr]
        ("a", 0),
        ("b", 1),
        ("c", 2),
    ]


def test_content_list_is_copied_from_the_update() -> None:
    item = upsert("m", ["a"])
    state = fold([item, chunk("m", "b")])
    assert len(item.content) == 1
    assert state.message("m").text == "ab"  # type: ignore[union-attr]


def test_text_helper_on_blocks() -> None:
    state = fold([upsert("m", [text("x"), {"type": "resource_link", "name": "f", "uri": "file:///f"}, "y"])])
    assert state.message("m").text == "xy"  # type: ignore[union-attr]


def test_text_read_between_chunks_follows_appends_replacements_and_resets() -> None:
    """``Message.text`` follows every way the fold changes content (joined chunks, replacements, resets)."""
    state = SessionState()
    state.apply(chunk("m", "He"))
    message = state.message("m")
    assert message is not None and message.text == "He"
    for piece, expected in (("l", "Hel"), ("lo", "Hello"), (" ", "Hello ")):
        state.apply(chunk("m", piece))
        assert message.text == expected
    state.apply(chunk("m", {"type": "image", "data": "AAAA", "mimeType": "image/png"}))
    state.apply(chunk("m", "world"))
    assert message.text == "Hello world"
    state.apply(upsert("m", ["new"]))  # a replacement is a new list: nothing stale survives
    assert message.text == "new"
    state.apply(chunk("m", "er"))
    assert message.text == "newer"
    message.reset()
    assert message.text == ""
    state.apply(chunk("m", "again"))
    assert message.text == "again"
