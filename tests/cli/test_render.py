"""What ``acp-session chat`` shows: tool calls with their content, diffs and terminals (coloured only on a
terminal), context usage and cost, token usage, separated messages, and ``--attach`` following the agent's prompt
capabilities; the same in ``--json``."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest

from acp_session.cli.attach import attachment
from acp_session.cli.render import TerminalRenderer
from acp_session.cli.render_json import JsonRenderer
from acp_session.conversation import ChatDone, ChatResponse, ChatText, ChatToolBegin, ChatToolUpdate, ToolCall
from acp_session.conversation.entities import TokenUsage
from acp_session.schema import (
    BlobResourceContents,
    Content,
    EmbeddedResource,
    ImageContent,
    PromptCapabilities,
    PromptEmbeddedContextCapabilities,
    PromptImageCapabilities,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from tests.cli.support import run_cli
from tests.cli.test_pty import finish, spawn

DIFF_LINES = ["  --- {p}", "  +++ {p}", "  @@ -1 +1 @@", "  -old", "  +new"]


def test_a_tool_call_shows_its_content_chunks_and_diff_plain_when_piped(tmp_path: Path) -> None:
    (tmp_path / "example.txt").write_text("old\n")
    result = run_cli(tmp_path, "chat", "/tool")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    path = f"{tmp_path}/example.txt"
    # The start line shows the call as folded when its event is read: in_progress, or completed already when the
    # agent's updates arrived in one read (events read after the fold see the live entity).
    start = next(i for i, line in enumerate(lines) if line.startswith("[tool] Editing example.txt (edit): "))
    assert lines[start].rpartition(": ")[2] in ("in_progress", "completed")
    assert lines.index("[tool] Editing example.txt (edit): completed") >= start
    shown = [line for line in lines[start + 1 :] if not line.startswith("[tool]")]
    expected = ["  reading example.txt", "  computing the change", "  writing example.txt"]
    expected += [f"  diff --git {path} {path}"] + [line.format(p=path) for line in DIFF_LINES]
    assert shown[: len(expected)] == expected
    assert lines.index(f"[file] {path}") > start + len(expected)
    assert "\x1b" not in result.stdout
    assert (tmp_path / "example.txt").read_text() == "new\n"  # issue 30 item 11: the file the diff shows


def test_a_diff_is_coloured_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "example.txt").write_text("old\n")
    child = spawn(tmp_path, "chat", "/tool", color=True)
    child.expect(re.escape("\x1b[36m  @@ -1 +1 @@\x1b[0m"))
    child.expect(re.escape("\x1b[31m  -old\x1b[0m"))
    child.expect(re.escape("\x1b[32m  +new\x1b[0m"))
    child.expect(r"\[stop: end_turn\]")
    assert finish(child) == 0


def test_a_terminal_shows_its_command_output_and_exit_status(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "/terminal")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("[tool] pytest -q (execute): completed")
    assert lines[start + 1 : start + 6] == [
        "  [terminal term-1]",
        "  $ pytest -q",
        "  ....",
        "  4 passed",
        "  (exit 0)",
    ]
    assert lines[start + 6] == "4 tests passed."


def test_context_usage_and_cost_in_text_and_json(tmp_path: Path) -> None:
    text = run_cli(tmp_path, "chat", "/usage")
    assert text.stdout.splitlines() == [
        "Usage reported.",
        "[usage] context 1,200 / 200,000 tokens (0.6%), cost 0.0042 USD",
        "[stop: end_turn]",
    ]
    records = [json.loads(line) for line in run_cli(tmp_path, "chat", "--json", "/usage").stdout.splitlines()]
    usage = {"used": 1200, "size": 200000, "cost": {"amount": 0.0042, "currency": "USD"}}
    assert [r["event"] for r in records] == ["session", "start", "text", "usage", "done"]
    assert {k: v for k, v in records[3].items() if k != "event"} == usage
    assert records[-1]["context"] == usage

    plain = [json.loads(line) for line in run_cli(tmp_path, "chat", "--json", "hello").stdout.splitlines()]
    assert plain[-1]["context"] is None and "usage" not in [r["event"] for r in plain]


def test_token_usage_of_a_turn_is_shown() -> None:
    out = io.StringIO()
    usage = TokenUsage(total_tokens=1234, input_tokens=1000, output_tokens=234, thought_tokens=12)
    TerminalRenderer(out, color=False).event(
        ChatDone(ChatResponse(message_id="m1", stop_reason="end_turn", usage=usage))
    )
    assert out.getvalue().splitlines() == [
        "[usage] 1,234 tokens (1,000 in, 234 out, 12 thinking)",
        "[stop: end_turn]",
    ]


def test_consecutive_messages_are_separated_by_a_blank_line(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--yes", "/all")
    assert result.returncode == 0, result.stderr
    assert "\n(exit 0)\n4 tests passed.\n\nUsage reported.\n" in result.stdout.replace("  (exit 0)", "(exit 0)")


def test_json_reports_each_tool_content_item_once(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--json", "/tool")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    tools = [r["tool_call"] for r in records if r["event"].startswith("tool_")]
    items = [item for tool in tools for item in tool.get("content", [])]
    assert [item["type"] for item in items] == ["content", "content", "content", "diff"]
    assert items[0]["content"] == {"type": "text", "text": "reading example.txt"}
    assert items[3]["patch"]["text"].endswith("+new\n")
    assert (tmp_path / "example.txt").read_text() == "new\n"  # issue 30 item 11: it writes what it reports


def test_replaced_tool_content_is_shown_again() -> None:
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=False)
    call = ToolCall(tool_call_id="t1", title="Run", kind="execute", status="in_progress")
    call.content = [Content(content=TextContent(text="one"))]
    renderer.event(ChatToolBegin(call))
    call.content = [*call.content, Content(content=TextContent(text="two"))]
    renderer.event(ChatToolUpdate(call))
    call.content = [Content(content=TextContent(text="fresh"))]
    renderer.event(ChatToolUpdate(call))
    assert out.getvalue().splitlines() == [
        "[tool] Run (execute): in_progress",
        "  one",
        "  two",
        "  (content replaced)",
        "  fresh",
    ]

    json_out = io.StringIO()
    json_renderer = JsonRenderer(json_out)
    call.content = [Content(content=TextContent(text="a"))]
    json_renderer.event(ChatToolBegin(call))
    json_renderer.event(ChatToolUpdate(call))  # a v1 agent resending the same content: nothing new
    records = [json.loads(line) for line in json_out.getvalue().splitlines()]
    assert [len(r["tool_call"].get("content", [])) for r in records] == [1, 0]
    assert records[1]["tool_call"] == {"id": "t1"}  # nothing changed: only the id


def test_escape_sequences_in_tool_output_are_not_passed_to_the_terminal() -> None:
    out = io.StringIO()
    call = ToolCall(tool_call_id="t1", title="x", status="completed")
    call.content = [Content(content=TextContent(text="ok\x1b]0;owned\x07 \x1b[2Jdone"))]
    TerminalRenderer(out, color=True).event(ChatToolBegin(call))
    assert "\x1b]0" not in out.getvalue() and "\x1b[2J" not in out.getvalue()
    assert "  ok done" in out.getvalue()


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    return picture, notes


def test_attachments_follow_the_prompt_capabilities(files: tuple[Path, Path]) -> None:
    picture, notes = files
    everything = PromptCapabilities(
        image=PromptImageCapabilities(), embedded_context=PromptEmbeddedContextCapabilities()
    )
    embedded_only = PromptCapabilities(embedded_context=PromptEmbeddedContextCapabilities())

    block, how = attachment(picture, everything)
    assert isinstance(block, ImageContent) and block.mime_type == "image/png" and how == "image"
    block, how = attachment(picture, embedded_only)
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, BlobResourceContents)
    assert how == "embedded file"
    block, how = attachment(notes, embedded_only)
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents)
    assert block.resource.text == "# notes\n"
    for caps in (None, PromptCapabilities()):
        block, how = attachment(notes, caps)
        assert isinstance(block, ResourceLink) and block.uri == notes.resolve().as_uri() and how == "link"
        assert block.name == "notes.md"


def test_attach_sends_the_files_with_the_first_prompt(tmp_path: Path, files: tuple[Path, Path]) -> None:
    picture, notes = files
    result = run_cli(tmp_path, "chat", "--attach", str(notes), "look", "--attach", str(picture))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "You said: look [EmbeddedResource] [EmbeddedResource]"
    assert f"attached {notes} embedded in the prompt" in result.stderr

    piped = run_cli(tmp_path, "chat", "--attach", str(notes), stdin="first\nsecond\n")
    assert "You said: first\nsecond [EmbeddedResource]\n" in piped.stdout

    missing = run_cli(tmp_path, "chat", "--attach", str(tmp_path / "nope.png"), "hi")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_resume_replays_tool_calls_with_their_content(tmp_path: Path) -> None:
    assert run_cli(tmp_path, "chat", "/tool").returncode == 0
    resumed = run_cli(tmp_path, "resume", "sess-1", "again")
    assert resumed.returncode == 0, resumed.stderr
    replay = resumed.stdout.split("--- end of replayed history ---")[0]
    assert "  reading example.txt" in replay and "  +new" in replay


def test_escape_sequences_in_messages_are_not_passed_to_the_terminal() -> None:
    out = io.StringIO()
    TerminalRenderer(out, color=False).event(ChatText(text="a\x1b[2Jb\x1b]8;;http://x\x07c\rd", message_id="m"))
    assert out.getvalue() == "abcd"
