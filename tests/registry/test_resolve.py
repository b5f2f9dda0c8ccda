"""Looking agents up and turning registry entries into commands (no network: npx/uvx are not run here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acp_session.registry import (
    ALIASES,
    InvalidRegistry,
    LauncherMissing,
    NoDistribution,
    UnknownAgent,
    bundled_registry,
    find_agent,
    load_registry,
    named_agent,
    pinned_command,
    resolve_agent,
    sanitize_env,
)


def package_registry(path: Path, **distribution: dict[str, object]) -> Path:
    agent = {"id": "pkg-agent", "name": "Pkg", "version": "1.2.3", "description": "d", "distribution": distribution}
    path.write_text(json.dumps({"version": "1.0.0", "agents": [agent]}))
    return path


def test_bundled_snapshot_has_a_date_and_the_aliased_agents() -> None:
    registry = bundled_registry()
    assert registry.snapshot is not None and registry.snapshot.date == "2026-12-01"
    assert registry.origin == "bundled snapshot of 2026-12-01"
    ids = {agent.id for agent in registry.agents}
    assert set(ALIASES.values()) <= ids
    assert all(agent.distribution.kinds for agent in registry.agents)
    assert registry.snapshot.auth_methods["codex-acp"] == ["agent"]


def test_aliases_and_close_matches() -> None:
    registry = bundled_registry()
    assert find_agent(registry, "codex").id == "codex-acp"
    assert find_agent(registry, "claude").id == "claude-acp"
    assert find_agent(registry, "copilot").id == "github-copilot-cli"
    with pytest.raises(UnknownAgent) as caught:
        find_agent(registry, "codx-acp")
    assert caught.value.close_matches[0] == "codex-acp"
    assert "did you mean codex-acp" in str(caught.value)
    with pytest.raises(UnknownAgent) as nothing:
        find_agent(registry, "zzzzzz")
    assert nothing.value.close_matches == []


@pytest.mark.usefixtures("launchers")
def test_npx_and_uvx_commands_follow_the_format() -> None:
    registry = bundled_registry()
    assert resolve_agent("codex", registry=registry).argv == [
        "npx",
        "--yes",
        "--",
        "@agentclientprotocol/codex-acp@1.4.0",
    ]
    auggie = resolve_agent("auggie", registry=registry)
    assert auggie.argv == ["npx", "--yes", "--", "@augmentcode/auggie@0.21.0", "--acp"]
    assert auggie.env == {"AUGMENT_DISABLE_AUTO_UPDATE": "1"} and auggie.kind == "npx"


@pytest.mark.usefixtures("launchers")
def test_cmd_uses_package_and_from(tmp_path: Path) -> None:
    npx = package_registry(tmp_path / "n.json", npx={"package": "@s/p@1.2.3", "cmd": "p-acp", "args": ["--x"]})
    assert resolve_agent("pkg-agent", registry=npx).argv == [
        "npx",
        "--yes",
        "--package=@s/p@1.2.3",
        "--",
        "p-acp",
        "--x",
    ]
    uvx = package_registry(tmp_path / "u.json", uvx={"package": "p==1.2.3", "cmd": "p-acp"})
    assert resolve_agent("pkg-agent", registry=uvx).argv == ["uvx", "--from=p==1.2.3", "--", "p-acp"]
    plain = package_registry(tmp_path / "p.json", uvx={"package": "p==1.2.3", "args": ["acp"]})
    assert resolve_agent("pkg-agent", registry=plain).argv == ["uvx", "--", "p==1.2.3", "acp"]


def test_missing_launcher_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither npx nor uvx
    with pytest.raises(LauncherMissing, match=r"Node\.js") as npx:
        resolve_agent("codex", registry=bundled_registry())
    assert npx.value.launcher == "npx"
    uvx = package_registry(tmp_path / "u.json", uvx={"package": "p==1"})
    with pytest.raises(LauncherMissing, match="install uv"):
        resolve_agent("pkg-agent", registry=uvx)


def test_registry_env_is_sanitised() -> None:
    given = {
        "OK_SETTING": "1",
        "PATH": "/evil",
        "HOME": "/x",
        "LD_PRELOAD": "x.so",
        "NODE_OPTIONS": "--require x",
        "PYTHONPATH": "/x",
        "GITHUB_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "k",
        "SSH_AUTH_SOCK": "s",
        "XDG_CONFIG_HOME": "/x",
    }
    assert sanitize_env(given) == {"OK_SETTING": "1"}


@pytest.mark.usefixtures("launchers")
def test_preview_channel_and_its_absence() -> None:
    registry = bundled_registry()
    preview = resolve_agent("claude", registry=registry, channel="preview")
    assert preview.version.endswith("-preview.22") and preview.argv[-1].endswith(preview.version)
    with pytest.raises(NoDistribution, match="preview"):
        resolve_agent("codex", registry=registry, channel="preview")


@pytest.mark.usefixtures("launchers")
def test_pinned_versions_for_real_agent_runs() -> None:
    registry = bundled_registry()
    codex = pinned_command("codex-acp", "2.6.0", registry=registry)
    assert codex.argv == ["npx", "--yes", "--", "@agentclientprotocol/codex-acp@2.6.0"] and codex.version == "2.6.0"
    assert codex.package == "@agentclientprotocol/codex-acp@2.6.0" and codex.program is None and codex.args == []
    gemini = pinned_command("gemini", "0.61.0", registry=registry)
    assert (gemini.package, gemini.args) == ("@google/gemini-cli@0.61.0", ["--acp"])
    claude = pinned_command("claude", "0.101.0", registry=registry)
    assert claude.argv == ["npx", "--yes", "--", "@agentclientprotocol/claude-agent-acp@0.101.0"]
    assert pinned_command("fast-agent", "0.11.0", registry=registry).argv[:3] == ["uvx", "--", "fast-agent-acp==0.11.0"]
    with pytest.raises(NoDistribution):
        pinned_command("amp-acp", "0.1.0", registry=registry, install=False)  # binaries exist per version only


def test_registry_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = package_registry(tmp_path / "r.json", npx={"package": "x@1"})
    monkeypatch.setenv("ACP_SESSION_REGISTRY", str(path))
    assert load_registry().origin == str(path)
    monkeypatch.setenv("ACP_SESSION_REGISTRY", "bundled")
    assert load_registry().origin.startswith("bundled snapshot")
    (tmp_path / "bad.json").write_text('{"agents": 3}')
    with pytest.raises(InvalidRegistry):
        load_registry(tmp_path / "bad.json")
    with pytest.raises(InvalidRegistry, match="No such file"):
        load_registry(tmp_path / "missing.json")
    assert os.path.basename(str(path)) == "r.json"


@pytest.mark.usefixtures("launchers")
def test_which_agent_option_values_are_registry_agents(tmp_path: Path) -> None:
    registry = bundled_registry()
    (tmp_path / "bin" / "codex").write_text("#!/bin/sh\n")  # a program called like an alias: the alias wins
    (tmp_path / "bin" / "codex").chmod(0o755)
    (tmp_path / "bin" / "codex-acp").write_text("#!/bin/sh\n")  # a program called like an id: the program wins
    (tmp_path / "bin" / "codex-acp").chmod(0o755)
    named = named_agent("codex", registry=registry)
    assert named is not None and named.agent_id == "codex-acp"
    assert named_agent("codex-acp", registry=registry) is None
    assert named_agent("gemini", registry=registry) is not None
    for command_line in ("npx -y x", "./agent", "/usr/bin/agent", "'x", "Agent"):
        assert named_agent(command_line, registry=registry) is None
    with pytest.raises(UnknownAgent, match=r"agent command not found: gemni .*did you mean gemini"):
        named_agent("gemni", registry=registry)
