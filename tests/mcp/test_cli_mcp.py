"""``acp-session chat/resume --mcp-config FILE --mcp NAME=COMMAND``: the servers reach the reference agent, a
transport it did not advertise is reported (``--json``: sent and refused), and ``resume`` sends them again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.support import run_cli
from tests.mcp.support import ECHO_SERVER


def records(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def write_config(path: Path) -> Path:
    config = {
        "mcpServers": {
            "echo": {"command": sys.executable, "args": [ECHO_SERVER, "stdio"], "env": {"MCP_TEST_GREETING": "cfg"}},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        }
    }
    path.write_text(json.dumps(config))
    return path


def test_chat_sends_config_servers_and_reports_what_was_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path / ".mcp.json")
    one = f"e2={Path(sys.executable).name} {ECHO_SERVER} stdio"  # a command by name: resolved on PATH
    result = run_cli(
        tmp_path, "chat", "--json", "--mcp-config", str(config), "--mcp", one, "/mcp echo whoami {}", timeout=60
    )
    assert result.returncode == 0, result.stderr
    out = records(result.stdout)
    report = out[0]
    assert report["event"] == "mcp_servers"
    sent = report["sent"]
    assert isinstance(sent, list) and [s["name"] for s in sent] == ["echo", "e2"]
    assert sent[0] == {
        "type": "stdio",
        "name": "echo",
        "command": sys.executable,
        "args": [ECHO_SERVER, "stdio"],
        "env": [{"name": "MCP_TEST_GREETING", "value": "cfg"}],
    }
    assert Path(sent[1]["command"]).is_absolute()
    assert report["refused"] == [{"name": "old", "transport": "sse", "capability": "session.mcp.sse"}]
    assert report["builtin"] is None  # no --allow-files / --allow-terminal
    assert "MCP server 'old' not sent" in result.stderr
    assert out[-1]["event"] == "done" and out[-1]["text"] == "echo.whoami: cfg"


def test_resume_sends_the_servers_again(tmp_path: Path) -> None:
    config = write_config(tmp_path / "servers.json")
    first = run_cli(tmp_path, "chat", "--json", "hello", timeout=60)
    assert first.returncode == 0, first.stderr
    listed = records(run_cli(tmp_path, "sessions", "--json").stdout)
    session_id = next(str(r["session_id"]) for r in listed if r["event"] == "session")
    result = run_cli(
        tmp_path,
        "resume",
        session_id,
        "--json",
        "--mcp-config",
        str(config),
        '/mcp echo echo {"text": "again"}',
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert records(result.stdout)[-1]["text"] == "echo.echo: echo: again"


def test_bad_config_is_a_usage_error_naming_file_and_server(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"x": {"command": "no-such-command-acp-session-test"}}}))
    result = run_cli(tmp_path, "chat", "--mcp-config", str(bad), "hi")
    assert result.returncode == 2
    assert str(bad) in result.stderr and "'x'" in result.stderr and "not found on PATH" in result.stderr
    result = run_cli(tmp_path, "chat", "--mcp", "nocommand", "hi")
    assert result.returncode == 2 and "NAME=COMMAND" in result.stderr


def test_allow_files_for_a_v2_agent_is_the_builtin_mcp_server(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("on disk\n")
    arguments = json.dumps({"path": str(tmp_path / "notes.txt")})
    result = run_cli(tmp_path, "chat", "--json", "--allow-files", f"/mcp acp-session read_text_file {arguments}")
    assert result.returncode == 0, result.stderr
    out = records(result.stdout)
    assert out[0] == {"event": "mcp_servers", "sent": [], "refused": [], "builtin": "acp"}
    assert out[-1]["text"] == "acp-session.read_text_file: on disk\n"
