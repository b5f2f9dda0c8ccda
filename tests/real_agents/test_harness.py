"""The real-agent suite's machinery (dev/real_agents/), run against light agents we have here.

The heavy agents themselves are checked by ``make real-agents``, outside CI; these tests only make sure the
checker reports each row right and never leaves a process behind.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from acp_session.transport import reaper_available
from dev.real_agents.check import CHECKS, AgentReport, Limits, Target, check_agent, keep_other_sections, render_markdown
from dev.real_agents.install import InstallError, install, outdated
from dev.real_agents.procs import scan
from dev.real_agents.table import DEFAULT_CACHE, AgentSpec, load_agents
from tests.interop.conftest import TS_V1_AGENT

AUTH_AGENT = Path(__file__).resolve().parent / "auth_agent.py"
LIMITS = Limits(initialize=30, request=10, prompt=20, close=5, exit_wait=1.0, poll_interval=0.05)
ENVIRON = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/nonexistent-caller-home", "LANG": "C.UTF-8"}


def statuses(report: AgentReport) -> dict[str, str]:
    return {name: report.cell(name).status for name in CHECKS}


def alive(pid: int) -> bool:
    proc = scan().get(pid)
    return proc is not None and proc.alive


def assert_all_gone(report: AgentReport) -> None:
    assert report.cell("no process left").status == "pass", report.cell("no process left")
    assert "all gone" in report.cell("no process left").text


# -- the table and the installer ---------------------------------------------------------------------------------


def test_agents_table_parses_and_pins_every_version() -> None:
    agents = load_agents()
    assert set(agents) == {"claude", "codex", "claude-v2", "codex-v2", "gemini", "opencode", "copilot", "sdk-example"}
    for agent in agents.values():
        major, minor, patch = agent.version.split(".")
        assert major.isdigit() and minor.isdigit() and patch.isdigit(), agent
        argv = agent.argv(DEFAULT_CACHE, node="node")
        assert all(os.path.isabs(arg) for arg in argv[:2] if "/" in arg), argv
        assert agent.spec == f"{agent.package}@{agent.version}"
    assert agents["claude"].credentials[0] == "ANTHROPIC_API_KEY"
    assert set(agents["codex"].credentials) == {"CODEX_API_KEY", "OPENAI_API_KEY"}
    assert (agents["claude-v2"].package, agents["claude-v2"].version) == (
        "@agentclientprotocol/claude-agent-acp",
        "0.101.0",
    )
    assert (agents["codex-v2"].package, agents["codex-v2"].version) == ("@agentclientprotocol/codex-acp", "2.6.0")
    assert agents["codex-v2"].login == {"CODEX_API_KEY": "api-key", "OPENAI_API_KEY": "api-key"}
    # Every agent but the SDK's example runs through its registry id (make real-agents, issue 29).
    assert {name: agent.registry for name, agent in agents.items()} == {
        "claude": "claude-acp",
        "codex": "codex-acp",
        "claude-v2": "claude-acp",
        "codex-v2": "codex-acp",
        "gemini": "gemini",
        "opencode": "opencode",
        "copilot": "github-copilot-cli",
        "sdk-example": None,
    }
    assert agents["gemini"].credentials == ("GEMINI_API_KEY",)
    assert agents["opencode"].credentials == ()  # none known: the note says so
    assert "No credential variable known" in agents["opencode"].note
    assert agents["sdk-example"].prompt == "always"


def _fake_install(cache: Path, spec: AgentSpec, version: str) -> None:
    package = cache / "node_modules" / spec.package
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": spec.package, "version": version}))


def test_install_runs_npm_only_for_missing_or_other_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = list(load_agents().values())
    for spec in agents:
        _fake_install(tmp_path, spec, spec.version)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no npm: nothing to install, so it is not needed
    assert outdated(agents, tmp_path) == []
    assert install(agents, tmp_path) == []

    other = tmp_path / "other"
    _fake_install(other, agents[0], "0.0.1")
    assert outdated(agents[:2], other) == agents[:2]  # one at another version, one missing
    with pytest.raises(InstallError, match="npm is not on PATH"):
        install(agents[:2], other)


# -- the checks, against light agents ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_official_sdk_example_agent(node: str) -> None:
    target = Target("sdk-example", [node, str(TS_V1_AGENT)], version="0.17.0", prompt="never")
    report = await check_agent(target, environ=ENVIRON, limits=LIMITS)
    assert statuses(report) == {**dict.fromkeys(CHECKS, "pass"), "prompt": "n/a"}, report.cells
    assert report.cell("protocol").text.startswith("v1")
    assert report.cell("auth methods").text == "none advertised"
    assert "CapabilityNotSupported" in report.cell("session/list").text  # no session/list advertised
    assert report.cell("close").text.startswith("closed locally (no session/close)")
    assert_all_gone(report)


@pytest.mark.anyio
async def test_reference_agent_with_a_prompt() -> None:
    target = Target("reference", [sys.executable, "-m", "acp_conformance.agent"], prompt="always")
    report = await check_agent(target, environ=ENVIRON, limits=LIMITS)
    assert statuses(report) == dict.fromkeys(CHECKS, "pass"), report.cells
    assert report.cell("protocol").text.startswith("v2")
    assert report.cell("session/new").text.startswith("session opened")
    assert "including the new session" in report.cell("session/list").text
    assert report.cell("prompt").text.startswith("stop reason end_turn")
    assert report.cell("close").text.startswith("session/close")
    assert_all_gone(report)


@pytest.mark.anyio
async def test_login_needing_agent_without_credentials(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    target = Target(
        "auth",
        [sys.executable, str(AUTH_AGENT), "--env-dump", str(dump)],
        credentials=("X_KEY",),
        login={"X_KEY": "x-key"},
    )
    environ = {**ENVIRON, "SOME_TOKEN": "not for the agent"}
    report = await check_agent(target, environ=environ, limits=LIMITS)
    cells = report.cells
    assert statuses(report) == {**dict.fromkeys(CHECKS, "pass"), "prompt": "n/a"}, cells
    methods = cells["auth methods"].text
    assert methods.startswith("2: plain-login (agent")
    assert "x-key (env_var" in methods and "X_KEY" in methods
    new = cells["session/new"].text
    assert new.startswith("login required: AuthenticationRequired"), new
    assert new.endswith("methods: plain-login, x-key")
    assert cells["session/list"].text.startswith("login required [-32000]")
    assert cells["prompt"].text == "no credentials (set X_KEY)"
    assert cells["close"].text.startswith("no session")
    assert_all_gone(report)
    assert report.credentials_passed == []
    seen = json.loads(dump.read_text())
    assert "SOME_TOKEN" not in seen["names"] and "X_KEY" not in seen["names"]
    assert set(seen["names"]) <= {"PATH", "HOME", "LANG", "TERM", "USER", "TMPDIR", "LC_CTYPE", "PWD"}
    assert seen["home"] != environ["HOME"] and not os.path.exists(seen["home"])  # fresh, and removed after

    text = render_markdown([report], command="python -m dev.real_agents.check", when="today", environment="here")
    row = next(line for line in text.splitlines() if line.startswith("| auth |"))
    assert row.count("|") == len(CHECKS) + 3
    assert "pass: login required: AuthenticationRequired" in row


@pytest.mark.anyio
async def test_login_needing_agent_with_its_credential(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    target = Target(
        "auth",
        [sys.executable, str(AUTH_AGENT), "--env-dump", str(dump)],
        credentials=("X_KEY", "Y_KEY"),
        login={"X_KEY": "x-key"},
    )
    report = await check_agent(target, environ={**ENVIRON, "X_KEY": "secret", "Z_KEY": "other"}, limits=LIMITS)
    assert statuses(report) == dict.fromkeys(CHECKS, "pass"), report.cells
    assert report.credentials_passed == ["X_KEY"]
    assert report.cell("session/new").text.startswith("after logging in with x-key, session opened")
    assert report.cell("prompt").text.startswith("stop reason end_turn")
    assert "'pong'" in report.cell("prompt").text
    names = json.loads(dump.read_text())["names"]
    assert "X_KEY" in names and "Z_KEY" not in names


@pytest.mark.anyio
async def test_a_process_left_behind_is_reported_and_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # Without the reaper (Linux's default since issue 26, which ends this grandchild itself), the grandchild
    # that leaves the agent's process group outlives the agent: the checker must see it and kill it.
    target = Target("leaky", [sys.executable, str(AUTH_AGENT), "--grandchild", str(pidfile)], reap=False)
    report = await check_agent(target, environ=ENVIRON, limits=LIMITS)
    grandchild = int(pidfile.read_text())
    cell = report.cell("no process left")
    assert cell.status == "fail", cell
    assert f"sleep (pid {grandchild}" in cell.text
    # The checker sent SIGKILL; the kernel ends the process soon after, not at once (the race shows under load).
    for _ in range(500):
        if not alive(grandchild):
            break
        await anyio.sleep(0.01)
    assert not alive(grandchild)  # the checker ended it
    assert any(note.startswith("the checker killed what was left: sleep") for note in report.notes)
    assert report.cell("initialize").status == "pass"


@pytest.mark.anyio
@pytest.mark.skipif(not reaper_available(), reason="the reaper runs on Linux only")
async def test_under_the_reaper_the_same_grandchild_is_ended_by_the_library(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    target = Target("leaky", [sys.executable, str(AUTH_AGENT), "--grandchild", str(pidfile)])
    report = await check_agent(target, environ=ENVIRON, limits=LIMITS)
    assert_all_gone(report)  # the reaper ended it when the block was left; the checker found nothing to kill
    assert not alive(int(pidfile.read_text()))


@pytest.mark.anyio
async def test_an_agent_that_cannot_start_fails_its_row() -> None:
    target = Target("missing", ["/nonexistent/agent-binary"])
    report = await check_agent(target, environ=ENVIRON, limits=LIMITS)
    assert report.cell("initialize").status == "fail"
    assert "FileNotFoundError" in report.cell("initialize").text
    assert report.cell("session/new").render() == "n/a: initialize failed"
    # The reaper (Linux) is started before it finds the command missing: the poller may see it for a moment
    # ("1 process started, all gone") or not ("no process seen"); either way nothing is left.
    assert report.cell("no process left").status in ("n/a", "pass")


@pytest.mark.anyio
async def test_an_agent_that_never_answers_initialize_is_bounded() -> None:
    target = Target("silent", [sys.executable, "-c", "import sys; sys.stdin.read()"])  # reads, never answers
    limits = Limits(initialize=1, exit_wait=3.0, poll_interval=0.05)
    report = await check_agent(target, environ=ENVIRON, limits=limits)
    assert report.cell("initialize").status == "fail"
    assert (
        report.cell("initialize").text.startswith("no answer within 1 s") or "Timeout" in report.cell("initialize").text
    )
    assert report.cell("session/new").render() == "n/a: initialize failed"
    assert_all_gone(report)
    assert report.seconds < 10


def test_a_rerun_keeps_the_sections_check_does_not_write() -> None:
    """check writes the table and its Notes; the whole-turns section and hand-written ones survive a rerun."""
    old = (
        "# Real agents\n\nold table\n\n## Notes\n\n### claude\n\n- old note\n\n"
        "## By registry id from the CLI\n\nhand-written\n\n## Whole turns against a scripted model\n\nturns\n"
    )
    new = "# Real agents\n\nnew table\n\n## Notes\n\n### claude\n\n- new note\n"
    text = keep_other_sections(new, old)
    assert text == (
        "# Real agents\n\nnew table\n\n## Notes\n\n### claude\n\n- new note\n\n"
        "## By registry id from the CLI\n\nhand-written\n\n## Whole turns against a scripted model\n\nturns\n"
    )
    assert keep_other_sections(new, "") == new
