"""The conformance runner against the reference agent (v2) and its deliberately broken variants (real subprocesses)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import anyio
import pytest

from acp_conformance.runner.checks import CHECK_SETS, CHECKS
from acp_conformance.runner.report import junit, table, to_json
from acp_conformance.runner.run import RunOptions, RunReport, run
from acp_conformance.runner.scenarios import REFERENCE_SCENARIOS, ScenarioError, load_scenarios

from .doc_tables import documented

AGENT = f"{sys.executable} -m acp_conformance.agent"
ROOT = Path(__file__).resolve().parents[2]

# The reference agent offers no login and no image or audio prompts (--all-capabilities does), and sends no
# config_option_update: the checks of those have nothing to observe. Everything else applies, scenarios included.
REFERENCE_NOT_APPLICABLE = {
    "auth-methods",
    "auth-method-ids",
    "auth-method-types",
    "terminal-auth-methods",
    "prompt-image",
    "prompt-audio",
    "config-option-update",
}


def _run(argv: str, **options: object) -> RunReport:
    return anyio.run(lambda: run(RunOptions(argv.split(), **options)))  # type: ignore[arg-type]


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def test_cli_against_reference_agent_passes_every_check_fast(tmp_path: Path) -> None:
    junit_file = tmp_path / "junit.xml"
    proc = _cli("--agent", AGENT, "--json", "--junit", str(junit_file))
    report = json.loads(proc.stdout)
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] in ("fail", "warn")}
    assert failed == {}
    assert proc.returncode == 0
    assert report["protocolVersion"] == 2 and report["checkSet"] == "v2"
    assert report["agentInfo"]["name"] == "acp-reference-agent"
    assert report["scenarios"]["file"] == str(REFERENCE_SCENARIOS)  # its own file, found by itself
    results = {c["id"]: c["result"] for c in report["checks"]}
    assert set(results) == {c.id for c in CHECKS}
    assert {k for k, v in results.items() if v == "n/a"} == REFERENCE_NOT_APPLICABLE
    # Speed: the whole run (109 checks, every agent process) takes about 1.5 s on an idle 2-core machine; the bound
    # is generous, since the suite's parallel workers (the mutation runs above all) slow it several times over.
    assert report["seconds"] < 15, report["seconds"]
    assert all(isinstance(c["seconds"], float) for c in report["checks"])
    assert report["processes"] < len(CHECKS) / 2  # processes are shared between checks
    used = {c["id"]: c["scenarios"] for c in report["checks"]}
    assert used["cancel-turn"] == ["long_turn: '/slow 40'"]
    assert used["permission-flow"] == ["permission: '/permission'"]
    suite = ElementTree.parse(junit_file).getroot()
    skipped = str(len(REFERENCE_NOT_APPLICABLE))
    assert suite.get("tests") == str(len(CHECKS)) and suite.get("failures") == "0" and suite.get("skipped") == skipped
    assert suite.get("name") == "acp-conformance v2"


def test_text_report_groups_by_area_and_prints_the_rerun_command() -> None:
    proc = _cli("--agent", f"{AGENT} --broken junk-stdout", "--timeout", "3")
    assert proc.returncode == 1
    out = proc.stdout
    assert "ACP conformance (v2 check set)" in out
    for area in ("Transport", "Initialization", "Sessions", "Prompt turn", "Cancellation", "Close and resume"):
        assert f"\n{area}\n" in out
    assert out.index("\nTransport\n") < out.index("framing") < out.index("\nInitialization\n")
    assert re.search(r"^  FAIL +framing ", out, re.MULTILINE) and "transports.mdx#stdio: stdout line 1" in out
    rerun = f"rerun: acp-conformance --agent '{AGENT} --broken junk-stdout' --timeout 3 --check framing"
    assert rerun in out
    n_a = len(REFERENCE_NOT_APPLICABLE)
    assert f"{len(CHECKS) - n_a - 1} passed (0 with warnings), 1 failed, {n_a} skipped" in out
    # The printed command runs that one check.
    again = _cli("--agent", f"{AGENT} --broken junk-stdout", "--timeout", "3", "--check", "framing")
    assert again.returncode == 1 and "0 passed (0 with warnings), 1 failed" in again.stdout


def test_cli_rejects_a_missing_agent_command_and_bad_arguments(tmp_path: Path) -> None:
    proc = _cli("--agent", "/nonexistent/acp-agent", timeout=30)
    assert proc.returncode != 0 and "not found" in proc.stderr
    proc = _cli("--agent", AGENT, "--check", "no-such-check", timeout=30)
    assert proc.returncode == 2 and "unknown check" in proc.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[long_trun]\nprompt = "x"\n')
    proc = _cli("--agent", AGENT, "--scenarios", str(bad), timeout=30)
    assert proc.returncode == 2 and "unknown scenario 'long_trun'" in proc.stderr
    proc = _cli("--agent", AGENT, "--env", "ACP_CONFORMANCE_SURELY_UNSET", timeout=30)
    assert proc.returncode == 2 and "not set" in proc.stderr


def test_scenario_files(tmp_path: Path) -> None:
    scenarios = load_scenarios(REFERENCE_SCENARIOS)
    assert scenarios.entries["long_turn"].prompt == "/slow 40" and scenarios.entries["long_turn"].timeout == 5
    short = tmp_path / "short.toml"
    short.write_text('timeout = 7\npermission = "ask me {cwd}"\n[plan]\nprompt = "plan it"\ntimeout = 2.5\n')
    loaded = load_scenarios(short)
    assert loaded.entries["permission"].timeout == 7 and loaded.entries["plan"].timeout == 2.5
    assert loaded.entries["permission"].text("/work") == "ask me /work"
    for text, error in (
        ('[plan]\nprompt = ""\n', "non-empty prompt"),
        ('[plan]\nprompt = "p"\ntimeout = 0\n', "positive number"),
        ('[plan]\nprompt = "p"\nwait = 3\n', "unknown keys"),
        ("plan = 3\n", "must be a prompt string"),
        ("not toml = = 1\n", "not valid TOML"),
    ):
        short.write_text(text)
        with pytest.raises(ScenarioError, match=error):
            load_scenarios(short)


def test_other_agent_needs_a_scenario_file(tmp_path: Path) -> None:
    """An agent that is not the reference agent is driven with scenarios only from a file the user passes."""
    wrapper = tmp_path / "other_agent.py"
    wrapper.write_text(
        "import acp_conformance.agent.server as s\n"
        "s.AGENT_NAME = 'some-other-agent'\n"
        "from acp_conformance.agent.__main__ import main\n"
        "main()\n"
    )
    argv = f"{sys.executable} {wrapper}"
    only = ["cancel-turn", "background-work", "stop-reason", "permission-flow"]
    results = {r.id: r for r in _run(argv, only=only).results}
    assert results["cancel-turn"].status == "n/a" and "long_turn scenario" in results["cancel-turn"].message
    assert results["background-work"].status == "n/a"
    assert results["stop-reason"].status == "pass" and results["stop-reason"].message == "end_turn"
    with_file = _run(argv, only=only, scenarios=load_scenarios(REFERENCE_SCENARIOS))
    assert {r.id: r.status for r in with_file.results} == dict.fromkeys(only, "pass")
    assert with_file.scenarios.source == str(REFERENCE_SCENARIOS)


def test_reports_render_every_format() -> None:
    report = _run(AGENT, only=["initialize", "cancel-turn", "auth-methods"])
    base = ["acp-conformance", "--agent", AGENT]
    text = table(report, base)
    assert re.search(r"^  PASS +initialize ", text, re.MULTILINE)
    assert re.search(r"^  SKIPPED +auth-methods ", text, re.MULTILINE)
    assert "scenario long_turn: '/slow 40'" in text
    data = json.loads(to_json(report, base))
    assert data["summary"] == {"pass": 2, "fail": 0, "warn": 0, "n/a": 1}
    assert data["checks"][0]["rerun"].endswith("--check initialize")
    assert ElementTree.fromstring(junit(report)).get("tests") == "3"


def test_check_sets_have_unique_ids_and_cite_rules() -> None:
    for version, checks in CHECK_SETS.items():
        ids = [c.id for c in checks]
        assert len(ids) == len(set(ids)), version
        for c in checks:
            assert c.rules, c.id
            prefix = f"ACP{version}-"
            assert all(not r.startswith("ACP") or r.startswith(prefix) for r in c.rules), (c.id, c.rules)


@pytest.mark.anyio
async def test_runner_on_both_backends() -> None:
    """The runner is anyio code: a full v2 run and a full v1 run pass on asyncio and on trio."""
    v2 = await run(RunOptions(AGENT.split()))
    assert v2.version == 2 and {r.id for r in v2.results if r.status != "pass"} == REFERENCE_NOT_APPLICABLE
    v1_agent = [sys.executable, str(ROOT / "tests" / "conformance" / "v1_agent.py")]
    v1_file = load_scenarios(ROOT / "tests" / "conformance" / "v1_agent.toml")
    v1 = await run(RunOptions(v1_agent, scenarios=v1_file))
    assert v1.version == 1 and {r.id for r in v1.results if r.status != "pass"} == {
        "auth-methods",
        "auth-method-ids",
        "auth-login",
        "additional-directories",
        "unsupported-content",
        "prompt-image",
        "prompt-audio",
        "elicitation-gated",
    }


def test_agents_that_cannot_be_checked_get_one_line() -> None:
    """An agent that exits at once fails initialize (exit 1); one without the offered version is not checked (3)."""
    proc = _cli("--agent", "sh -c 'exit 3'", "--json", timeout=30)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1
    # Which end of the pipe the runner finds closed first is a race (writing initialize, or reading its answer);
    # either way the report says the agent exited, with its exit code.
    assert report["problem"] in (
        "transports.mdx#stdio: the agent closed its stdin (it exited) (exit code 3)",
        "initialization.mdx#initialization: the agent exited (closed its stdout) before answering initialize"
        " (exit code 3)",
    ) or report["problem"].startswith("transports.mdx#stdio: the agent closed its stdin (it exited) (exit code 3)")
    failed = [c["id"] for c in report["checks"] if c["result"] == "fail"]
    assert failed == ["initialize"]
    assert all(c["message"].startswith("not run:") for c in report["checks"] if c["id"] != "initialize")
    proc = _cli("--agent", f"{AGENT} --protocol-versions 2", "--protocol", "1", timeout=30)  # a v2-only agent
    assert proc.returncode == 3
    assert "NOT CHECKED: the agent does not speak protocol version 1 or older" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_the_reference_agent_passes_acp_conformance_on_v1_too() -> None:
    """Offered version 1 the reference agent speaks v1 (v1_front.py) and passes the v1 check set: the documented
    results, with fs/*, terminal/*, session/load and modes exercised."""
    proc = _cli("--agent", AGENT, "--protocol", "1", "--json")
    report = json.loads(proc.stdout)
    assert report["protocolVersion"] == 1 and report["checkSet"] == "v1"
    failed = {c["id"]: c["message"] for c in report["checks"] if c["result"] in ("fail", "warn")}
    assert failed == {} and proc.returncode == 0, failed
    assert report["verdict"]["verdict"] == "conformant"
    results = {c["id"]: c["result"] for c in report["checks"]}
    assert results == documented("### Results: protocol v1 agents", "reference agent")
    passed = {k for k, v in results.items() if v == "pass"}
    assert {"client-fs", "client-terminals", "fs-gated", "terminal-gated", "elicitation-gated"} <= passed
    assert {
        "session-load",
        "load-replay",
        "session-modes",
        "distinct-session-ids",
        "notifications-unanswered",
    } <= passed
