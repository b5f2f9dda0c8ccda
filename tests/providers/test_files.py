"""LocalFileSystem over real files under tmp_path: what a session may read and write, and what it is refused."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import anyio
import pytest

from acp_session.errors import InternalError, InvalidParams, MethodNotFound, ResourceNotFound, RpcError
from acp_session.providers import FileSystemProvider, LocalFileSystem
from acp_session.providers.files import _open_parent, select_lines
from acp_session.schema import v1

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\r\nthree\nfour\n", encoding="utf-8")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("secret\n")
    return place


@pytest.fixture
def fs(project: Path) -> LocalFileSystem:
    provider = LocalFileSystem()
    provider.open_session("s1", str(project))
    return provider


async def read(fs: LocalFileSystem, path: str | Path, session: str = "s1", **kw: int | None) -> str:
    request = v1.ReadTextFileRequest(session_id=session, path=str(path), **kw)
    return (await fs.read_text_file(request)).content


async def write(fs: LocalFileSystem, path: str | Path, content: str, session: str = "s1") -> None:
    await fs.write_text_file(v1.WriteTextFileRequest(session_id=session, path=str(path), content=content))


def assert_clean(error: RpcError) -> None:
    """Errors reach the agent as they are: a clear message, never a traceback."""
    assert error.message and "Traceback" not in error.message and 'File "' not in error.message


def test_the_provider_satisfies_its_protocol(fs: LocalFileSystem) -> None:
    assert isinstance(fs, FileSystemProvider)
    assert (fs.can_read, fs.can_write) == (True, True)
    assert LocalFileSystem(read=False).can_read is False
    assert LocalFileSystem(write=False).can_write is False


async def test_read_whole_file(fs: LocalFileSystem, project: Path) -> None:
    assert await read(fs, project / "notes.txt") == "one\ntwo\r\nthree\nfour\n"


async def test_read_honours_line_and_limit(fs: LocalFileSystem, project: Path) -> None:
    path = project / "notes.txt"
    assert await read(fs, path, line=2, limit=2) == "two\r\nthree\n"
    assert await read(fs, path, line=3) == "three\nfour\n"
    assert await read(fs, path, limit=1) == "one\n"
    assert await read(fs, path, line=1, limit=0) == ""
    assert await read(fs, path, line=9) == ""
    assert await read(fs, path, line=4, limit=10) == "four\n"
    assert await read(fs, path, line=None, limit=None) == "one\ntwo\r\nthree\nfour\n"


def test_select_lines_edges() -> None:
    assert select_lines("a\nb", 2, None) == "b"
    assert select_lines("a\nb", 2, 5) == "b"
    assert select_lines("a\nb\n", 3, None) == ""
    assert select_lines("", 1, 1) == ""
    assert select_lines("a\n", 0, 1) == "a\n"  # line 0 reads from the first line


async def test_meta_is_ignored(fs: LocalFileSystem, project: Path) -> None:
    """ACP1-005: values under _meta change nothing."""
    request = v1.ReadTextFileRequest(session_id="s1", path=str(project / "notes.txt"), meta={"line": 3, "x": [1]})
    assert (await fs.read_text_file(request)).content == "one\ntwo\r\nthree\nfour\n"
    await fs.write_text_file(
        v1.WriteTextFileRequest(session_id="s1", path=str(project / "m.txt"), content="m", meta={"path": "/etc/x"})
    )
    assert (project / "m.txt").read_text() == "m"


async def test_write_creates_a_new_file_and_its_parents(fs: LocalFileSystem, project: Path) -> None:
    await write(fs, project / "new.txt", "héllo\n")
    assert (project / "new.txt").read_bytes() == "héllo\n".encode()
    await write(fs, project / "src" / "pkg" / "mod.py", "x = 1\n")
    assert (project / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert await read(fs, project / "src" / "pkg" / "mod.py") == "x = 1\n"


async def test_write_replaces_atomically_and_keeps_the_mode(fs: LocalFileSystem, project: Path) -> None:
    target = project / "notes.txt"
    target.chmod(0o640)
    twin = project / "twin.txt"
    os.link(target, twin)  # a hard link keeps the old inode: the write replaced the file instead of editing it
    await write(fs, target, "replaced")
    assert target.read_text() == "replaced"
    assert twin.read_bytes() == b"one\ntwo\r\nthree\nfour\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir()) == ["notes.txt", "twin.txt"]  # no temporary file left


async def test_write_drops_setuid_bits(fs: LocalFileSystem, project: Path) -> None:
    target = project / "tool"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o4755)
    await write(fs, target, "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


async def test_relative_paths_are_refused(fs: LocalFileSystem, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    for path in ("notes.txt", "./notes.txt", "../project/notes.txt"):
        with pytest.raises(InvalidParams, match="absolute") as info:
            await read(fs, path)
        assert_clean(info.value)
        with pytest.raises(InvalidParams, match="absolute"):
            await write(fs, path, "x")
    assert (project / "notes.txt").read_text().startswith("one")


async def test_dotdot_cannot_escape(fs: LocalFileSystem, project: Path, outside: Path) -> None:
    sneaky = f"{project}/../outside/secret.txt"
    with pytest.raises(InvalidParams, match="outside the directories") as info:
        await read(fs, sneaky)
    assert info.value.code == -32602
    assert_clean(info.value)
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, f"{project}/../outside/planted.txt", "x")
    assert not (outside / "planted.txt").exists()
    # ".." that stays inside is fine
    assert await read(fs, f"{project}/sub/../notes.txt", limit=1) == "one\n"


async def test_symlink_escape_is_refused_for_reads(fs: LocalFileSystem, project: Path, outside: Path) -> None:
    (project / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await read(fs, project / "link.txt")
    # a link that stays inside the root is followed
    (project / "alias.txt").symlink_to(project / "notes.txt")
    assert await read(fs, project / "alias.txt", limit=1) == "one\n"


async def test_symlink_escape_is_refused_for_writes(fs: LocalFileSystem, project: Path, outside: Path) -> None:
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "dangling.txt").symlink_to(outside / "created.txt")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, project / "link.txt", "overwritten")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, project / "dangling.txt", "created")
    assert (outside / "secret.txt").read_text() == "secret\n"
    assert not (outside / "created.txt").exists()
    assert (project / "link.txt").is_symlink()


async def test_symlinked_parent_directory_is_refused(fs: LocalFileSystem, project: Path, outside: Path) -> None:
    (project / "door").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidParams, match="outside the directories"):
        await read(fs, project / "door" / "secret.txt")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, project / "door" / "planted.txt", "x")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, project / "door" / "deeper" / "planted.txt", "x")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing created outside, not even a dir


async def test_another_sessions_cwd_is_out_of_reach(fs: LocalFileSystem, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "theirs.txt").write_text("theirs")
    fs.open_session("s2", str(other))
    with pytest.raises(InvalidParams, match="outside the directories"):
        await read(fs, other / "theirs.txt", session="s1")
    with pytest.raises(InvalidParams, match="outside the directories"):
        await write(fs, other / "mine.txt", "x", session="s1")
    assert await read(fs, other / "theirs.txt", session="s2") == "theirs"


async def test_additional_directories_and_embedder_roots(project: Path, tmp_path: Path) -> None:
    extra, shared = tmp_path / "extra", tmp_path / "shared"
    extra.mkdir()
    shared.mkdir()
    provider = LocalFileSystem(roots=[shared])
    provider.open_session("s1", str(project), [str(extra)])
    await write(provider, extra / "e.txt", "e")
    await write(provider, shared / "s.txt", "s")
    assert await read(provider, extra / "e.txt") == "e"
    assert await read(provider, shared / "s.txt") == "s"
    assert provider.allowed_roots("s1") == (str(project), str(extra), str(shared))


async def test_closed_and_unknown_sessions_are_refused(fs: LocalFileSystem, project: Path) -> None:
    fs.close_session("s1")
    fs.close_session("never-opened")  # harmless
    for session in ("s1", "nobody"):
        with pytest.raises(ResourceNotFound, match="unknown or closed session") as info:
            await read(fs, project / "notes.txt", session=session)
        assert info.value.code == -32002
        assert info.value.data == {"sessionId": session}
        with pytest.raises(ResourceNotFound, match="unknown or closed session"):
            await write(fs, project / "x.txt", "x", session=session)
    assert not (project / "x.txt").exists()


async def test_missing_file_is_resource_not_found(fs: LocalFileSystem, project: Path) -> None:
    for path in (project / "absent.txt", project / "no" / "such" / "dir.txt", project / "notes.txt" / "below"):
        with pytest.raises(ResourceNotFound, match="does not exist") as info:
            await read(fs, path)
        assert info.value.code == -32002
        assert_clean(info.value)


async def test_too_large_file_is_refused(project: Path) -> None:
    provider = LocalFileSystem(max_read_bytes=10)
    provider.open_session("s1", str(project))
    (project / "ten.txt").write_text("0123456789")
    assert await read(provider, project / "ten.txt") == "0123456789"
    with pytest.raises(InvalidParams, match="larger than the 10-byte limit") as info:
        await read(provider, project / "notes.txt")
    assert info.value.data == {"path": str(project / "notes.txt"), "size": 20, "limit": 10}


async def test_undecodable_file_is_refused(fs: LocalFileSystem, project: Path) -> None:
    (project / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InvalidParams, match=r"not UTF-8 text \(invalid byte at offset 3\)"):
        await read(fs, project / "latin1.txt")


async def test_lone_surrogate_content_is_refused(fs: LocalFileSystem, project: Path) -> None:
    with pytest.raises(InvalidParams, match="not valid Unicode"):
        await write(fs, project / "bad.txt", "a\ud800b")
    assert not (project / "bad.txt").exists()


async def test_disabled_methods_answer_method_not_found(project: Path) -> None:
    provider = LocalFileSystem(read=False, write=False)
    provider.open_session("s1", str(project))
    with pytest.raises(MethodNotFound, match="fs/read_text_file is not enabled") as info:
        await read(provider, project / "notes.txt")
    assert info.value.code == -32601
    with pytest.raises(MethodNotFound, match="fs/write_text_file is not enabled"):
        await write(provider, project / "x.txt", "x")


async def test_directories_and_special_files_are_refused(fs: LocalFileSystem, project: Path) -> None:
    (project / "dir").mkdir()
    for path in (project, project / "dir"):
        with pytest.raises(InvalidParams, match="is a directory"):
            await read(fs, path)
        with pytest.raises(InvalidParams, match="is a directory"):
            await write(fs, path, "x")
    os.mkfifo(project / "pipe")
    with anyio.fail_after(2):  # opening a FIFO must not wait for a writer
        with pytest.raises(InvalidParams, match="not a regular file"):
            await read(fs, project / "pipe")
        with pytest.raises(InvalidParams, match="not a regular file"):
            await write(fs, project / "pipe", "x")


async def test_a_parent_that_is_a_file_is_refused_for_writes(fs: LocalFileSystem, project: Path) -> None:
    with pytest.raises(InvalidParams, match="not a directory"):
        await write(fs, project / "notes.txt" / "below.txt", "x")


async def test_permission_denied_is_a_clear_internal_error(fs: LocalFileSystem, project: Path) -> None:
    if os.geteuid() == 0:
        # Root ignores permission bits on ordinary files, but not on a write-only sysctl: a real EACCES all the same.
        locked = Path("/proc/sys/vm/compact_memory")
        if not locked.exists():
            pytest.skip("running as root, and no write-only sysctl to read instead")
        fs.open_session("root", str(locked.parent))
        with pytest.raises(InternalError, match="Permission denied") as info:
            await fs.read_text_file(v1.ReadTextFileRequest(session_id="root", path=str(locked)))
    else:
        (project / "locked.txt").write_text("x")
        (project / "locked.txt").chmod(0)
        with pytest.raises(InternalError, match="Permission denied") as info:
            await read(fs, project / "locked.txt")
    assert_clean(info.value)


def test_relative_session_directories_are_an_embedder_error() -> None:
    with pytest.raises(ValueError, match="absolute"):
        LocalFileSystem().open_session("s1", "relative/dir")
    with pytest.raises(ValueError, match="absolute"):
        LocalFileSystem(roots=["relative"])


def test_a_symlink_swapped_in_after_the_check_is_not_followed(project: Path, outside: Path) -> None:
    """The checked path is opened one directory at a time with O_NOFOLLOW, so a link that appears between the
    check and the open (a race no test can time) fails instead of leading outside."""
    (project / "door").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError) as info:
        _open_parent(str(project), ["door", "planted.txt"], create=True)
    assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
