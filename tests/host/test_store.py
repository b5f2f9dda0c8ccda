"""The host's durable store (``acp_session.host.store``) on a real directory: what it keeps, its bounds, that it
survives the process that wrote it (a real Python subprocess, closed cleanly or killed), its permissions, the links
and files it refuses, one host per directory, and its life cycle."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import stat
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from acp_session.host.store import DATABASE_NAME, SCHEMA_VERSION, SessionStore, StoredSession, StoreError

pytestmark = pytest.mark.anyio


def at(path: Path) -> str:
    """A message's start: the path named, as a pattern."""
    return "^" + re.escape(str(path))


def stored(session_id: str, *, updated_at: float = 2.0, **changes: object) -> StoredSession:
    fields: dict[str, object] = {
        "session_id": session_id,
        "agent_session_id": f"agent-{session_id}",
        "cwd": "/work/project",
        "title": None,
        "agent": "acp-reference-agent --quiet",
        "protocol_version": 2,
        "created_at": 1.0,
        "updated_at": updated_at,
        "resumable": True,
    }
    fields.update(changes)
    return StoredSession(**fields)  # type: ignore[arg-type]


def update(n: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}' % n


async def test_sessions_are_kept_replaced_and_listed_newest_first(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path / "store") as store:
        assert await store.sessions() == []
        assert await store.session("a") is None
        await store.put_session(stored("a", updated_at=10.0))
        await store.put_session(stored("b", updated_at=30.0, title="Fix the parser", agent_session_id=None))
        await store.put_session(stored("c", updated_at=20.0, resumable=False, protocol_version=1))
        assert [s.session_id for s in await store.sessions()] == ["b", "c", "a"]
        assert await store.session("b") == stored("b", updated_at=30.0, title="Fix the parser", agent_session_id=None)
        assert await store.session("c") == stored("c", updated_at=20.0, resumable=False, protocol_version=1)

        # Replacing a session keeps its messages and their numbering.
        assert await store.append("a", [update(1), update(2)]) == [1, 2]
        await store.put_session(stored("a", updated_at=40.0, title="Renamed"))
        assert (await store.sessions())[0] == stored("a", updated_at=40.0, title="Renamed")
        assert await store.append("a", [update(3)]) == [3]
        assert await store.messages("a") == [(1, update(1)), (2, update(2)), (3, update(3))]


async def test_sequence_numbers_increase_per_session_and_after_reads_the_rest(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path) as store:
        await store.put_session(stored("a"))
        await store.put_session(stored("b"))
        assert await store.append("a", [update(1), update(2), update(3)]) == [1, 2, 3]
        assert await store.append("b", [update(10)]) == [1]
        assert await store.append("a", []) == []
        assert await store.append("a", [b"\xff\x00 not utf-8"]) == [4]
        assert await store.messages("a", after=2) == [(3, update(3)), (4, b"\xff\x00 not utf-8")]
        assert await store.messages("a", after=4) == []
        assert await store.messages("b") == [(1, update(10))]
        assert await store.messages("unknown") == []


async def test_the_bound_drops_the_oldest_and_the_numbers_go_on(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path, max_messages_per_session=3) as store:
        assert store.max_messages_per_session == 3
        await store.put_session(stored("a"))
        await store.put_session(stored("b"))
        assert await store.append("a", [update(1), update(2)]) == [1, 2]
        assert await store.append("b", [update(1)]) == [1]
        assert await store.append("a", [update(3), update(4)]) == [3, 4]
        assert await store.messages("a") == [(2, update(2)), (3, update(3)), (4, update(4))]
        # One call larger than the bound: all numbered, only the last three kept.
        assert await store.append("a", [update(n) for n in range(5, 12)]) == list(range(5, 12))
        assert await store.messages("a") == [(9, update(9)), (10, update(10)), (11, update(11))]
        assert await store.messages("b") == [(1, update(1))]  # another session's messages are not counted
    async with SessionStore.opened(tmp_path, max_messages_per_session=3) as store:
        assert await store.append("a", [update(12)]) == [12]
        assert [seq for seq, _ in await store.messages("a")] == [10, 11, 12]


async def test_a_bound_below_one_is_refused(tmp_path: Path) -> None:
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match="max_messages_per_session"):
            await SessionStore.open(tmp_path, max_messages_per_session=bad)
    with pytest.raises(ValueError, match="busy_timeout"):
        await SessionStore.open(tmp_path, busy_timeout=-1)


WRITER = """
import os, signal, sys
import anyio
from acp_session.host.store import SessionStore, StoredSession

directory, backend, ending = sys.argv[1:]

async def main() -> None:
    store = await SessionStore.open(directory)
    for n in (1, 2):
        sid = f"s{n}"
        session = StoredSession(sid, "agent-" + sid, "/w", f"title {n}", "agent", 2, 1.0, float(n), n == 1)
        await store.put_session(session)
    for start in range(0, 60, 6):
        numbers = await store.append("s1", [b"m%d" % i for i in range(start, start + 6)])
        assert numbers == list(range(start + 1, start + 7)), numbers
    await store.append("s2", [b"only"])
    print("written", flush=True)
    if ending == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # a crash: no close, the WAL left behind
    await store.aclose()

anyio.run(main, backend=backend)
"""


