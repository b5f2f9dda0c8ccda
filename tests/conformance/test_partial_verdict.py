"""A verdict says what it covers: a run of a subset (``--check``, ``--area``, ``--tier``) is never CONFORMANT; it
ends ``partial`` naming the checks not run (exit 4), unless what ran decides against the agent (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.run import RunOptions, run
from acp_conformance.runner.tiers import classify
from acp_conformance.runner.verdict import judge

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, "-m", "acp_conformance.agent"]
SCHEMA = json.loads(
    (ROOT / "conformance" / "acp_conformance" / "runner" / "report.schema.json").read_text(encoding="utf-8")
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", "--agent", " ".join(AGENT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    proc = _cli(*args, "--json")
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)
    return proc.returncode, report


def test_one_check_is_a_partial_verdict_naming_what_was_not_run() -> None:
    every = [c.id for c in CHECK_SETS[2]]
    proc = _cli("--check", "initialize")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "CONFORMANT" not in proc.stdout
    assert f"VERDICT: PARTIAL: 1 of {len(every)} checks run (--check initialize)" in proc.stdout
    listed = proc.stdout[proc.stdout.index("  not run (") :]
    assert f"not run ({len(every) - 1}):" in listed and "framing" in listed and "background-work" in listed
    code, report = _json("--check", "initialize")
    verdict = report["verdict"]
    assert code == 4 and verdict["verdict"] == "partial" and verdict["conformant"] is None
    assert verdict["checks_run"] == 1 and verdict["checks_total"] == len(every)
    assert verdict["selection"] == "--check initialize"
    assert sorted(verdict["not_run"]) == sorted(set(every) - {"initialize"})


def test_the_whole_set_is_conformant_and_names_nothing_not_run() -> None:
    """Naming every check is no subset: the verdict can be conformant again."""
    args = [a for c in CHECK_SETS[2] for a in ("--check", c.id)]
    code, report = _json(*args)
    assert code == 0 and report["verdict"]["verdict"] == "conformant" and report["verdict"]["conformant"] is True
    assert report["verdict"]["not_run"] == [] and report["verdict"]["checks_run"] == len(CHECK_SETS[2])


def test_a_failure_in_a_subset_is_non_conformant_and_says_the_run_was_partial() -> None:
    proc = _cli("--agent", f"{' '.join(AGENT)} --broken junk-stdout", "--check", "framing", "--timeout", "3")
    assert proc.returncode == 1
    assert f"VERDICT: NON_CONFORMANT (1 of {len(CHECK_SETS[2])} checks run: --check framing)" in proc.stdout


def test_a_baselined_failure_in_a_subset_is_partial_not_conformant(tmp_path: Path) -> None:
    known = tmp_path / "known.json"
    known.write_text(json.dumps({"expectedFailures": {"framing": "the banner is a known bug"}}))
    broken = f"{' '.join(AGENT)} --broken junk-stdout"
    code, report = _json("--agent", broken, "--check", "framing", "--timeout", "3", "--baseline", str(known))
    assert code == 4 and report["verdict"]["verdict"] == "partial" and report["baseline"]["known"] == ["framing"]
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"expectedFailures": {"initialize": "fixed since"}}))
    code, report = _json("--check", "initialize", "--baseline", str(stale))
    assert code == 1 and report["baseline"]["stale"] == ["initialize"]  # a stale entry still fails the run


@pytest.mark.anyio
async def test_area_and_tier_choose_a_subset_and_narrow_each_other() -> None:
    report = await run(RunOptions(AGENT, areas=["initialization"], tiers=["MANDATORY"], jobs=2))
    ran = {r.id for r in report.results}
    expected = {
        c.id for c in CHECK_SETS[2] if c.area == "initialization" and classify(2, c.id).tier.value == "MANDATORY"
    }
    assert ran == expected and "auth-methods" not in ran  # CAPABILITY, so not chosen
    verdict = judge(report)
    assert verdict.verdict == "partial" and not verdict.conformant
    assert verdict.coverage.selection == "--area initialization --tier MANDATORY"
    assert set(verdict.coverage.not_run) == {c.id for c in CHECK_SETS[2]} - expected


def test_area_and_tier_options_are_checked() -> None:
    proc = _cli("--area", "no-such-area")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = _cli("--area", "prompt-turn", "--tier", "advisory", "--check", "initialize")
    assert proc.returncode == 4 and "0 of" in proc.stdout  # initialize is neither in that area nor that tier
