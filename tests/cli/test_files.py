"""``[file] PATH`` lines and ``file`` JSON records for the files a turn's agent wrote (issue 21)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from acp_conformance.agent.scenarios import EDIT_DIR, EDITS, LOCKED
from acp_session.cli.render import TerminalRenderer
from acp_session.cli.render_json import JsonRenderer
from acp_session.conversation import ChatFile, ChatStart

from .support import run_cli


def test_edit_shows_each_written_file_after_its_tool_call(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--cwd", str(tmp_path), "/edit")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    lines = [line for line in out.splitlines() if line.startswith("[file] ")]
    assert lines == [f"[file] {tmp_path / EDIT_DIR / name}" for name, _, _ in EDITS]
    assert LOCKED not in "".join(lines)
    completed = out.index("[tool] Editing greeting.txt and notes.md (edit): completed")
    assert completed < out.index(lines[0]) < out.index(f"[tool] Editing {LOCKED} (edit): failed")


def test_json_has_a_file_record_per_file(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--cwd", str(tmp_path), "--json", "/edit")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    found = [r for r in records if r["event"] == "file"]
    tool_end = next(r for r in records if r["event"] == "tool_end")
    assert [(r["path"], r["mime_type"], r["operation"], r["source"]) for r in found] == [
        (str(tmp_path / EDIT_DIR / name), mime, "add", "tool_call") for name, mime, _ in EDITS
    ]
    for record in found:
        assert record["tool_call_id"] == tool_end["tool_call"]["id"] and tool_end["status"] == "completed"
        assert record["text"] is None and record["old_path"] is None and "diff --git" in record["patch"]
    assert records.index(tool_end) < records.index(found[0]) and records[-1]["event"] == "done"


def render(*events: object) -> str:
    out = io.StringIO()
    renderer = TerminalRenderer(out, color=False)
    for event in events:
        renderer.event(event)  # type: ignore[arg-type]
    return out.getvalue()


def test_terminal_lines_for_deletes_moves_copies_and_a_write_reported_twice() -> None:
    write = ChatFile("/r/a.txt", "new", None, None, "write", source="fs_write")
    diff_of_it = ChatFile("/r/a.txt", "new", "call-1", None, "add")
    assert render(
        ChatStart("u1"),
        write,
        diff_of_it,  # the same path and text: the same write, shown once
        ChatFile("/r/a.txt", "newer", "call-2", None, "modify"),  # a new text: shown
        ChatFile("/r/b.txt", None, "call-2", None, "modify"),
        ChatFile("/r/b.txt", None, "call-3", None, "modify"),  # unknown text: cannot be the same write, shown
        ChatFile("/r/gone.txt", None, "call-3", None, "delete"),
        ChatFile("/r/new.py", None, "call-3", None, "move", "/r/old.py"),
        ChatFile("/r/copy.py", None, "call-3", None, "copy", "/r/tpl.py"),
        ChatStart("u2"),
        write,  # another turn: shown again
    ).splitlines() == [
        "[file] /r/a.txt",
        "[file] /r/a.txt",
        "[file] /r/b.txt",
        "[file] /r/b.txt",
        "[file] /r/gone.txt (deleted)",
        "[file] /r/new.py (moved from /r/old.py)",
        "[file] /r/copy.py (copied from /r/tpl.py)",
        "[file] /r/a.txt",
    ]


def test_json_record_of_a_file_has_every_field() -> None:
    out = io.StringIO()
    JsonRenderer(out).event(ChatFile("/r/a.txt", "x", None, "text/plain", "write", source="fs_write"))
    assert json.loads(out.getvalue()) == {
        "event": "file",
        "path": "/r/a.txt",
        "text": "x",
        "tool_call_id": None,
        "mime_type": "text/plain",
        "operation": "write",
        "old_path": None,
        "patch": None,
        "source": "fs_write",
    }