@pytest.mark.parametrize("ending", ["close", "kill"])
async def test_what_one_process_wrote_another_reads_back_in_order(
    tmp_path: Path, anyio_backend: str, ending: str
) -> None:
    directory = tmp_path / "store"
    with anyio.fail_after(120):
        result = await anyio.run_process(
            [sys.executable, "-c", WRITER, str(directory), anyio_backend, ending], check=False
        )
    assert result.stdout == b"written\n", result.stderr.decode()[-2000:]
    assert result.returncode == (-signal.SIGKILL if ending == "kill" else 0), result.stderr.decode()[-2000:]
    async with SessionStore.opened(directory) as store:
        assert [s.session_id for s in await store.sessions()] == ["s2", "s1"]
        assert await store.session("s1") == StoredSession("s1", "agent-s1", "/w", "title 1", "agent", 2, 1.0, 1.0, True)
        assert await store.messages("s1") == [(i + 1, b"m%d" % i) for i in range(60)]
        assert await store.messages("s2") == [(1, b"only")]
        assert await store.append("s1", [b"after the restart"]) == [61]


async def test_the_directory_and_file_are_private(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # the modes must not depend on the umask
    try:
        directory = tmp_path / "nested" / "store"
        async with SessionStore.opened(directory) as store:
            assert store.path == directory / DATABASE_NAME
            await store.put_session(stored("a"))
            await store.append("a", [update(1)])
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700
            assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
            wal = Path(f"{store.path}-wal")
            assert wal.exists() and stat.S_IMODE(wal.stat().st_mode) == 0o600
    finally:
        os.umask(old_umask)


async def test_an_existing_file_is_made_private(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path) as store:
        await store.put_session(stored("a"))
    (tmp_path / DATABASE_NAME).chmod(0o644)
    async with SessionStore.opened(tmp_path) as store:
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        assert await store.session("a") == stored("a")


async def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    for mode in (0o777, 0o770, 0o702):
        tmp_path.chmod(mode)
        with pytest.raises(
            StoreError, match=at(tmp_path) + rf": others can write in the store directory \(mode {mode:o}\)"
        ):
            await SessionStore.open(tmp_path)
    assert not (tmp_path / DATABASE_NAME).exists()  # refused before anything is written
    tmp_path.chmod(0o755)  # others may read the directory: the file itself is 0o600
    await (await SessionStore.open(tmp_path)).aclose()


async def test_links_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    async with SessionStore.opened(real) as store:
        await store.put_session(stored("a"))
    before = (real / DATABASE_NAME).read_bytes()

    linked_directory = tmp_path / "linked"
    linked_directory.symlink_to(real, target_is_directory=True)
    with pytest.raises(StoreError, match=at(linked_directory) + r": the store directory is a symbolic link"):
        await SessionStore.open(linked_directory)

    for target in (real / DATABASE_NAME, tmp_path / "missing.sqlite3"):
        other = tmp_path / f"other-{target.name}"
        other.mkdir(mode=0o700)
        (other / DATABASE_NAME).symlink_to(target)
        with pytest.raises(StoreError, match=at(other / DATABASE_NAME) + r": a symbolic link"):
            await SessionStore.open(other)
    assert not (tmp_path / "missing.sqlite3").exists()

    side = tmp_path / "side"
    side.mkdir(mode=0o700)
    (side / f"{DATABASE_NAME}-wal").symlink_to(tmp_path / "planted-wal")
    with pytest.raises(StoreError, match=at(side / DATABASE_NAME) + r"-wal: a symbolic link"):
        await SessionStore.open(side)
    assert not (tmp_path / "planted-wal").exists()
    assert (real / DATABASE_NAME).read_bytes() == before


async def test_a_file_that_is_no_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_NAME
    tmp_path.chmod(0o700)

    path.write_bytes(b"these are not the bytes of a database\n" * 200)
    with pytest.raises(StoreError, match=at(path) + r": not a session store \(file is not a database\)$"):
        await SessionStore.open(tmp_path)
    assert path.read_bytes() == b"these are not the bytes of a database\n" * 200

    path.unlink()
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE notes (text TEXT)")
    other.close()
    with pytest.raises(StoreError, match=at(path) + r": a SQLite database but not an acp-session store"):
        await SessionStore.open(tmp_path)

    (tmp_path / "s").mkdir(mode=0o700)
    async with SessionStore.opened(tmp_path / "s") as store:
        await store.put_session(stored("a"))
    newer = tmp_path / "s" / DATABASE_NAME
    with sqlite3.connect(newer) as other:
        other.execute("UPDATE store_schema SET version = ?", (SCHEMA_VERSION + 1,))
    other.close()
    message = at(newer) + rf": session store schema version {SCHEMA_VERSION + 1}; this acp-session reads version 1$"
    with pytest.raises(StoreError, match=message):
        await SessionStore.open(tmp_path / "s")

    directory_in_the_way = tmp_path / "d"
    (directory_in_the_way / DATABASE_NAME).mkdir(parents=True, mode=0o700)
    directory_in_the_way.chmod(0o700)
    with pytest.raises(StoreError, match=at(directory_in_the_way / DATABASE_NAME) + r": cannot open the session store"):
        await SessionStore.open(directory_in_the_way)

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(StoreError, match=at(a_file) + r": not a directory$"):
        await SessionStore.open(a_file)


async def test_forget_drops_a_session_and_its_messages_only(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path) as store:
        for sid in ("a", "b"):
            await store.put_session(stored(sid))
            await store.append(sid, [update(1), update(2)])
        await store.forget("a")
        await store.forget("a")  # again, and an id never seen: nothing happens
        await store.forget("never")
        assert await store.session("a") is None
        assert await store.messages("a") == []
        assert [s.session_id for s in await store.sessions()] == ["b"]
        assert await store.messages("b") == [(1, update(1)), (2, update(2))]
        with pytest.raises(StoreError, match=r"no session 'a' to append to \(put_session first\)$"):
            await store.append("a", [update(3)])
        await store.put_session(stored("a"))  # a new session of the same id starts afresh
        assert await store.append("a", [update(3)]) == [1]


async def test_aclose_is_idempotent_and_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = await SessionStore.open(tmp_path)
    assert not store.closed
    await store.aclose()
    await store.aclose()
    assert store.closed
    assert not Path(f"{store.path}-wal").exists()  # folded back into the file on close
    for call in (
        store.sessions(),
        store.session("a"),
        store.messages("a"),
        store.put_session(stored("a")),
        store.append("a", [update(1)]),
        store.append("a", []),
        store.forget("a"),
    ):
        with pytest.raises(StoreError, match=r"the session store is closed$"):
            await call


async def test_both_context_manager_forms_close_the_store_and_let_go_of_it(tmp_path: Path) -> None:
    async with await SessionStore.open(tmp_path) as store:
        await store.put_session(stored("a"))
    assert store.closed
    with pytest.raises(RuntimeError, match="boom"):
        async with SessionStore.opened(tmp_path) as store:
            raise RuntimeError("boom")
    assert store.closed
    async with SessionStore.opened(tmp_path, busy_timeout=0) as store:  # the lock was let go: no wait needed
        assert await store.session("a") == stored("a")


async def test_concurrent_appends_keep_each_call_in_order(tmp_path: Path) -> None:
    async with SessionStore.opened(tmp_path) as store:
        await store.put_session(stored("a"))
        returned: dict[int, list[int]] = {}

        async def appender(task: int) -> None:
            for call in range(5):
                batch = [b"%d/%d/%d" % (task, call, i) for i in range(8)]
                returned[task * 100 + call] = await store.append("a", batch)

        async with anyio.create_task_group() as tasks:
            for task in range(20):
                tasks.start_soon(appender, task)

        kept = await store.messages("a")
        assert [seq for seq, _ in kept] == list(range(1, 20 * 5 * 8 + 1))
        by_seq = dict(kept)
        for key, numbers in returned.items():
            task, call = divmod(key, 100)
            assert numbers == list(range(numbers[0], numbers[0] + 8))  # one call's messages are consecutive
            assert [by_seq[n] for n in numbers] == [b"%d/%d/%d" % (task, call, i) for i in range(8)]
        for task in range(20):  # and a task's calls are in the order it made them
            firsts = [returned[task * 100 + call][0] for call in range(5)]
            assert firsts == sorted(firsts)


HOLDER = """
import sys
import anyio
from acp_session.host.store import SessionStore

async def main() -> None:
    async with SessionStore.opened(sys.argv[1]):
        print("holding", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)

anyio.run(main)
"""


async def test_a_second_host_on_the_directory_is_refused_until_the_first_lets_go(tmp_path: Path) -> None:
    path = tmp_path / DATABASE_NAME
    with anyio.fail_after(120):
        async with await anyio.open_process([sys.executable, "-c", HOLDER, str(tmp_path)]) as holder:
            assert holder.stdout is not None and holder.stdin is not None
            assert await BufferedByteReceiveStream(holder.stdout).receive_until(b"\n", 100) == b"holding"
            with pytest.raises(StoreError, match=at(path) + r": in use by another process .*one host per store$"):
                await SessionStore.open(tmp_path, busy_timeout=0.1)
            async with anyio.create_task_group() as tasks:
                opened: list[SessionStore] = []

                async def second_host() -> None:
                    opened.append(await SessionStore.open(tmp_path, busy_timeout=60))

                tasks.start_soon(second_host)
                await holder.stdin.send(b"let go\n")
            assert await holder.wait() == 0
        async with opened[0] as store:
            assert await store.sessions() == []
