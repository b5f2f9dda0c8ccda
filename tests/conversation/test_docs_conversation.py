"""The examples in docs/conversation.md run against the chat agent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conversation.chat_support import chat_agent_argv
from tests.schema_source import REPO

BLOCK = re.compile(r"```python\n# example: (\w+)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(BLOCK.findall((REPO / "docs" / "conversation.md").read_text()))
EXPECTED = {
    "chat": ["tool ends: completed", "done: end_turn 'done reading'", "reply: w0 w1 w2 ", "turns: 2"],
    "transcript": ["replayed state equal: True", "after reconnect: w0  | turns: 2", "fresh resume sees 6 entries"],
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_docs_example_runs(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(EXAMPLES[name])
    argv = chat_agent_argv(tmp_path)
    out = subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=30, cwd=REPO, check=True
    ).stdout
    for expected in EXPECTED[name]:
        assert expected in out, out


def test_every_example_is_checked() -> None:
    assert set(EXAMPLES) == set(EXPECTED)
