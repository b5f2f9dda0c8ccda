"""The CLI shows a subagent's work (Preview) indented under the tool call that started it, and the turn's usage."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.support import run_cli


def test_text_output_indents_the_childs_work(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "/subagent")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "[subagent Explorer] started" in line)
    end = next(i for i, line in enumerate(lines) if "[subagent Explorer] ended" in line)
    assert lines[start].startswith("  ") and "from tool call tc-1" in lines[start]
    child = lines[start + 1 : end]
    assert child.count("    [tool] Listing files") == 1 and child.count("    [tool] Listing files: completed") == 1
    assert "    Found 2 files." in child
    assert lines[end] == "  [subagent Explorer] ended: end_turn, 30 tokens (20 in, 10 out)"
    assert any(line.startswith("[usage] 70 tokens") for line in lines[end:])


def test_json_output_reports_the_child(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "--json", "/subagent")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [r["event"] for r in records]
    assert kinds.index("subagent_start") < kinds.index("subagent_update") < kinds.index("subagent_end")
    end = next(r for r in records if r["event"] == "subagent_end")
    assert end["title"] == "Explorer" and end["stop_reason"] == "end_turn" and end["text"] == "Found 2 files."
    assert end["usage"]["total_tokens"] == 30 and end["tool_call_id"] == "tc-1"
    assert records[-1]["event"] == "done" and records[-1]["usage"]["total_tokens"] == 70
