"""``make real-agents`` resolves every pinned agent through its ACP registry id (issue 29), without the network.

The table names a registry id beside the pinned version; ``dev.real_agents.table`` asks acp-session's registry code
(``pinned_command``) for the entry's package, command and arguments at that version, and runs the command from
the harness's install folder. Here: the real table against the bundled snapshot, and a local registry file
whose agent is a package installed into a temporary cache (its command starts the reference agent), checked
end to end by the checker.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from acp_session.registry import pinned_command
from dev.real_agents.check import CHECKS, Target, check_agent, render_markdown
from dev.real_agents.install import outdated
from dev.real_agents.table import REPO, TableError, load_agents
from tests.real_agents.test_harness import ENVIRON, LIMITS, assert_all_gone, statuses

LIGHT = {
    "id": "light-agent",
    "name": "Light agent",
    "version": "9.9.9",
    "description": "A test agent",
    "distribution": {
        "npx": {"package": "@test/light-agent@9.9.9", "cmd": "light-acp", "args": ["--log-level", "ERROR"]}
    },
}
BINARY_ONLY = {
    "id": "binary-agent",
    "name": "Binary agent",
    "version": "1.0.0",
    "description": "Only an archive",
    "distribution": {"binary": {"linux-x86_64": {"archive": "https://127.0.0.1:9/a.tar.gz", "cmd": "./agent"}}},
}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection attempt fails the test: resolving pins must not need the network."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network used: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("ACP_SESSION_REGISTRY", "https://127.0.0.1:9/registry.json")  # not the harness's source


@pytest.fixture
def npx_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``npx`` for the registry code's launcher check (the harness never runs it: it runs the installed file)."""
    bin_dir = tmp_path / "launchers"
    bin_dir.mkdir()
    npx = bin_dir / "npx"
    npx.write_text("#!/bin/sh\nexit 99\n")
    npx.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def write_registry(path: Path, *agents: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"version": "1.0.0", "agents": list(agents)}))
    return path


