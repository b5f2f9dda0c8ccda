"""The examples in docs/client.md run against the scripted agent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.support import agent_argv
from tests.schema_source import REPO

BLOCK = re.compile(r"```python\n# example: (\w+)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(BLOCK.findall((REPO / "docs" / "client.md").read_text()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_docs_example_runs(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(EXAMPLES[name])
    argv = agent_argv(tmp_path / "agent.log")
    out = subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=20, cwd=REPO, check=True
    ).stdout
    expected = {"connect": "inserted as m1", "sessions": "withdrawn: RequestCancelled"}[name]
    assert expected in out, out


def test_both_examples_are_found() -> None:
    assert set(EXAMPLES) == {"connect", "sessions"}
