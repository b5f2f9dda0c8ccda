"""The examples in docs/conversation.md run unchanged (no arguments: the bundled reference agent)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.schema_source import REPO

BLOCK = re.compile(r"```python\n# example: (\w+)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(BLOCK.findall((REPO / "docs" / "conversation.md").read_text()))
EXPECTED = {
    "chat": [
        "tool begins: Editing example.txt",
        "tool ends: completed",
        "done: end_turn 'I changed one line in example.txt.'",
        "reply: chunk 1. chunk 2. chunk 3. ",
        "turns: 2",
    ],
    "transcript": ["replayed state equal: True", "resume sees 2 entries", "after resume: chunk 1. "],
    "streams": ["tool call: Editing example.txt\ntext I changed one line in example.txt.\nsteps: "],
    "spawn": ["sess-1 True", "Hello! I am the ACP reference agent."],
    "reconnect": [
        "connection: reconnecting\nconnection: reconnected\nturn: TurnLost",
        "next: You said: still there?",
        "history: hello | still there?",
    ],
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_docs_example_runs(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(EXAMPLES[name])
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path, check=True
    ).stdout
    for expected in EXPECTED[name]:
        assert expected in out, out


def test_every_example_is_checked() -> None:
    assert set(EXAMPLES) == set(EXPECTED)
