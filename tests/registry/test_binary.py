"""Binary distributions end to end, without the internet: an archive served from 127.0.0.1 is downloaded,
verified, extracted into the per-user cache and run; bad checksums, other platforms and hostile archives are
refused with their own errors, and nothing of them is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_session import ClientBuilder
from acp_session.registry import (
    ChecksumMismatch,
    InvalidRegistry,
    NoDistribution,
    RegistryOffline,
    UnsafeArchive,
    current_platform,
    installed_folder,
    load_registry,
    resolve_agent,
)
from tests.registry.support import (
    agent_tar,
    agent_zip,
    binary_entry,
    closed_port_url,
    device_member,
    file_member,
    hostile_tar,
    link_member,
    serve,
    sha256,
    write_registry,
)

PLATFORM = current_platform()


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own per-user cache (``XDG_CACHE_HOME``)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("ACP_SESSION_REGISTRY", raising=False)
    return cache


@pytest.mark.anyio
async def test_binary_agent_is_downloaded_verified_extracted_and_runs_a_turn(tmp_path: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        url = www.put("agent.tar.gz", archive)
        entry = binary_entry("local-agent", PLATFORM, url, sha256(archive))
        registry = write_registry(tmp_path / "registry.json", entry)
        async with ClientBuilder().spawn("local-agent", registry=registry) as client:
            conversation = await client.start_conversation(str(tmp_path))
            response = await conversation.chat_to_completion("hello")
        assert response.stop_reason == "end_turn" and response.text
        assert www.hits == {"/agent.tar.gz": 1}
    folder = installed_folder("local-agent", "1.0.0", PLATFORM)
    assert os.access(folder / "pkg" / "bin" / "agent", os.X_OK)
    # The registry's env reached the agent, less what its rules drop (LD_PRELOAD).
    assert (folder / "pkg" / "bin" / "env-seen").read_text().split() == ["from-registry", "unset"]
    # The server is gone: the same version is reused from the cache without the network.
    command = resolve_agent("local-agent", registry=registry)
    assert command.argv == [str(folder / "pkg" / "bin" / "agent")] and command.kind == "binary"
    assert command.env == {"ACP_TEST_MARK": "from-registry"}


def test_zip_and_raw_file_distributions_install(tmp_path: Path) -> None:
    zipped, raw = agent_zip(), b"#!/bin/sh\necho raw\n"
    with serve(tmp_path / "www") as www:
        entries = [
            binary_entry("zipped", PLATFORM, www.put("agent.zip", zipped), sha256(zipped)),
            binary_entry("raw", PLATFORM, www.put("raw-agent-linux", raw), sha256(raw), cmd="./raw-agent"),
        ]
        registry = write_registry(tmp_path / "registry.json", *entries)
        zip_command = resolve_agent("zipped", registry=registry)
        raw_command = resolve_agent("raw", registry=registry)
    assert os.access(zip_command.argv[0], os.X_OK) and zip_command.argv[0].endswith("pkg/bin/agent")
    assert raw_command.argv == [str(installed_folder("raw", "1.0.0", PLATFORM) / "raw-agent")]
    assert Path(raw_command.argv[0]).read_bytes() == raw and os.access(raw_command.argv[0], os.X_OK)


def test_a_new_version_replaces_the_old_install(tmp_path: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        url = www.put("agent.tar.gz", archive)
        path = tmp_path / "registry.json"
        write_registry(path, binary_entry("local-agent", PLATFORM, url, sha256(archive)))
        old = resolve_agent("local-agent", registry=path)
        write_registry(path, binary_entry("local-agent", PLATFORM, url, sha256(archive), version="1.1.0"))
        new = resolve_agent("local-agent", registry=path)
        assert www.hits["/agent.tar.gz"] == 2
    assert new.version == "1.1.0" and os.path.exists(new.argv[0]) and not os.path.exists(old.argv[0])


def test_bad_checksum_is_refused_and_nothing_is_kept(tmp_path: Path, user_cache: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        url = www.put("agent.tar.gz", archive)
        registry = write_registry(tmp_path / "registry.json", binary_entry("local-agent", PLATFORM, url, "0" * 64))
        with pytest.raises(ChecksumMismatch) as caught:
            resolve_agent("local-agent", registry=registry)
    assert caught.value.actual == sha256(archive) and caught.value.expected == "0" * 64
    assert not installed_folder("local-agent", "1.0.0", PLATFORM).exists()
    assert [p.name for p in (user_cache / "acp-session" / "agents" / "local-agent" / "1.0.0").iterdir()] == []


def test_no_distribution_for_this_platform(tmp_path: Path) -> None:
    other = "windows-aarch64" if PLATFORM != "windows-aarch64" else "linux-x86_64"
    entry = binary_entry("elsewhere", other, "http://127.0.0.1:9/x", None)
    registry = write_registry(tmp_path / "registry.json", entry)
    with pytest.raises(NoDistribution) as caught:
        resolve_agent("elsewhere", registry=registry)
    assert caught.value.platform == PLATFORM and caught.value.available == [f"binary for {other}"]
    assert PLATFORM in str(caught.value)


def test_offline_with_nothing_cached(tmp_path: Path) -> None:
    registry = write_registry(
        tmp_path / "registry.json", binary_entry("local-agent", PLATFORM, closed_port_url() + "/a.tar.gz", None)
    )
    with pytest.raises(RegistryOffline, match="nothing is cached"):
        resolve_agent("local-agent", registry=registry)


HOSTILE = {
    "parent path": hostile_tar(file_member("../escaped", b"owned")),
    "nested parent path": hostile_tar(file_member("pkg/../../escaped", b"owned")),
    "absolute path": hostile_tar(file_member("/tmp/acp-session-test-escaped", b"owned")),
    "symlink out": hostile_tar(link_member("pkg/out", "../../escaped")),
    "absolute symlink": hostile_tar(link_member("pkg/passwd", "/etc/passwd")),
    "hard link out": hostile_tar(link_member("pkg/hard", "../escaped", hard=True)),
    "a link to . then a link .. through it": hostile_tar(link_member("pkg/l1", "."), link_member("pkg/l1/l2", "../..")),
    "a file written through a link": hostile_tar(link_member("pkg/d", "."), file_member("pkg/d/x", b"x")),
    "device": hostile_tar(device_member("pkg/null")),
    "zip parent path": agent_zip({"../escaped": b"owned"}),
    "zip absolute path": agent_zip({"/tmp/acp-session-test-escaped": b"owned"}),
    "zip symlink out": agent_zip(links={"pkg/out": "../../escaped"}),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_archives_are_refused(tmp_path: Path, case: str) -> None:
    archive = HOSTILE[case]
    suffix = "zip" if case.startswith("zip") else "tar.gz"
    with serve(tmp_path / "www") as www:
        url = www.put(f"agent.{suffix}", archive)
        registry = write_registry(tmp_path / "registry.json", binary_entry("bad", PLATFORM, url, sha256(archive)))
        with pytest.raises(UnsafeArchive):
            resolve_agent("bad", registry=registry)
    assert not installed_folder("bad", "1.0.0", PLATFORM).exists()
    assert not any(p.name == "escaped" for p in tmp_path.rglob("escaped"))
    assert not os.path.exists("/tmp/acp-session-test-escaped")


def test_registry_from_a_url_is_cached_for_a_day(tmp_path: Path) -> None:
    with serve(tmp_path / "www") as www:
        (tmp_path / "www" / "registry.json").write_text(
            write_registry(tmp_path / "r.json", binary_entry("a", PLATFORM, "http://127.0.0.1:9/a", None)).read_text()
        )
        url = f"{www.url}/registry.json"
        first = load_registry(url)
        second = load_registry(url)
        assert www.hits == {"/registry.json": 1}
        assert [a.id for a in first.agents] == [a.id for a in second.agents] == ["a"]
        assert "cached" in second.origin
    # Offline now: the cached copy still serves; a forced refresh says it could not.
    assert [a.id for a in load_registry(url).agents] == ["a"]
    with pytest.raises(RegistryOffline):
        load_registry(url, refresh=True)
    with pytest.raises(RegistryOffline):
        load_registry(closed_port_url() + "/registry.json")


def test_the_default_registry_falls_back_to_the_bundled_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("acp_session.registry.source.DEFAULT_REGISTRY_URL", closed_port_url() + "/registry.json")
    registry = load_registry()
    assert registry.origin.startswith("bundled snapshot of ") and len(registry.agents) > 20


def test_links_inside_the_folder_are_kept(tmp_path: Path) -> None:
    tarred = hostile_tar(link_member("pkg/current", "bin"), link_member("pkg/bin/run", "agent"))
    zipped = agent_zip(links={"pkg/current": "bin", "pkg/bin/run": "agent"})
    with serve(tmp_path / "www") as www:
        entries = [
            binary_entry(
                f"linked-{kind.replace('.', '-')}",
                PLATFORM,
                www.put(f"a.{kind}", data),
                sha256(data),
                cmd="./pkg/current/run",
            )
            for kind, data in (("tar.gz", tarred), ("zip", zipped))
        ]
        registry = write_registry(tmp_path / "registry.json", *entries)
        for entry in entries:
            command = resolve_agent(entry["id"], registry=registry)
            folder = Path(command.argv[0]).parent.parent
            assert os.readlink(folder / "current") == "bin" and os.readlink(folder / "bin" / "run") == "agent"
            assert os.access(command.argv[0], os.X_OK)


def test_an_archive_without_the_command_is_not_installed(tmp_path: Path) -> None:
    archive = agent_tar()
    with serve(tmp_path / "www") as www:
        entry = binary_entry("wrong", PLATFORM, www.put("a.tar.gz", archive), sha256(archive), cmd="./bin/missing")
        registry = write_registry(tmp_path / "registry.json", entry)
        with pytest.raises(InvalidRegistry, match=r"has no \./bin/missing"):
            resolve_agent("wrong", registry=registry)
    assert not installed_folder("wrong", "1.0.0", PLATFORM).exists()
