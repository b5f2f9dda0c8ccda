"""docs/rules.md (Conversation state section) names real tests that cite the rule they cover."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
DOC = HERE.parent.parent / "docs" / "rules.md"
ROW = re.compile(r"^\| (ACP2-\d{3}) \| (client|both) \| (.*) \|$")
TEST_REF = re.compile(r"`(test_\w+\.py)::(test_\w+)`")


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Conversation state (SessionState)")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def functions(file_name: str) -> dict[str, str]:
    source = (HERE / file_name).read_text(encoding="utf-8")
    tree = ast.parse(source)
    return {
        node.name: ast.get_source_segment(source, node) or ""
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_every_cited_test_exists_and_mentions_its_rule() -> None:
    rows = [ROW.match(line) for line in section().splitlines()]
    rows_found = [row for row in rows if row is not None]
    assert len(rows_found) >= 20
    for row in rows_found:
        rule, _side, cell = row.groups()
        refs = TEST_REF.findall(cell)
        if not refs:
            assert "No code" in cell, f"{rule} has neither a test nor a reason"
            continue
        mentioned = False
        for file_name, name in refs:
            source = functions(file_name).get(name)
            assert source is not None, f"{rule}: {file_name}::{name} does not exist"
            mentioned = mentioned or rule in source
        if "No code" not in cell:
            assert mentioned, f"{rule}: none of the listed tests cites it"


def test_every_rule_cited_in_a_test_is_listed() -> None:
    listed = {match.group(1) for line in section().splitlines() if (match := ROW.match(line))}
    cited: set[str] = set()
    for path in HERE.glob("test_*.py"):
        if path.name != Path(__file__).name:
            cited |= set(re.findall(r"ACP2-\d{3}", path.read_text(encoding="utf-8")))
    agent_side = {"ACP2-044", "ACP2-096"}  # agent rules whose client handling is tested; listed in the prose
    assert cited - agent_side <= listed
