"""docs/conformance.md lists every check of both sets with its rules, accounts for every agent-side rule of
rules-v2.md and rules-v1.md, and documents every scenario name; the reference agent's file is valid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acp_conformance.agent.scenarios import SCENARIOS
from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import KIT, kit_rows, kit_table
from acp_conformance.runner.registry import in_report_order
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, SCENARIO_HELP, load_scenarios
from acp_conformance.runner.tiers import CLASSIFICATIONS

from .doc_tables import documented

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "spec"
DOC = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
SECTIONS = {2: "## Checks for protocol v2 agents", 1: "## Checks for protocol v1 agents"}
RULE_SECTIONS = {2: "## Agent rules of rules-v2.md", 1: "## Agent rules of rules-v1.md"}


def _section(heading: str) -> str:
    start = DOC.index(heading)
    end = DOC.find("\n## ", start + len(heading))
    return DOC[start : end if end >= 0 else None]


def _doc_rule_rows(version: int) -> dict[str, str]:
    rows = {}
    for line in _section(RULE_SECTIONS[version]).splitlines():
        match = re.match(rf"^\| (ACP{version}-\d{{3}}) \| (\w+) \| (.+) \|$", line)
        if match:
            rows[match[1]] = match[3]
    return rows


@pytest.mark.parametrize("version", [2, 1])
def test_every_check_is_documented_with_its_rules(version: int) -> None:
    section = _section(SECTIONS[version])
    ids = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE)
    assert ids == [c.id for c in in_report_order(CHECK_SETS[version])]
    for check in CHECK_SETS[version]:
        row = next(line for line in section.splitlines() if line.startswith(f"| `{check.id}` |"))
        assert f"| {check.area} |" in row, check.id
        assert f"| {check.title} |" in row, check.id
        assert f"| {', '.join(check.rules)} |" in row, check.id
        for name in (*check.scenarios, *check.optional_scenarios):
            assert f"`{name}`" in row, (check.id, name)


@pytest.mark.parametrize("version", [2, 1])
def test_every_agent_rule_is_checked_or_explained(version: int) -> None:
    rules_file = SPEC / f"rules-v{version}.md"
    if not rules_file.exists():
        pytest.skip("the shared spec folder is not part of this checkout")
    agent_rules = re.findall(
        rf"^\| (ACP{version}-\d{{3}}) \| [^|]+ \| (?:agent|both) \|", rules_file.read_text(), re.MULTILINE
    )
    rows = _doc_rule_rows(version)
    assert sorted(set(agent_rules) - set(rows)) == []
    checks = CHECK_SETS[version]
    cited = {rule for check in checks for rule in check.rules}
    # Every ACPn rule a check cites is in the table, with that check named.
    assert sorted(r for r in cited if r.startswith(f"ACP{version}-") and r not in rows) == []
    for rule, text in rows.items():
        if text.startswith("Not "):  # "Not observable: ...", "Not applicable: ...", "Not checked yet: ..."
            assert rule not in cited, f"{rule} is cited by a check but the doc says it is not checked"
            continue
        named = [n for n in re.findall(r"`([a-z0-9-]+)`", text) if n in {c.id for c in checks}]
        assert named, (rule, text)
        for check_id in named:
            check = next(c for c in checks if c.id == check_id)
            assert rule in check.rules or check_id == "unsupported-content", (rule, check_id)


def test_scenario_names_are_documented_and_the_reference_file_is_valid() -> None:
    section = _section("## Scenario files")
    for name in SCENARIO_HELP:
        assert f"`{name}`" in section, name
    scenarios = load_scenarios(REFERENCE_SCENARIOS)
    assert set(scenarios.entries) == set(SCENARIO_HELP)
    for scenario in scenarios.entries.values():
        word = scenario.prompt.split()[0]
        assert word.startswith("/") and word[1:] in SCENARIOS, scenario  # a scenario the reference agent has


def test_results_tables_cover_every_check() -> None:
    for heading, version in (("### Results: protocol v2 agents", 2), ("### Results: protocol v1 agents", 1)):
        columns = ("reference agent",) if version == 2 else ("v1 test agent + scenarios",)
        for column in columns:
            assert list(documented(heading, column)) == [c.id for c in in_report_order(CHECK_SETS[version])]


def test_reference_agent_doc_lists_every_scenario() -> None:
    doc = (ROOT / "docs" / "reference-agent.md").read_text()
    for name in SCENARIOS:
        assert f"/{name}" in doc, name


@pytest.mark.parametrize("version", [2, 1])
def test_every_kit_id_is_checked_or_explained_and_the_doc_lists_it(version: int) -> None:
    """docs/conformance.md has one row per id of the official kit's registry (v1 and v2): the checks judging it, or
    why it is NOT_TESTED; the rows are kit.py's, and the ids the checks map to are the kit's."""
    rows = kit_rows(version)
    assert [r.id for r in rows] == list(KIT[version])
    for row in rows:
        assert bool(row.checks) != bool(row.reason), row  # a check, or a reason: never both, never neither
        for check_id in row.checks:
            assert check_id in {c.id for c in CHECK_SETS[version]}, row
    mapped = {r for entry in CLASSIFICATIONS[version].values() for r in entry.requirements}
    assert mapped <= set(KIT[version]), sorted(mapped - set(KIT[version]))
    start = DOC.index(f"<!-- kit-v{version} -->\n") + len(f"<!-- kit-v{version} -->\n")
    end = DOC.index(f"\n<!-- /kit-v{version} -->")
    assert DOC[start:end] == kit_table(version), "regenerate: python -m acp_conformance.runner.kit"
    documented_ids = re.findall(r"^\| (ACP-[A-Z0-9-]+) \|", DOC[start:end], re.MULTILINE)
    assert documented_ids == list(KIT[version])


@pytest.mark.parametrize("version", [2, 1])
def test_no_kit_id_is_left_not_checked_yet(version: int) -> None:
    """Every kit id a client can observe is judged; the rest say why they cannot be (issue 50)."""
    assert [r.id for r in kit_rows(version) if "not checked yet" in r.reason] == []
    start = DOC.index(f"<!-- kit-v{version} -->\n")
    assert "not checked yet" not in DOC[start : DOC.index(f"\n<!-- /kit-v{version} -->")].lower()
