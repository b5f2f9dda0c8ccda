"""docs/embedding.md: its example runs unchanged against the bundled reference agent and prints what the doc says;
the logger names it documents are every one the library uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.schema_source import REPO

DOC = (REPO / "docs" / "embedding.md").read_text(encoding="utf-8")
EXAMPLES = dict(re.findall(r"```python\n# example: (\w+)\n(.*?)```", DOC, re.DOTALL))


def test_the_editor_example_prints_what_the_doc_shows(tmp_path: Path) -> None:
    assert set(EXAMPLES) == {"editor"}
    script = tmp_path / "editor.py"
    script.write_text(EXAMPLES["editor"])
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path, check=True
    ).stdout.splitlines()
    shown = re.search(r"It prints .*?```text\n(.*?)```", DOC, re.DOTALL)
    assert shown is not None
    expected = shown.group(1).splitlines()
    # In wire order: the tool call, then the question about it (issue 52 item 10).
    assert out == expected, out


def test_every_logger_is_documented() -> None:
    names = set()
    for path in (REPO / "acp_session").rglob("*.py"):
        names.update(re.findall(r'logging\.getLogger\("([\w.]+)"\)', path.read_text(encoding="utf-8")))
    documented = set(re.findall(r"^\| `(acp_session[\w.]*)` \|", DOC, re.MULTILINE))
    assert names and names == documented
