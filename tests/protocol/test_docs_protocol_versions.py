"""The example in docs/protocol-versions.md runs unchanged (no arguments: the bundled reference agent)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.schema_source import REPO

BLOCK = re.compile(r"```python\n# example: (\w+)\n(.*?)```", re.DOTALL)
EXAMPLES = dict(BLOCK.findall((REPO / "docs" / "protocol-versions.md").read_text()))


def test_the_versions_example_runs(tmp_path: Path) -> None:
    assert set(EXAMPLES) == {"versions", "preview"}
    script = tmp_path / "versions.py"
    script.write_text(EXAMPLES["versions"])
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path, check=True
    ).stdout
    assert out.splitlines() == [
        "protocol version 2",
        "Hello! I am the ACP reference agent. Type `/help` to see what I can demonstrate.",
    ]


def test_the_preview_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "preview.py"
    script.write_text(EXAMPLES["preview"])
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True
    ).stdout
    assert out.splitlines() == [
        "fork offered: True ['append', 'override']",
        "turn usage: 150",
        "forked with 2 messages",
        "subagent Explorer 3 entries, 30 tokens",
    ]
