"""The examples in docs/client.md run unchanged (no arguments: the bundled reference agent)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.schema_source import REPO

BLOCK = re.compile(r"```python\n# example: (\w+)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(BLOCK.findall((REPO / "docs" / "client.md").read_text()))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_docs_example_runs(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(EXAMPLES[name])
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path, check=True
    ).stdout
    expected = {
        "connect": ["agent acp-reference-agent 2", "inserted as msg-user-1"],
        "sessions": ["options ['mode', 'thoughts']", "pending 1", "withdrawn: RequestCancelled", "not sent:"],
        "providers": ["protocol version 2"],
    }[name]
    for line in expected:
        assert line in out, out


def test_both_examples_are_found() -> None:
    assert set(EXAMPLES) == {"connect", "providers", "sessions"}
