"""A hostile registry entry cannot delete or write files outside the cache, nor run a program outside its
archive, nor slip an option to npx/uvx (issue 41, items 1, 4 and 14): each is refused with ``InvalidEntry``
(or ``OutsideCache`` for a link planted in the cache) before anything is written, removed or run. The archives
are valid and checksummed, served from 127.0.0.1: only the entry is hostile."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_session.registry import (
    InvalidEntry,
    InvalidRegistry,
    OutsideCache,
    current_platform,
    load_registry,
    resolve_agent,
    resolve_command,
)
from tests.cli.support import CLI, cli_env
from tests.registry.support import agent_tar, binary_entry, serve, sha256, tree_snapshot, write_registry

PLATFORM = current_platform()


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A user's folder of projects next to the cache: nothing in it may change."""
    root = tmp_path / "victim"
    for project in ("a", "b", "keep"):
        (root / project).mkdir(parents=True)
        (root / project / "main.py").write_text(f"print('{project}')\n")
    return root


@pytest.fixture
def cache(registry_cache: Path) -> Path:
    return registry_cache


def _outside_cache(tmp_path: Path) -> dict[str, bytes | None]:
    return tree_snapshot(tmp_path, skip=("cache", "www", "registry.json"))


def _hostile(tmp_path: Path, www: Any, **changes: Any) -> Path:
    archive = agent_tar()
    entry = binary_entry("evil", PLATFORM, www.put("agent.tar.gz", archive), sha256(archive))
    target = entry["distribution"]["binary"][PLATFORM]
    for key in ("cmd", "args"):
        if key in changes:
            target[key] = changes.pop(key)
    entry.update(changes)
    return write_registry(tmp_path / "registry.json", entry)


@pytest.mark.parametrize("kind", ["relative", "absolute"])
@pytest.mark.usefixtures("cache")
def test_a_version_that_leaves_the_cache_deletes_and_writes_nothing(tmp_path: Path, victim: Path, kind: str) -> None:
    # cache/acp-session/agents/evil/<version>/<platform>: four levels up is tmp_path.
    version = "../../../../victim/a" if kind == "relative" else str(victim / "a")
    before = _outside_cache(tmp_path)
    with serve(tmp_path / "www") as www:
        registry = _hostile(tmp_path, www, version=version)
        with pytest.raises(InvalidEntry) as caught:
            try:
                resolve_agent("evil", registry=registry)
            finally:
                assert _outside_cache(tmp_path) == before  # the victim's projects are all there, nothing added
        assert www.hits == {}  # refused before the download
    assert caught.value.agent_id == "evil" and caught.value.field == "version" and "evil" in str(caught.value)
    assert isinstance(caught.value, InvalidRegistry)  # what callers caught before


@pytest.mark.parametrize("agent_id", ["../../../victim", "/tmp/victim", "Evil", "a" * 101, ""])
@pytest.mark.usefixtures("cache")
def test_an_id_that_is_not_a_registry_id_is_refused(tmp_path: Path, victim: Path, agent_id: str) -> None:
    before = _outside_cache(tmp_path)
    with serve(tmp_path / "www") as www:
        registry = load_registry(_hostile(tmp_path, www, id=agent_id))
        with pytest.raises(InvalidEntry, match="is not a registry id"):
            resolve_command(registry.agents[0])
    assert _outside_cache(tmp_path) == before


@pytest.mark.parametrize(
    ("cmd", "args"),
    [
        ("../../../../../../bin/sh", []),
        ("/bin/sh", []),
        ("pkg\\..\\..\\..\\..\\..\\..\\bin\\sh", []),
        ("./pkg/bin/agent", ["../../../../../evil.js"]),
        ("./pkg/bin/agent", ["/etc/passwd"]),
        ("./pkg/bin/agent", ["ok\0bad"]),
    ],
)
def test_a_command_or_argument_outside_the_archive_is_refused(
    tmp_path: Path, cache: Path, cmd: str, args: list[str]
) -> None:
    with serve(tmp_path / "www") as www:
        registry = _hostile(tmp_path, www, cmd=cmd, args=args)
        with pytest.raises(InvalidEntry) as caught:
            resolve_agent("evil", registry=registry)
    assert caught.value.field in ("cmd", "argument")
    assert not (cache / "acp-session" / "agents" / "evil" / "1.0.0" / PLATFORM).exists()


def test_a_command_through_a_link_inside_the_archive_still_runs(tmp_path: Path, cache: Path) -> None:
    from tests.registry.support import hostile_tar, link_member

    archive = hostile_tar(link_member("pkg/sh", "bin/agent"))  # inside, fine: the command resolves inside too
    with serve(tmp_path / "www") as www:
        entry = binary_entry("linked", PLATFORM, www.put("a.tar.gz", archive), sha256(archive), cmd="./pkg/sh")
        command = resolve_agent("linked", registry=write_registry(tmp_path / "registry.json", entry))
    assert os.path.realpath(command.argv[0]).endswith("pkg/bin/agent")


