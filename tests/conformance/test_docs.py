"""docs/conformance.md lists every check and accounts for every agent-side rule of rules-v2.md."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.agent.scenarios import SCENARIOS
from conformance.runner.checks import CHECKS

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT.parent / "shared" / "spec" / "rules-v2.md"
DOC = (ROOT / "docs" / "conformance.md").read_text()


def _doc_rule_rows() -> dict[str, str]:
    rows = {}
    for line in DOC.splitlines():
        match = re.match(r"^\| (ACP2-\d{3}) \| (\w+) \| (.+) \|$", line)
        if match:
            rows[match[1]] = match[3]
    return rows


def test_every_check_is_documented_with_its_rules() -> None:
    for check in CHECKS:
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{check.id}` |")), None)
        assert row is not None, check.id
        for rule in check.rules:
            assert rule in row, (check.id, rule)


def test_every_agent_rule_is_checked_or_explained() -> None:
    if not RULES.exists():
        return  # the shared spec folder is not part of every checkout
    agent_rules = re.findall(r"^\| (ACP2-\d{3}) \| [^|]+ \| (?:agent|both) \|", RULES.read_text(), re.MULTILINE)
    rows = _doc_rule_rows()
    assert sorted(set(agent_rules) - set(rows)) == []
    cited = {rule for check in CHECKS for rule in check.rules}
    for rule, text in rows.items():
        if text.startswith("Not "):  # "Not observable: ...", "Not applicable: ...", "Not checked yet: ..."
            assert rule not in cited, f"{rule} is cited by a check but the doc says it is not checked"
            continue
        checks = [n for n in re.findall(r"`([a-z-]+)`", text) if n in {c.id for c in CHECKS}]
        assert checks, (rule, text)
        for check_id in checks:
            assert rule in next(c for c in CHECKS if c.id == check_id).rules, (rule, check_id)


def test_reference_agent_doc_lists_every_scenario() -> None:
    doc = (ROOT / "docs" / "reference-agent.md").read_text()
    for name in SCENARIOS:
        assert f"/{name}" in doc, name
