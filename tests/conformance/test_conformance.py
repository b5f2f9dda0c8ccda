"""The conformance runner against the reference agent and its deliberately broken variants (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import anyio
import pytest

from conformance.runner.checks import CHECKS
from conformance.runner.run import CheckResult, run_checks

AGENT = f"{sys.executable} -m conformance.agent"
ROOT = Path(__file__).resolve().parents[2]

# Which checks each broken variant must fail, and the rule the failure message must name.
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "never-idle": {
        "turn-lifecycle": "ACP2-050",
        "stop-reason": "ACP2-050",
        "cancel-turn": "ACP2-093",
        "cancel-permission": "ACP2-093",
        "close-active-work": "ACP2-075",
    },
    "no-message-id": {"prompt-accepted": "ACP2-064", "close-active-work": "ACP2-077"},
    "junk-stdout": {"framing": "transports.mdx#stdio"},
    "ignore-cancel": {
        "cancel-turn": "ACP2-093",
        "cancel-permission": "ACP2-003",
        "cancel-held-prompts": "schema:ClientNotification(session/cancel)",
    },
}
# Checks that exercise the same machinery as the expected failures and must still pass, so a variant is
# shown to fail only where it should. ACP_CONFORMANCE_FULL=1 runs every check for every variant instead.
MUST_STILL_PASS = (
    "framing",
    "prompt-accepted",
    "user-message-echo",
    "close",
    "resume",
    "permission-flow",
    "held-prompt-cancel-request",
)


def _run(argv: str, only: list[str]) -> list[CheckResult]:
    return anyio.run(lambda: run_checks(argv.split(), only=only, jobs=6))


def test_cli_against_reference_agent_passes_every_check(tmp_path: Path) -> None:
    junit_file = tmp_path / "junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.runner", "--agent", AGENT, "--json", "--junit", str(junit_file)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    report = json.loads(proc.stdout)
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] == "fail"}
    assert failed == {}
    assert proc.returncode == 0
    results = {c["id"]: c["result"] for c in report["checks"]}
    assert set(results) == {c.id for c in CHECKS}
    # The reference agent advertises no auth methods; everything else applies to it.
    assert {k for k, v in results.items() if v == "n/a"} == {"auth-methods"}
    suite = ElementTree.parse(junit_file).getroot()
    assert suite.get("tests") == str(len(CHECKS)) and suite.get("failures") == "0" and suite.get("skipped") == "1"


@pytest.mark.parametrize("mode", sorted(EXPECTED_FAILURES))
def test_broken_variant_fails_exactly_its_checks(mode: str) -> None:
    expected = EXPECTED_FAILURES[mode]
    full = os.environ.get("ACP_CONFORMANCE_FULL") == "1"
    only = [] if full else sorted(set(expected) | set(MUST_STILL_PASS))
    results = _run(f"{AGENT} --broken {mode}", only)
    failed = {r.id: r.message for r in results if r.status == "fail"}
    assert set(failed) == set(expected), failed
    for check_id, rule in expected.items():
        assert failed[check_id].startswith(f"{rule}:"), (check_id, failed[check_id])


def test_cli_exit_code_and_table_for_a_failing_agent() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.runner", "--agent", f"{AGENT} --broken junk-stdout", "--check", "framing"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 1
    assert "FAIL" in proc.stdout and "transports.mdx#stdio" in proc.stdout
    assert "0 passed, 1 failed, 0 not applicable" in proc.stdout


def test_cli_rejects_a_missing_agent_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.runner", "--agent", "/nonexistent/acp-agent"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode != 0 and "not found" in proc.stderr


def test_foreign_agent_gets_not_applicable_for_scenario_checks(tmp_path: Path) -> None:
    """An agent that is not the reference agent is never driven with its scenarios."""
    wrapper = tmp_path / "other_agent.py"
    wrapper.write_text(
        "import conformance.agent as a, conformance.agent.server as s\n"
        "s.AGENT_NAME = 'some-other-agent'\n"
        "from conformance.agent.__main__ import main\n"
        "main()\n"
    )
    env_argv = f"{sys.executable} {wrapper}"
    results = {r.id: r for r in _run(env_argv, ["cancel-turn", "background-work", "stop-reason"])}
    assert results["cancel-turn"].status == "n/a"
    assert results["background-work"].status == "n/a"
    assert results["stop-reason"].status == "pass"  # the generic part still runs
