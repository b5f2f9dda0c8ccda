"""``acp-session agents`` (list, info, install) and ``--agent ID`` through a local registry: an archive served
from 127.0.0.1 with the reference agent inside."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from acp_session.cli.agents import ProgressBar
from acp_session.registry import current_platform
from tests.cli.support import CLI, cli_env
from tests.registry.support import agent_tar, binary_entry, serve, sha256, write_registry


def run(tmp_path: Path, *args: str, registry: str = "bundled", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = cli_env(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["ACP_SESSION_REGISTRY"] = registry
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=tmp_path)


def test_agents_lists_the_registry(tmp_path: Path) -> None:
    table = run(tmp_path, "agents")
    assert table.returncode == 0, table.stderr
    assert "codex-acp" in table.stdout and "[alias: codex]" in table.stdout
    assert "agents from bundled snapshot of 2026-12-01" in table.stdout
    records = [json.loads(line) for line in run(tmp_path, "agents", "--json").stdout.splitlines()]
    codex = next(r for r in records if r["id"] == "codex-acp")
    assert codex["distribution"] == ["npx"] and codex["aliases"] == ["codex"] and codex["auth"] == ["agent"]


def test_agents_info_and_unknown_ids(tmp_path: Path) -> None:
    info = run(tmp_path, "agents", "info", "claude")
    assert info.returncode == 0, info.stderr
    assert "Claude Agent (claude-acp)" in info.stdout and "preview:       0.85.2-preview.22" in info.stdout
    unknown = run(tmp_path, "agents", "info", "codx")
    assert unknown.returncode == 1 and "did you mean codex-acp" in unknown.stderr
    chat = run(tmp_path, "chat", "--agent", "cladue", "hi")
    assert chat.returncode == 1 and "did you mean claude-acp" in chat.stderr, chat.stderr
    assert "agent command not found: cladue (nor is it an agent id in bundled snapshot" in chat.stderr


def test_install_then_chat_with_a_registry_binary(tmp_path: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        url = www.put("agent.tar.gz", archive)
        entry = binary_entry("local-agent", current_platform(), url, sha256(archive))
        registry = str(write_registry(tmp_path / "registry.json", entry))
        installed = run(tmp_path, "agents", "install", "local-agent", registry=registry)
        assert installed.returncode == 0, installed.stderr
        assert "downloaded local-agent" in installed.stderr and "local-agent 1.0.0 installed: " in installed.stdout
        assert www.hits == {"/agent.tar.gz": 1}
    # Installed: the chat runs without the server.
    chat = run(tmp_path, "chat", "--json", "--agent", "local-agent", "--registry", registry, "hello")
    assert chat.returncode == 0, chat.stderr
    done = json.loads(chat.stdout.splitlines()[-1])
    assert done["event"] == "done" and done["stop_reason"] == "end_turn"
    # The conformance checker takes the id too.
    checked = run(tmp_path, "conformance", "--agent", "local-agent", "--registry", registry, "--check", "framing")
    assert checked.returncode == 4, checked.stdout + checked.stderr  # passed; one check is a partial verdict
    assert "framing" in checked.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal() -> None:
    out = _Terminal()
    bar = ProgressBar("goose", out, width=10)
    bar(0, 4_000_000)
    bar(4_000_000, 4_000_000)
    bar.finish()
    text = out.getvalue()
    assert "downloading goose 0.0/4.0 MB [----------] 0%" in text
    assert "downloading goose 4.0/4.0 MB [##########] 100%" in text
    assert text.endswith("\r\x1b[Kdownloaded goose (4.0 MB)\n")
