"""Hostile archives and downloads (issue 41, items 2, 3 and 5): link chains that only leave the folder once
followed through each other, in a zip and in a tar; the tar data filter's own refusals as ``UnsafeArchive``;
archives and downloads past their caps refused before the disk fills. Everything is served from 127.0.0.1."""

from __future__ import annotations

import io
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from acp_session.registry import (
    DownloadTooLarge,
    RegistryLimits,
    UnsafeArchive,
    current_platform,
    installed_folder,
    resolve_agent,
)
from tests.registry.support import (
    AGENT_SCRIPT,
    RawServer,
    agent_tar,
    agent_zip,
    binary_entry,
    endless_body,
    file_member,
    hostile_tar,
    link_member,
    serve,
    sha256,
    write_registry,
)

PLATFORM = current_platform()


@pytest.fixture(autouse=True)
def cache(registry_cache: Path) -> Path:
    return registry_cache


def _install(tmp_path: Path, name: str, archive: bytes, limits: RegistryLimits | None = None, **extra: object) -> None:
    with serve(tmp_path / "www") as www:
        entry = binary_entry("bad", PLATFORM, www.put(name, archive), sha256(archive))
        entry["distribution"]["binary"][PLATFORM].update(extra)
        registry = write_registry(tmp_path / "registry.json", entry)
        resolve_agent("bad", registry=registry, limits=limits or RegistryLimits())


def _nothing_kept(cache: Path) -> None:
    assert not installed_folder("bad", "1.0.0", PLATFORM).exists()
    agents = cache / "acp-session" / "agents"
    left = [p.relative_to(agents).as_posix() for p in agents.rglob("*")]
    assert set(left) <= {"bad", "bad/.install.lock", "bad/1.0.0"}, left


# l1 resolves to the folder itself; l2 goes through l1 and then four levels up: each looks fine alone.
CHAIN = {"pkg/a/b/c/l1": "../../..", "pkg/a/b/c/l2": "l1/../../../.."}
CHAIN_REVERSED = dict(reversed(list(CHAIN.items())))  # the order of the members must not matter


@pytest.mark.parametrize("links", [CHAIN, CHAIN_REVERSED], ids=["in-order", "reversed"])
def test_a_zip_link_chain_out_of_the_folder_is_refused(tmp_path: Path, cache: Path, links: dict[str, str]) -> None:
    with pytest.raises(UnsafeArchive, match="symbolic link out of the install folder"):
        _install(tmp_path, "agent.zip", agent_zip(links=links))
    _nothing_kept(cache)


@pytest.mark.parametrize("links", [CHAIN, CHAIN_REVERSED], ids=["in-order", "reversed"])
def test_a_tar_link_chain_is_an_unsafe_archive_without_private_paths(
    tmp_path: Path, cache: Path, links: dict[str, str]
) -> None:
    archive = hostile_tar(*(link_member(name, target) for name, target in links.items()))
    with pytest.raises(UnsafeArchive) as caught:
        _install(tmp_path, "agent.tar.gz", archive)
    assert str(tmp_path) not in str(caught.value) and ".partial" not in str(caught.value)
    _nothing_kept(cache)


