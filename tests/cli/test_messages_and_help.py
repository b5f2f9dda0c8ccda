"""Issue 30: failures in plain words (item 2), a dead agent mid-turn (3), hints and warnings about flags (8),
help texts (9), a tool call's rawOutput and no ``[usage] 0 tokens`` (10), ``| head`` without a traceback (7)."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acp_session.cli.messages import describe, failure_lines
from acp_session.cli.render import TerminalRenderer, raw_output_text
from acp_session.client_errors import CapabilityNotSupported, ReconnectFailed
from acp_session.conversation import ChatDone, ChatResponse
from acp_session.conversation.entities import TokenUsage
from acp_session.errors import ConnectionClosed, InternalError, ResourceNotFound
from tests.cli.support import CLI, REPO, cli_env, run_cli
from tests.interop.conftest import PY_V1_AGENT
from tests.lifecycle.support import AGENTS

BIN = Path(CLI).parent


def test_agent_failures_are_described_in_plain_words() -> None:
    exited = describe(ConnectionClosed("the peer closed the connection", exit_code=1, stderr_tail=["boom"]))
    assert exited.message == "the agent exited with code 1; its last stderr lines may say why"
    assert failure_lines(exited) == [
        "acp-session: the agent exited with code 1; its last stderr lines may say why",
        "  the agent's last stderr lines:",
        "  | boom",
    ]
    killed = describe(ConnectionClosed("the peer closed the connection", exit_code=-9))
    assert killed.message == "the agent was killed (SIGKILL); run its command by hand to see why"
    missing = describe(ResourceNotFound(data={"sessionId": "s9"}), session_id="s9")
    assert missing.message == "the agent does not know session s9 (`acp-session sessions` lists its sessions)"
    unlisted = describe(CapabilityNotSupported("session/list", "sessionCapabilities.list"))
    assert unlisted.message == "this agent cannot list its sessions (it does not offer session/list)"
    internal = describe(
        InternalError(data={"details": "Query closed before response received"}), stderr_tail=["rate limited"]
    )
    assert internal.message == (
        "the agent failed: Query closed before response received; its last stderr lines may say more"
    )
    assert internal.stderr_tail == ("rate limited",)
    for failure in (exited, killed, missing, unlisted, internal):
        assert "Error" not in failure.message and "[-32" not in failure.message


def test_a_reconnect_the_server_refused_names_the_status() -> None:
    refused = describe(ReconnectFailed(1, 0.1, ConnectionClosed("HTTP 403"), deadline_reached=False, status=403))
    assert refused.message == (
        "the connection to the agent was lost and could not be re-established (the server refused it with HTTP 403)"
    )
    exhausted = describe(ReconnectFailed(5, 9.0, ConnectionClosed("gone"), deadline_reached=False))
    assert exhausted.message.endswith("(5 attempts failed)")


def test_text_that_is_not_utf8(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    prompt = subprocess.run([CLI, "chat", b"caf\xe9"], capture_output=True, env=env, cwd=tmp_path, timeout=30)
    assert prompt.returncode == 0, prompt.stderr
    assert "You said: caf\ufffd" in prompt.stdout.decode()
    assert b"not UTF-8; they were replaced" in prompt.stderr
    odd = tmp_path / os.fsdecode(b"dir\xff")
    odd.mkdir()
    cwd = subprocess.run([CLI, "chat", "--cwd", os.fsencode(odd), "hi"], capture_output=True, env=env, timeout=30)
    assert cwd.returncode == 2 and b"--cwd is not valid UTF-8" in cwd.stderr
    assert b"Traceback" not in cwd.stderr + prompt.stderr


def test_an_agent_dying_mid_turn_ends_the_loop_at_once(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.test_pty import finish, spawn

    child = spawn(tmp_path, "chat")
    child.expect("/exit or Ctrl-D leaves")
    child.sendline("/slow 40")
    child.expect(r"chunk 1\. ")
    (agent,) = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()
    os.kill(int(agent), 9)
    child.expect(r"\[error\] the agent was killed \(SIGKILL\)")
    assert finish(child) == 1  # no fresh prompt after the agent is gone
    assert child.before.count("\x1b[?2004h") == 0
    del pexpect


def test_v1_file_calls_without_allow_files_get_a_hint(tmp_path: Path) -> None:
    agent = f"{sys.executable} {PY_V1_AGENT} --ignore-capabilities"
    result = run_cli(tmp_path, "chat", "--yes", "--agent", agent, f"write {tmp_path / 'out.txt'} hi")
    assert result.returncode == 0, result.stderr
    assert "add --allow-files to let it read and write files in the session's directory" in result.stderr
    assert result.stderr.count("--allow-files") == 1  # once, though the agent called twice (read, write)


def test_flags_that_do_nothing_are_warned_about(tmp_path: Path) -> None:
    # A v2 agent gets --allow-files / --allow-terminal as the built-in MCP server's tools (docs/mcp.md), so
    # they do something and are not warned about; --json says how they were offered.
    v2 = run_cli(tmp_path, "chat", "--allow-files", "--allow-terminal", "--json", "hi")
    assert v2.returncode == 0, v2.stderr
    assert "does nothing" not in v2.stderr
    offered = [json.loads(line) for line in v2.stdout.splitlines() if '"mcp_servers"' in line]
    assert [record["builtin"] for record in offered] == ["acp"]
    pass_env = run_cli(tmp_path, "chat", "--pass-env", "HOME", "hi")
    assert "--pass-env does nothing without --env minimal" in pass_env.stderr
    quiet = run_cli(tmp_path, "chat", "--env", "minimal", "--pass-env", "HOME", "hi")
    assert "does nothing" not in quiet.stderr


def test_help_texts_are_consistent(tmp_path: Path) -> None:
    conformance = run_cli(tmp_path, "conformance", "--help").stdout
    # Under acp-session the agent is optional (the reference agent by default); --url is the other choice.
    assert conformance.startswith("usage: acp-session conformance ") and "[--agent AGENT | --url URL]" in conformance
    assert "--agent AGENT" in run_cli(tmp_path, "conformance", "--help").stdout
    standalone = subprocess.run([str(BIN / "acp-conformance"), "--help"], capture_output=True, text=True)
    assert "usage: acp-conformance" in standalone.stdout and "(--agent AGENT | --url URL)" in standalone.stdout
    for command in ("sessions", "login"):
        text = run_cli(tmp_path, command, "--help").stdout
        description = text.split("\n\n")[1]
        assert not description.startswith(("positional", "options")), text  # a description paragraph
        assert "3    cancelled" not in text and "0    done" in text  # not chat's stop-reason table
    resume = run_cli(tmp_path, "resume", "--help").stdout
    usage = resume.split("\n\n")[0]
    assert usage.startswith("usage: acp-session resume") and " ID [PROMPT ...]" in usage
    assert "[ID]" not in resume
    assert "-c, --continue" in run_cli(tmp_path, "chat", "--help").stdout


def test_a_tool_calls_raw_output_is_shown(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "chat", "/tool")
    lines = result.stdout.splitlines()
    assert lines.index('  {"changed": 1}') > lines.index("[tool] Editing example.txt (edit): completed")
    # codex-acp puts a command's output only in rawOutput
    codex = {"stdout": "a\nb\n", "stderr": "", "exit_code": 0, "formatted_output": "a\nb\n"}
    assert raw_output_text(codex) == "a\nb"
    assert raw_output_text({"stdout": "out", "stderr": "warn"}) == "out\nwarn"
    assert raw_output_text("plain") == "plain" and raw_output_text(None) is None and raw_output_text({}) is None


def test_a_turn_with_zero_tokens_shows_no_usage_line() -> None:
    out = io.StringIO()
    usage = TokenUsage(total_tokens=0, input_tokens=0, output_tokens=0)
    TerminalRenderer(out, color=False).event(
        ChatDone(ChatResponse(message_id="m", stop_reason="cancelled", usage=usage))
    )
    assert out.getvalue() == "[stop: cancelled]\n"


@pytest.mark.parametrize(
    "command",
    [
        [str(BIN / "acp-conformance"), "--agent", f"{sys.executable} -m acp_conformance.agent", "--json"],
        [CLI, "conformance", "--json"],
        [CLI, "chat", "--json", "/slow 5"],
    ],
)
def test_a_closed_stdout_ends_quietly(tmp_path: Path, command: list[str]) -> None:
    """``... | head -1``: the reader went away; no BrokenPipeError traceback."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(tmp_path), cwd=REPO)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # as head does after its line
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_failed_prompt_shows_the_reason_and_the_agents_stderr(tmp_path: Path) -> None:
    """Issue 30 item 2: ``InternalError: [-32603] Internal error (data: ...)`` said nothing of the agent's stderr."""
    internal = {"code": -32603, "message": "Internal error", "data": {"details": "Query closed"}}
    config = {
        "errors": {"session/prompt": internal},
        "errors_stderr": ["rate limit reached, retry in 20 s"],
    }
    agent = shlex.join([sys.executable, str(AGENTS / "slow_agent.py"), json.dumps(config)])
    result = run_cli(tmp_path, "chat", "--agent", agent, "hi")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-2:] == [
        "[error] the agent failed: Query closed; its last stderr lines may say more",
        "  | rate limit reached, retry in 20 s",
    ]
    records = run_cli(tmp_path, "chat", "--json", "--agent", agent, "hi").stdout.splitlines()
    error = json.loads(records[-1])
    assert error["event"] == "error" and error["code"] == -32603
    assert error["stderr_tail"] == ["rate limit reached, retry in 20 s"]
