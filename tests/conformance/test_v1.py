"""The v1 check set, against tests/conformance/v1_agent.py (a protocol v1 agent) and its deliberate defects;
logging in (``--auth``, ``--env``, ``--clean-env``) and the single report for an agent that wants a login."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_conformance.runner.checks import CHECK_SETS
from acp_conformance.runner.run import RunOptions, RunReport, run
from acp_conformance.runner.scenarios import load_scenarios

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "v1_agent.py")]
SCENARIOS = HERE / "v1_agent.toml"
V1_IDS = {c.id for c in CHECK_SETS[1]}
# No auth methods, no additionalDirectories, no image or audio, no elicitation scenario; v1 leaves unadvertised
# blocks to the agent.
ALWAYS_NA = {
    "auth-methods",
    "auth-method-ids",
    "auth-login",
    "additional-directories",
    "unsupported-content",
    "prompt-image",
    "prompt-audio",
    "elicitation-gated",
}

# Each defect of v1_agent.py and the checks it must fail (with the rule each message starts with). With the
# scenario file every other check passes.
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "junk-stdout": {"framing": "transports.mdx#stdio"},
    "ignore-cancel": {"cancel-turn": "prompt-turn.mdx#cancellation", "cancel-permission": "ACP1-017"},
    "bad-stop-reason": {
        "prompt-turn": "prompt-turn.mdx#stop-reasons",
        "permission-request": "prompt-turn.mdx#stop-reasons",
        "prompt-embedded": "prompt-turn.mdx#stop-reasons",
        "meta-accepted": "prompt-turn.mdx#stop-reasons",
    },
    "relative-paths": {"client-fs": "overview.mdx"},
    "ignore-capabilities": {
        "fs-gated": "file-system.mdx#checking-support",
        "terminal-gated": "terminals.mdx#checking-support",
    },
    "no-replay": {"load-replay": "session-setup.mdx#loading-sessions"},
    "updates-after-cancel": {"cancel-updates-first": "prompt-turn.mdx#cancellation"},
}
# Checks a defect leaves with nothing to observe (n/a): the cancelled prompt never answered, nothing replayed.
ALSO_NA: dict[str, set[str]] = {"ignore-cancel": {"cancel-updates-first"}, "no-replay": {"load-replay-first"}}


def _run(*extra: str, scenarios: bool = True, **options: object) -> RunReport:
    loaded = load_scenarios(SCENARIOS) if scenarios else None
    return anyio.run(lambda: run(RunOptions([*AGENT, *extra], scenarios=loaded, **options)))  # type: ignore[arg-type]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_conformance.runner", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_v1_agent_passes_the_v1_set_with_its_scenarios() -> None:
    report = _run()
    assert report.version == 1
    statuses = {r.id: r.status for r in report.results}
    assert set(statuses) == V1_IDS
    assert {k for k, v in statuses.items() if v != "pass"} == ALWAYS_NA, statuses
    by_id = {r.id: r for r in report.results}
    assert by_id["client-fs"].message == "fs/read_text_file ok"
    assert by_id["client-terminals"].message.startswith("terminal/create ok")
    assert by_id["cancel-turn"].scenarios == ["long_turn: 'slow 60'"]
    assert report.seconds < 5


def test_v1_agent_without_scenarios_has_no_failure() -> None:
    report = _run(scenarios=False)
    statuses = {r.id: r.status for r in report.results}
    assert "fail" not in statuses.values()
    needing = {c.id for c in CHECK_SETS[1] if c.scenarios or c.one_of_scenarios}
    assert {k for k, v in statuses.items() if v == "n/a"} == needing | ALWAYS_NA
    assert all("--scenarios FILE" in r.message for r in report.results if r.id in needing)


@pytest.mark.parametrize("mode", sorted(EXPECTED_FAILURES))
def test_v1_defect_fails_exactly_its_checks(mode: str) -> None:
    expected = EXPECTED_FAILURES[mode]
    report = _run("--broken", mode, wait=2.0)
    failed = {r.id: r.message for r in report.results if r.status == "fail"}
    assert set(failed) == set(expected), failed
    for check_id, rule in expected.items():
        assert failed[check_id].startswith(f"{rule}:"), (check_id, failed[check_id])
    others = {r.id: r.status for r in report.results if r.id not in expected}
    assert {k for k, v in others.items() if v != "pass"} == ALWAYS_NA | ALSO_NA.get(mode, set()), others
    assert all(others[k] == "n/a" for k in ALSO_NA.get(mode, set()))


def test_v2_offer_to_the_v1_agent_and_protocol_1_offer_pick_the_v1_set() -> None:
    assert _run(scenarios=False, offer=1, only=["initialize", "version-exact"]).version == 1
    proc = _cli("--agent", " ".join(AGENT), "--protocol", "1", "--check", "initialize", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 4 and report["checkSet"] == "v1"  # one check: a partial verdict


def test_login_required_for_sessions_is_one_clear_report() -> None:
    proc = _cli("--agent", f"{' '.join(AGENT)} --login session", "--scenarios", str(SCENARIOS))
    assert proc.returncode == 8, proc.stdout + proc.stderr  # a login is needed; nothing failed
    out = proc.stdout
    assert "LOGIN REQUIRED: session/new answered -32000 'Authentication required'." in out
    assert "agent-login (agent): Log in; over ACP: --auth agent-login" in out
    assert "key-login (env_var): Use V1_AGENT_KEY; --auth key-login with V1_AGENT_KEY set" in out
    assert "FAIL" not in out
    # The checks that need a session are listed once in the notice, not one by one.
    needing = sum(1 for c in CHECK_SETS[1] if c.needs_session)
    assert out.count("requires a login") == 0 and f"Not run for lack of a login ({needing})" in out
    report = json.loads(_cli("--agent", f"{' '.join(AGENT)} --login session", "--json").stdout)
    assert report["login"]["refused"] == "session/new"
    assert report["verdict"]["verdict"] == "blocked_by_auth" and report["verdict"]["blocked_by_auth"]
    blocked = {c["id"] for c in report["checks"] if c["blockedBy"] == "login"}
    ran = {c["id"] for c in report["checks"] if c["result"] == "pass"}
    # The checks that open no session; login-not-required is n/a (the agent advertises its login methods).
    assert ran == {
        "initialize",
        "agent-info",
        "version-negotiation",
        "version-exact",
        "terminal-auth",
        "auth-methods",
        "auth-method-ids",
        "unknown-method",
        "ext-method",
        "notifications-unanswered",
        "record-unknown-session",
        "record-stderr",
    }
    assert "session-new" in blocked and "cancel-turn" not in ran


def test_login_required_for_prompts_still_checks_sessions() -> None:
    report = _run("--login", "prompt")
    assert report.login is not None and report.login.method == "session/prompt"
    statuses = {r.id: r.status for r in report.results}
    assert "fail" not in statuses.values()
    for check_id in ("session-new", "session-list", "session-modes", "config-options", "invalid-params"):
        assert statuses[check_id] == "pass", check_id
    assert statuses["prompt-turn"] == "n/a" and statuses["cancel-turn"] == "n/a"


def test_auth_logs_every_agent_process_in() -> None:
    report = _run("--login", "session", auth="agent-login")
    assert report.login is None
    # The auth checks apply now: the agent advertises its login methods (so login-not-required does not).
    logins = {"auth-methods", "auth-method-ids", "auth-login"}
    assert {r.id for r in report.results if r.status != "pass"} == ALWAYS_NA - logins | {"login-not-required"}


def test_auth_with_an_env_var_method(tmp_path: Path) -> None:
    agent = f"{' '.join(AGENT)} --login session"
    proc = _cli("--agent", agent, "--auth", "key-login", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 3 and "NOT CHECKED: --auth key-login reads V1_AGENT_KEY" in proc.stdout
    proc = _cli("--agent", agent, "--auth", "nope")
    assert proc.returncode == 3 and "not one of the agent's login methods (agent-login, key-login)" in proc.stdout
    # --env NAME=VALUE sets the variable for the agent; --clean-env passes nothing else from this environment.
    proc = _cli("--agent", agent, "--auth", "key-login", "--clean-env", "--env", "V1_AGENT_KEY=secret", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout
    assert report["login"] is None and report["summary"]["fail"] == 0
    # --env NAME passes NAME through from this environment.
    proc = _cli(
        "--agent", agent, "--auth", "key-login", "--clean-env", "--env", "V1_AGENT_KEY", "--check", "session-new",
        env={"PATH": "/usr/bin:/bin", "V1_AGENT_KEY": "from-here"},
    )  # fmt: skip
    assert proc.returncode == 4 and "1 passed" in proc.stdout, proc.stdout  # logged in; one check: partial