def test_links_that_loop_are_refused(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(UnsafeArchive, match="loop"):
        _install(tmp_path, "agent.zip", agent_zip(links={"pkg/x": "y", "pkg/y": "x", "pkg/z": "x/f"}))
    _nothing_kept(cache)


def test_a_hard_link_to_a_link_is_refused(tmp_path: Path, cache: Path) -> None:
    archive = hostile_tar(link_member("pkg/a/s", "../bin/agent"), link_member("pkg/h", "pkg/a/s", hard=True))
    with pytest.raises(UnsafeArchive, match="hard link"):
        _install(tmp_path, "agent.tar.gz", archive)
    _nothing_kept(cache)


def test_what_the_tar_data_filter_refuses_is_an_unsafe_archive(tmp_path: Path) -> None:
    # The second line of defence on its own (the checks before it are skipped here): Python's filter refuses
    # the chain, and the error names the member, not the temporary folder.
    from acp_session.registry.archive import _extract_checked_tar

    if not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no tar extraction filters")
    data = hostile_tar(link_member("pkg/a/b/c/l1", "../../.."), link_member("pkg/a/b/c/l2", "l1/../../../.."))
    dest = tmp_path / "private-temporary-folder"
    dest.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar, pytest.raises(UnsafeArchive) as caught:
        _extract_checked_tar(tar, dest, tar.getmembers())
    assert caught.value.member == "pkg/a/b/c/l2" and "private-temporary-folder" not in str(caught.value)


def _zeros_zip(size: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("pkg/bin/agent")
        info.external_attr = (0o100755 & 0xFFFF) << 16
        archive.writestr(info, AGENT_SCRIPT)
        archive.writestr("pkg/zeros", b"\0" * size)
    return buffer.getvalue()


LIMITS = RegistryLimits(extracted_bytes=1024 * 1024, members=50, download_bytes=4 * 1024 * 1024)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_that_expands_past_its_cap_is_refused(tmp_path: Path, cache: Path, kind: str) -> None:
    size = 8 * 1024 * 1024  # compresses to a few KiB
    archive = _zeros_zip(size) if kind == "zip" else hostile_tar(file_member("pkg/zeros", b"\0" * size))
    assert len(archive) < 64 * 1024
    with pytest.raises(UnsafeArchive, match="expands past 1048576 bytes"):
        _install(tmp_path, f"agent.{kind}", archive, LIMITS)
    _nothing_kept(cache)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_with_too_many_members_is_refused(tmp_path: Path, cache: Path, kind: str) -> None:
    names = {f"pkg/many/{n}": b"" for n in range(60)}
    archive = agent_zip(names) if kind == "zip" else hostile_tar(*(file_member(n, b"") for n in names))
    with pytest.raises(UnsafeArchive, match="more than 50 members"):
        _install(tmp_path, f"agent.{kind}", archive, LIMITS)
    _nothing_kept(cache)


def test_a_download_without_length_stops_at_its_cap(tmp_path: Path, cache: Path) -> None:
    with RawServer(endless_body()) as server:
        entry = binary_entry("bad", PLATFORM, f"{server.url}/agent.tar.gz", None)
        registry = write_registry(tmp_path / "registry.json", entry)
        started = time.monotonic()
        with pytest.raises(DownloadTooLarge) as caught:
            resolve_agent("bad", registry=registry, limits=LIMITS)
        elapsed = time.monotonic() - started
    assert caught.value.limit == LIMITS.download_bytes and elapsed < 30
    # What the server got out before the client hung up: the cap plus what the sockets buffer, not more.
    assert server.sent < LIMITS.download_bytes + 16 * 1024 * 1024
    _nothing_kept(cache)


def test_a_declared_length_past_the_cap_is_refused_before_reading(tmp_path: Path, cache: Path) -> None:
    big = agent_tar() + b"\0" * (5 * 1024 * 1024)  # a valid gzip stream followed by padding
    with pytest.raises(DownloadTooLarge):
        _install(tmp_path, "agent.tar.gz", big, LIMITS)
    _nothing_kept(cache)


def test_the_entry_s_declared_size_is_the_cap(tmp_path: Path, cache: Path) -> None:
    archive = agent_tar()
    with pytest.raises(DownloadTooLarge) as caught:
        _install(tmp_path, "agent.tar.gz", archive, size=len(archive) - 1)
    assert caught.value.limit == len(archive) - 1
    _nothing_kept(cache)
    _install(tmp_path, "agent.tar.gz", archive, size=len(archive))  # exactly its size: fine
    assert installed_folder("bad", "1.0.0", PLATFORM).is_dir()


def test_a_corrupt_archive_is_an_unsafe_archive(tmp_path: Path, cache: Path) -> None:
    for name, data in (("agent.tar.gz", agent_tar()[:100]), ("agent.zip", b"PK\x03\x04 not a zip")):
        with pytest.raises(UnsafeArchive, match="not a readable"):
            _install(tmp_path, name, data)
    _nothing_kept(cache)
