"""Tiers, the verdict, the JSON report's schema and baselines (known, new, stale), on real runs of the runner
against the reference agent and its broken variants."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.kit import kit_rows
from acp_conformance.runner.run import CheckResult, RunReport
from acp_conformance.runner.tiers import CLASSIFICATIONS, Tier, classify, requirement_table
from acp_conformance.runner.verdict import judge

ROOT = Path(__file__).resolve().parents[2]
AGENT = f"{sys.executable} -m acp_conformance.agent"
JUNK = f"{AGENT} --broken junk-stdout"  # fails framing (MANDATORY) and nothing else
SCHEMA = json.loads(
    (ROOT / "conformance" / "acp_conformance" / "runner" / "report.schema.json").read_text(encoding="utf-8")
)
DOC = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def _json_run(*args: str) -> tuple[int, dict[str, Any]]:
    proc = _cli(*args, "--json")
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)  # every report these tests see is held to the documented schema
    return proc.returncode, report


@pytest.mark.parametrize("version", [2, 1])
def test_every_check_has_a_tier_and_the_doc_table_is_generated_from_them(version: int) -> None:
    ids = {c.id for c in CHECK_SETS[version]}
    assert set(CLASSIFICATIONS[version]) == ids
    for check_id in ids:
        for requirement in classify(version, check_id).requirements:
            assert re.fullmatch(r"ACP-[A-Z]+(-[A-Z]+)?-\d{3}", requirement), requirement
    start = DOC.index(f"<!-- tiers-v{version} -->\n") + len(f"<!-- tiers-v{version} -->\n")
    end = DOC.index(f"\n<!-- /tiers-v{version} -->")
    assert DOC[start:end] == requirement_table(version), "regenerate: python -m acp_conformance.runner.tiers"


def test_a_failing_report_carries_tier_ids_transcript_and_stderr_and_validates() -> None:
    code, report = _json_run("--agent", JUNK, "--check", "framing", "--check", "initialize", "--timeout", "3")
    assert code == 1
    assert report["verdict"]["verdict"] == "non_conformant" and report["verdict"]["deciding"] == ["framing"]
    assert report["verdict"]["tier_counts"]["MANDATORY"] == {"PASS": 1, "FAIL": 1, "SKIPPED": 0, "NOT_TESTED": 0}
    checks = {c["id"]: c for c in report["checks"]}
    framing = checks["framing"]
    assert framing["status"] == "FAIL" and framing["tier"] == "MANDATORY"
    assert framing["ruleIds"] == ["ACP2-004"] and framing["requirements"] == ["ACP-TRANSPORT-201"]
    assert framing["transcript"], framing
    sent = [w for w in framing["transcript"] if w["direction"] == "sent"]
    assert any('"method":"session/new"' in w["line"] for w in sent)
    assert any(w["direction"] == "received" for w in framing["transcript"])
    assert isinstance(framing["stderrTail"], list)
    assert checks["initialize"]["transcript"] is None and checks["initialize"]["stderrTail"] is None
    # The kit's view: every id of its v2 registry, with the kit's tier and the worst status of the checks judging
    # it, or NOT_TESTED and why (kit.py).
    requirements = report["requirements"]
    assert requirements["ACP-TRANSPORT-201"] == {"tier": "MANDATORY", "status": "FAIL", "checks": ["framing"]}
    assert requirements["ACP-INIT-001"] == {"tier": "MANDATORY", "status": "PASS", "checks": ["initialize"]}
    assert set(requirements) == {row.id for row in kit_rows(2)}
    assert requirements["ACP-INIT-202"]["status"] == "NOT_TESTED" and "-32022" in requirements["ACP-INIT-202"]["reason"]
    not_run = requirements["ACP-SESSION-001"]  # its check exists but was not selected
    assert not_run["status"] == "NOT_TESTED" and not_run["reason"] == "its checks (session-new) did not run"


def test_the_reference_agent_is_conformant_and_its_report_validates() -> None:
    code, report = _json_run("--agent", AGENT)
    assert code == 0 and report["verdict"]["verdict"] == "conformant" and report["verdict"]["deciding"] == []
    counts = report["verdict"]["tier_counts"]
    assert counts["MANDATORY"]["PASS"] > 0 and counts["MANDATORY"]["FAIL"] == counts["MANDATORY"]["NOT_TESTED"] == 0
    # No login advertised (auth-method-types, terminal-auth-methods; auth-methods), no image or audio prompts, no
    # config_option_update: nothing to observe.
    assert counts["MANDATORY"]["SKIPPED"] == 2 and counts["CAPABILITY"]["SKIPPED"] == 4
    assert report["seconds"] < 10


def test_a_version_the_agent_does_not_share_is_blocked_by_version_mismatch() -> None:
    code, report = _json_run("--agent", f"{AGENT} --protocol-versions 2", "--protocol", "1")  # a v2-only agent
    assert code == 3
    assert report["verdict"]["verdict"] == "blocked_by_version_mismatch"
    assert report["verdict"]["blocked_by_version_mismatch"] is True


def test_expect_version_blocks_an_agent_that_agrees_to_another_one() -> None:
    v1_agent = f"{sys.executable} {ROOT / 'tests' / 'conformance' / 'v1_agent.py'}"
    code, report = _json_run("--agent", v1_agent, "--expect-version", "2", "--check", "initialize")
    assert code == 3 and report["protocolVersion"] == 1 and report["expectedVersion"] == 2
    assert report["verdict"]["verdict"] == "blocked_by_version_mismatch"
    assert [c["status"] for c in report["checks"]] == ["PASS"]  # its v1 checks still ran
    proc = _cli("--agent", v1_agent, "--expect-version", "2", "--check", "initialize")
    assert "VERSION MISMATCH: --expect-version 2, the agent agreed to version 1" in proc.stdout
    code, report = _json_run("--agent", v1_agent, "--expect-version", "1", "--check", "initialize")
    assert code == 4 and report["verdict"]["verdict"] == "partial"  # the version is right; one check is no verdict


def _report(results: list[tuple[str, str, str | None]], **extra: Any) -> RunReport:
    return RunReport(
        ["agent"],
        [CheckResult(i, i, (), status, "", 0.0, blocked=blocked) for i, status, blocked in results],
        version=2,
        check_set=2,
        **extra,
    )


def test_not_tested_counts_against_mandatory_only_and_advisory_never_decides() -> None:
    assert classify(2, "framing").tier is Tier.MANDATORY and classify(2, "close").tier is Tier.CAPABILITY
    assert classify(2, "unknown-method").tier is Tier.ADVISORY
    # A MANDATORY check that could not run (the agent opened no session) makes the run non-conformant ...
    verdict = judge(_report([("framing", "n/a", "session"), ("close", "n/a", "session")]))
    assert verdict.verdict == "non_conformant" and verdict.deciding == ["framing"]
    assert verdict.statuses == {"framing": "NOT_TESTED", "close": "NOT_TESTED"}
    # ... a CAPABILITY one not applicable does not, nor does an ADVISORY failure.
    verdict = judge(_report([("framing", "pass", None), ("close", "n/a", None), ("unknown-method", "fail", None)]))
    assert verdict.verdict == "conformant" and verdict.statuses["close"] == "SKIPPED"
    assert verdict.tier_counts["ADVISORY"]["FAIL"] == 1
    # A CAPABILITY failure decides.
    assert judge(_report([("close", "fail", None)])).deciding == ["close"]


def test_an_agent_that_could_not_be_checked_is_never_conformant() -> None:
    """Even when ``--check`` selected no MANDATORY row: exit 3 (not checked), not 0."""
    code, report = _json_run("--agent", "false", "--check", "session-new")
    assert report["problem"] is not None and report["verdict"]["verdict"] == "non_conformant"
    assert code == 3


def test_baseline_known_new_and_stale(tmp_path: Path) -> None:
    base = ("--agent", JUNK, "--check", "framing", "--check", "initialize", "--timeout", "3")
    known = tmp_path / "known.json"
    known.write_text(json.dumps({"expectedFailures": {"framing": "the banner is a known bug"}}))
    code, report = _json_run(*base, "--baseline", str(known))
    assert code == 4, report["verdict"]  # the known failure is excepted; two checks make a partial verdict
    assert report["verdict"]["verdict"] == "partial"
    assert report["baseline"] == {"known": ["framing"], "new": [], "stale": [], "unused": []}
    assert {c["id"]: c["baseline"] for c in report["checks"]} == {"framing": "known", "initialize": None}

    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"expectedFailures": {}}))
    code, report = _json_run(*base, "--baseline", str(empty))
    assert code == 1 and report["baseline"]["new"] == ["framing"]

    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"expectedFailures": {"framing": "known", "initialize": "fixed since"}}))
    proc = _cli(*base, "--baseline", str(stale))
    assert proc.returncode == 1
    assert "STALE baseline entries (now passing; remove them): initialize" in proc.stdout
    assert "known failures (baseline): framing" in proc.stdout
    code, report = _json_run(*base, "--baseline", str(stale))
    assert code == 1 and report["baseline"]["stale"] == ["initialize"] and report["verdict"]["verdict"] == "partial"


def test_write_baseline_then_run_with_it(tmp_path: Path) -> None:
    base = ("--agent", JUNK, "--check", "framing", "--check", "initialize", "--timeout", "3")
    written = tmp_path / "baseline.json"
    proc = _cli(*base, "--write-baseline", str(written))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(written.read_text())
    assert list(data["expectedFailures"]) == ["framing"]
    assert data["expectedFailures"]["framing"].startswith("transports.mdx#stdio: stdout line 1")
    assert _cli(*base, "--baseline", str(written)).returncode == 4  # nothing new fails; a partial run


def test_a_baseline_without_reasons_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"expectedFailures": {"framing": ""}}))
    proc = _cli("--agent", AGENT, "--baseline", str(bad))
    assert proc.returncode == 2 and "'framing' needs a reason" in proc.stderr