def test_a_link_planted_in_the_cache_is_not_followed(tmp_path: Path, cache: Path, victim: Path) -> None:
    agent_dir = cache / "acp-session" / "agents" / "evil"
    agent_dir.mkdir(parents=True)
    (agent_dir / "1.0.0").symlink_to(victim)  # someone made the version folder a link to the user's projects
    (agent_dir / "0.9.0").symlink_to(victim / "b")  # and an "old version" too
    before = _outside_cache(tmp_path)
    with serve(tmp_path / "www") as www:
        registry = _hostile(tmp_path, www)
        with pytest.raises(OutsideCache):
            resolve_agent("evil", registry=registry)
    assert _outside_cache(tmp_path) == before


def _package_registry(tmp_path: Path, launcher: str, **dist: Any) -> Path:
    agent = {"id": "pkg-agent", "name": "P", "version": "1.0.0", "description": "d", "distribution": {launcher: dist}}
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({"version": "1.0.0", "agents": [agent]}))
    return path


HOSTILE_PACKAGES = {
    "npx": ["-y", "--registry=http://127.0.0.1:9", "--call=touch owned", "../evil", "/tmp/evil", "git+https://x/y.git",
            "http://127.0.0.1:9/x.tgz", "npm:other@1", ".hidden", "_under", "a b", "@scope/../x", ""],
    "uvx": ["-x", "--with=evil", "--from=evil", "../evil", "/tmp/evil", "git+https://x/y", "x @ file:///tmp/x",
            "x; rm", "-", ""],
}  # fmt: skip


@pytest.mark.parametrize(
    ("launcher", "package"), [(launcher, p) for launcher, packages in HOSTILE_PACKAGES.items() for p in packages]
)
@pytest.mark.usefixtures("launchers")
def test_a_package_that_is_not_a_package_name_is_refused(tmp_path: Path, launcher: str, package: str) -> None:
    registry = _package_registry(tmp_path, launcher, package=package)
    with pytest.raises(InvalidEntry, match="is not a package name") as caught:
        resolve_agent("pkg-agent", registry=registry)
    assert caught.value.field == f"{launcher} package" and caught.value.value == package


@pytest.mark.parametrize("cmd", ["-c", "--eval=1", "../x", "/bin/sh", "a b"])
@pytest.mark.usefixtures("launchers")
def test_a_program_that_is_not_a_program_name_is_refused(tmp_path: Path, cmd: str) -> None:
    registry = _package_registry(tmp_path, "npx", package="ok@1.0.0", cmd=cmd)
    with pytest.raises(InvalidEntry, match="is not a program name"):
        resolve_agent("pkg-agent", registry=registry)


@pytest.mark.usefixtures("launchers")
def test_packages_follow_an_end_of_options_marker(tmp_path: Path) -> None:
    plain = _package_registry(tmp_path, "npx", package="@scope/name@1.2.3-rc.1", args=["--acp"])
    assert resolve_agent("pkg-agent", registry=plain).argv == ["npx", "--yes", "--", "@scope/name@1.2.3-rc.1", "--acp"]
    spec = _package_registry(tmp_path, "uvx", package="name[extra]>=1.0,<2", args=["acp"])
    assert resolve_agent("pkg-agent", registry=spec).argv == ["uvx", "--", "name[extra]>=1.0,<2", "acp"]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("ACP_SESSION_REGISTRY", None)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)


def test_the_cli_refuses_a_hostile_entry_and_deletes_nothing(tmp_path: Path, victim: Path) -> None:
    with serve(tmp_path / "www") as www:
        registry = _hostile(tmp_path, www, version=str(victim / "a"))
        before = _outside_cache(tmp_path)
        installed = _cli(tmp_path, "agents", "install", "evil", "--registry", str(registry))
        assert _outside_cache(tmp_path) == before
        chat = _cli(tmp_path, "chat", "--agent", "evil", "--registry", str(registry), "hi")
        assert www.hits == {}
    for run in (installed, chat):
        assert run.returncode == 1, run.stderr  # the agent cannot be run (docs/cli.md, exit codes)
        assert f"registry entry 'evil': version '{victim / 'a'}' is not a plain version" in run.stderr
        assert "Traceback" not in run.stderr
    assert _outside_cache(tmp_path) == before


@pytest.mark.anyio
@pytest.mark.usefixtures("cache")
async def test_spawning_a_hostile_entry_by_id_is_refused(tmp_path: Path, victim: Path) -> None:
    from acp_session import ClientBuilder

    before = _outside_cache(tmp_path)
    with serve(tmp_path / "www") as www:
        registry = _hostile(tmp_path, www, version="../../../../victim/a")
        with pytest.raises(InvalidEntry, match="version"):
            async with ClientBuilder().spawn("evil", registry=registry):
                pass
    assert _outside_cache(tmp_path) == before


def test_environment_names_that_are_not_names_are_dropped() -> None:
    from acp_session.registry import sanitize_env

    given = {"A=B": "x", "NUL\0": "y", "ESC\x1b": "z", "VALUE_NUL": "v\0w", "FINE": "1"}
    assert sanitize_env(given) == {"FINE": "1"}