def write_table(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def install_package(cache: Path, name: str, version: str, bins: dict[str, str], files: dict[str, str]) -> Path:
    """What ``npm install`` leaves: the package folder with its package.json, and its commands linked in .bin."""
    folder = cache / "node_modules" / name
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": name, "version": version, "bin": bins}))
    for rel, text in files.items():
        (folder / rel).write_text(text)
        (folder / rel).chmod(0o755)
    links = cache / "node_modules" / ".bin"
    links.mkdir(exist_ok=True)
    for command, rel in bins.items():
        link = links / command
        if link.is_symlink():
            link.unlink()  # the last package installed owns the name, as with npm
        link.symlink_to(folder / rel)
    return folder


REFERENCE_AGENT = f"""#!{sys.executable}
import runpy, sys
sys.path.insert(0, {str(REPO)!r})
runpy.run_module("acp_conformance.agent", run_name="__main__")
"""


@pytest.mark.usefixtures("no_network", "npx_on_path")
def test_the_table_resolves_through_the_bundled_registry(tmp_path: Path) -> None:
    agents = load_agents()
    for agent in agents.values():
        if agent.registry is None:
            continue
        command = pinned_command(agent.registry, agent.version, registry="bundled", install=False)
        assert command.kind == "npx" and command.version == agent.version, agent.name
        assert command.package == f"{agent.registry_package}@{agent.version}"
        assert (agent.program, agent.args) == (command.program, tuple(command.args))
        assert agent.bin is None and agent.script is None
    # The v2 builds are the registry's own packages; the v1 builds keep their older name, overriding it.
    assert (
        agents["claude-v2"].package == agents["claude-v2"].registry_package == "@agentclientprotocol/claude-agent-acp"
    )
    assert agents["codex-v2"].package == agents["codex-v2"].registry_package == "@agentclientprotocol/codex-acp"
    assert (agents["claude"].package, agents["claude"].registry_package) == (
        "@zed-industries/claude-agent-acp",
        "@agentclientprotocol/claude-agent-acp",
    )
    assert agents["codex"].package == "@zed-industries/codex-acp"
    assert agents["claude"].spec == "@zed-industries/claude-agent-acp@0.23.1"
    # The entry's arguments, not the table's.
    assert agents["gemini"].args == ("--acp",) and agents["copilot"].args == ("--acp",)
    assert agents["opencode"].args == ("acp",)
    # Both builds of an agent install one command name in .bin: each runs its own package's file.
    # (A cache of our own, so the answer does not depend on what `make real-agents` left in .cache.)
    for name in ("claude", "claude-v2"):
        package = agents[name].package_dir(tmp_path)
        package.mkdir(parents=True)
        (package / "package.json").write_text(json.dumps({"bin": {"claude-agent-acp": "dist/index.js"}}))
    v1, v2 = agents["claude"].argv(tmp_path, node="node"), agents["claude-v2"].argv(tmp_path, node="node")
    assert "@zed-industries/claude-agent-acp" in v1[-1] and "@agentclientprotocol/claude-agent-acp" in v2[-1]


@pytest.mark.usefixtures("no_network", "npx_on_path")
def test_a_registry_entry_with_cmd_and_args(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "registry.json", LIGHT)
    table = write_table(
        tmp_path / "agents.toml",
        '[agents.light]\nregistry = "light-agent"\nversion = "1.2.3"\n\n'
        '[agents.light-old]\nregistry = "light-agent"\npackage = "@old/light-agent"\nversion = "0.1.0"\n',
    )
    agents = load_agents(table, registry=str(registry))
    light, old = agents["light"], agents["light-old"]
    assert (light.package, light.version, light.program, light.args) == (
        "@test/light-agent",
        "1.2.3",  # pinned, though the registry is at 9.9.9
        "light-acp",
        ("--log-level", "ERROR"),
    )
    assert light.spec == "@test/light-agent@1.2.3" and old.spec == "@old/light-agent@0.1.0"
    assert (old.program, old.args) == (light.program, light.args)  # the override changes the package only

    cache = tmp_path / "cache"
    assert outdated([light, old], cache) == [light, old]
    # Not installed yet: where npm will link the entry's command.
    assert light.argv(cache, node="node") == [
        str(cache / "node_modules" / ".bin" / "light-acp"),
        "--log-level",
        "ERROR",
    ]
    files = {"cli.js": "", "acp.js": ""}
    new_dir = install_package(cache, "@test/light-agent", "1.2.3", {"light": "cli.js", "light-acp": "acp.js"}, files)
    old_dir = install_package(cache, "@old/light-agent", "0.1.0", {"light": "cli.js", "light-acp": "acp.js"}, files)
    assert outdated([light, old], cache) == []
    # .bin/light-acp now belongs to the old build; each agent still runs its own package's file, with node.
    assert light.argv(cache, node="node") == ["node", str(new_dir / "acp.js"), "--log-level", "ERROR"]
    assert old.argv(cache, node="node") == ["node", str(old_dir / "acp.js"), "--log-level", "ERROR"]


@pytest.mark.usefixtures("no_network", "npx_on_path")
def test_table_errors_name_the_problem(tmp_path: Path) -> None:
    registry = str(write_registry(tmp_path / "registry.json", LIGHT, BINARY_ONLY))

    def error(text: str) -> str:
        with pytest.raises(TableError) as caught:
            load_agents(write_table(tmp_path / "agents.toml", text), registry=registry)
        return str(caught.value)

    assert "light-agent" in error('[agents.x]\nregistry = "light-agnet"\nversion = "1.0.0"\n')  # a close match
    assert "resolves to 'binary'" in error('[agents.x]\nregistry = "binary-agent"\nversion = "1.0.0"\n')
    mixed = error('[agents.x]\nregistry = "light-agent"\nversion = "1.0.0"\nscript = "a.js"\n')
    assert "['script'] come from the registry entry 'light-agent'" in mixed
    assert "package: required" in error('[agents.x]\nversion = "1.0.0"\nscript = "a.js"\n')  # no id: its own command


@pytest.mark.anyio
@pytest.mark.usefixtures("npx_on_path")
async def test_an_agent_resolved_by_registry_id_is_checked_end_to_end(tmp_path: Path) -> None:
    """The entry's command (a file of the installed package, here starting the reference agent) with the entry's
    arguments, run by the checker: every check passes, and the report says which registry id it came from."""
    registry = write_registry(tmp_path / "registry.json", LIGHT)
    table = write_table(tmp_path / "agents.toml", '[agents.light]\nregistry = "light-agent"\nversion = "1.2.3"\n')
    light = load_agents(table, registry=str(registry))["light"]
    cache = tmp_path / "cache"
    folder = install_package(cache, "@test/light-agent", "1.2.3", {"light-acp": "acp"}, {"acp": REFERENCE_AGENT})
    target = Target.from_spec(light, cache)
    assert list(target.argv) == [str(folder / "acp"), "--log-level", "ERROR"]  # a Python script: run as it is
    report = await check_agent(replace(target, prompt="always"), environ=ENVIRON, limits=LIMITS)
    assert statuses(report) == dict.fromkeys(CHECKS, "pass"), report.cells
    assert_all_gone(report)
    assert report.origin == "registry id `light-agent`, pinned to 1.2.3"
    text = render_markdown([report], command="make real-agents", when="today", environment="here")
    assert "- started by: registry id `light-agent`, pinned to 1.2.3" in text
