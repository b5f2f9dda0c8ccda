"""Durable sessions for the host (``--store DIR``): the sessions it serves and the messages it sent their clients,
kept in one SQLite file so that a host started again lists them and replays them.

Why SQLite (the standard library's ``sqlite3``): one file, transactions a crash cannot tear, no server to run. Every
call runs in a worker thread, one at a time (a ``CapacityLimiter(1)``): the event loop never waits on the disk, the
one connection is never used by two threads at once, and it works the same on asyncio and trio.

One host per directory: the connection takes SQLite's exclusive lock at open (``locking_mode=EXCLUSIVE`` in WAL
mode) and keeps it until closed. A second host on the same directory waits up to ``busy_timeout`` seconds (a restart
whose old process is still closing) and is then refused with a ``StoreError``; two hosts writing one store would each
take the sessions for their own (docs/serve.md, "Durable sessions", says what sharing one would need).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..errors import AcpError

__all__ = [
    "DATABASE_NAME",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_MAX_MESSAGES",
    "SCHEMA_VERSION",
    "SessionStore",
    "StoreError",
    "StoredSession",
]

DATABASE_NAME = "sessions.sqlite3"
"""The database's file name in the store's directory (SQLite adds ``-wal`` beside it while it is open)."""

SCHEMA_VERSION = 1
"""The layout this module reads and writes; a file of another version is refused, never rewritten."""

DEFAULT_MAX_MESSAGES = 100_000
"""Messages kept per session by default; the oldest go first."""

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds an open waits for another process to let go of the database before it is refused."""

# SQLite's side files: a link planted under one of these names would make SQLite write where it points.
_SIDE_SUFFIXES = ("-wal", "-journal", "-shm")

_SESSION_COLUMNS = (
    "session_id, agent_session_id, cwd, title, agent, protocol_version, created_at, updated_at, resumable"
)

# ``last_seq`` lives with the session, not only in ``messages``: the numbers keep increasing when the bound has
# dropped every older message, and across restarts.
_SCHEMA = (
    "CREATE TABLE store_schema (version INTEGER NOT NULL)",
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        agent_session_id TEXT,
        cwd TEXT NOT NULL,
        title TEXT,
        agent TEXT NOT NULL,
        protocol_version INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        resumable INTEGER NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE messages (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
    "CREATE INDEX sessions_by_update ON sessions (updated_at DESC)",
)
_TABLES = frozenset({"store_schema", "sessions", "messages"})

T = TypeVar("T")


class StoreError(AcpError):
    """The session store cannot be opened or used: the directory or file is a link, others can write the
    directory, the file is no database or another version's, another host holds it, the disk failed. The message is
    one line and names the file."""


@dataclasses.dataclass(frozen=True)
class StoredSession:
    """One session as the host keeps it: what ``session/list`` shows after a restart and what resuming it needs."""

    session_id: str
    """The id the host gives its clients."""
    agent_session_id: str | None
    """The agent's own id for it; ``None`` when the agent's side is gone."""
    cwd: str
    title: str | None
    agent: str
    """The agent as given (a registry id or a command line), for ``session/list`` and for people."""
    protocol_version: int
    """The protocol version the agent spoke."""
    created_at: float
    """``time.time()`` when the session was created."""
    updated_at: float
    """``time.time()`` of the host's last change; ``append`` does not touch it."""
    resumable: bool
    """``False``: the agent can neither resume nor load it, so after a restart it is read-only."""


class SessionStore:
    """The host's sessions and the messages it sent their clients, in ``DIR/sessions.sqlite3``.

    Open it with ``await SessionStore.open(DIR)`` (then ``aclose()``), ``async with await SessionStore.open(DIR)``
    or ``async with SessionStore.opened(DIR)``. Every method may raise ``StoreError``.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path, max_messages_per_session: int) -> None:
        """Use ``open``: it prepares the directory and the file and checks the schema before this runs."""
        self._connection: sqlite3.Connection | None = connection
        self._limiter = anyio.CapacityLimiter(1)
        self.path = path
        """The database file."""
        self.max_messages_per_session = max_messages_per_session
        """At most this many messages are kept per session; ``append`` drops the oldest beyond it."""

    @classmethod
    async def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        max_messages_per_session: int = DEFAULT_MAX_MESSAGES,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> SessionStore:
        """Open the store in ``directory``, creating the directory (mode 0o700) and the file (0o600) when missing.

        Refused with ``StoreError``: a directory or database file that is a symbolic link, a directory others can
        write, a file that is not a database or holds another schema version, a store another process still holds
        after ``busy_timeout`` seconds.
        """
        if isinstance(max_messages_per_session, bool) or max_messages_per_session < 1:
            raise ValueError(f"max_messages_per_session must be at least 1, not {max_messages_per_session!r}")
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must not be negative, not {busy_timeout!r}")
        folder = Path(os.fspath(directory)).absolute()
        # Shielded: a cancellation while the thread opens must not lose the connection it returns.
        with anyio.CancelScope(shield=True):
            connection = await anyio.to_thread.run_sync(_open_database, folder, busy_timeout)
        store = cls(connection, folder / DATABASE_NAME, max_messages_per_session)
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await store.aclose()
            raise
        return store

    @classmethod
    @contextlib.asynccontextmanager
    async def opened(
        cls,
        directory: str | os.PathLike[str],
        *,
        max_messages_per_session: int = DEFAULT_MAX_MESSAGES,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> AsyncIterator[SessionStore]:
        """``open`` as an async context manager: the store is closed when the block ends, however it ends."""
        store = await cls.open(directory, max_messages_per_session=max_messages_per_session, busy_timeout=busy_timeout)
        async with store:
            yield store

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        """Whether ``aclose`` has run: every other call then raises ``StoreError``."""
        return self._connection is None

    async def put_session(self, session: StoredSession) -> None:
        """Insert the session, or replace what is kept of it; its messages and their numbering stay."""
        values = (
            session.session_id,
            session.agent_session_id,
            session.cwd,
            session.title,
            session.agent,
            session.protocol_version,
            session.created_at,
            session.updated_at,
            int(session.resumable),
        )
        updates = ", ".join(f"{name} = excluded.{name}" for name in _SESSION_COLUMNS.split(", ")[1:])
        sql = (
            f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT (session_id) DO UPDATE SET {updates}"
        )
        await self._run(lambda connection: connection.execute(sql, values))

    async def append(self, session_id: str, messages: Sequence[bytes]) -> list[int]:
        """Keep ``messages`` (encoded JSON-RPC messages as sent to clients, in order) for the session.

        Returns their sequence numbers: consecutive, each call's after every earlier call's, never reused for the
        session (across restarts too). One call is one transaction: a crash keeps all of it or none. Beyond
        ``max_messages_per_session`` the oldest are dropped. A session never put (or forgotten) is a ``StoreError``.
        """
        bodies = [bytes(message) for message in messages]
        if not bodies:
            await self._run(lambda connection: None)  # still refused when closed, like every other call
            return []
        bound = self.max_messages_per_session

        def work(connection: sqlite3.Connection) -> list[int]:
            row = connection.execute("SELECT last_seq FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no session {session_id!r} to append to (put_session first)")
            first, last = row[0] + 1, row[0] + len(bodies)
            kept_from = max(first, last - bound + 1)  # what the bound would drop at once is never written
            connection.executemany(
                "INSERT INTO messages (session_id, seq, body) VALUES (?, ?, ?)",
                [(session_id, seq, bodies[seq - first]) for seq in range(kept_from, last + 1)],
            )
            connection.execute("UPDATE sessions SET last_seq = ? WHERE session_id = ?", (last, session_id))
            if last > bound:
                connection.execute("DELETE FROM messages WHERE session_id = ? AND seq <= ?", (session_id, last - bound))
            return list(range(first, last + 1))

        return await self._run(lambda connection: _transaction(connection, work))

    async def sessions(self) -> list[StoredSession]:
        """Every kept session, the most recently updated first."""

        def work(connection: sqlite3.Connection) -> list[StoredSession]:
            rows = connection.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, session_id"
            ).fetchall()
            return [_session(row) for row in rows]

        return await self._run(work)

    async def session(self, session_id: str) -> StoredSession | None:
        """The kept session of this id, or ``None``."""

        def work(connection: sqlite3.Connection) -> StoredSession | None:
            sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_id = ?"
            row = connection.execute(sql, (session_id,)).fetchone()
            return None if row is None else _session(row)

        return await self._run(work)

    async def messages(self, session_id: str, *, after: int = 0) -> list[tuple[int, bytes]]:
        """The session's kept messages numbered above ``after``, in order, as ``(sequence number, message)``.

        A client that saw up to N asks ``after=N``; a first number above N + 1 means the bound dropped some.
        """

        def work(connection: sqlite3.Connection) -> list[tuple[int, bytes]]:
            rows = connection.execute(
                "SELECT seq, body FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq", (session_id, after)
            ).fetchall()
            return [(int(seq), bytes(body)) for seq, body in rows]

        return await self._run(work)

    async def forget(self, session_id: str) -> None:
        """Drop the session and its messages (nothing happens for an unknown id)."""

        def work(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            connection.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

        await self._run(lambda connection: _transaction(connection, work))

    async def aclose(self) -> None:
        """Close the database (SQLite folds the WAL back into the file) and let go of the lock. Idempotent; it
        finishes even when the caller is cancelled, after the call in progress."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close, limiter=self._limiter)

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.close()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {_one_line(exc)}") from None

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in the worker thread, after every earlier call; sqlite3's errors become
        ``StoreError``."""

        def job() -> T:
            connection = self._connection
            if connection is None:
                raise StoreError(f"{self.path}: the session store is closed")
            try:
                return work(connection)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: {_one_line(exc)}") from None

        if self._connection is None:
            raise StoreError(f"{self.path}: the session store is closed")
        return await anyio.to_thread.run_sync(job, limiter=self._limiter)


def _transaction(connection: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work`` as one write transaction: all of it is kept or none."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = work(connection)
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
    return result


def _session(row: tuple[Any, ...]) -> StoredSession:
    session_id, agent_session_id, cwd, title, agent, version, created, updated, resumable = row
    return StoredSession(
        session_id=str(session_id),
        agent_session_id=None if agent_session_id is None else str(agent_session_id),
        cwd=str(cwd),
        title=None if title is None else str(title),
        agent=str(agent),
        protocol_version=int(version),
        created_at=float(created),
        updated_at=float(updated),
        resumable=bool(resumable),
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _open_database(directory: Path, busy_timeout: float) -> sqlite3.Connection:
    """In the worker thread: the directory and file checked (or created), the connection opened, locked and its
    schema checked (or created)."""
    _prepare_directory(directory)
    path = directory / DATABASE_NAME
    _prepare_file(path)
    try:
        connection = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the session store ({_one_line(exc)})") from None
    try:
        _configure(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def _prepare_directory(directory: Path) -> None:
    if not os.path.lexists(directory):
        try:
            os.makedirs(directory, mode=0o700)
            os.chmod(directory, 0o700)  # exactly 0o700, whatever the umask
        except FileExistsError:
            pass  # made meanwhile by someone else: checked below like any existing directory
        except OSError as exc:
            raise StoreError(f"{directory}: cannot create the store directory ({exc.strerror})") from None
    try:
        info = os.lstat(directory)
    except OSError as exc:
        raise StoreError(f"{directory}: cannot use the store directory ({exc.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise StoreError(f"{directory}: the store directory is a symbolic link; give the directory itself")
    if not stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{directory}: not a directory")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.S_IMODE(info.st_mode)
        raise StoreError(
            f"{directory}: others can write in the store directory (mode {mode:o}), so they could replace its "
            "files; chmod go-w it or use another directory"
        )


def _prepare_file(path: Path) -> None:
    """Create the file 0o600 (tighten an existing one) without following a link, so SQLite opens what was checked."""
    for suffix in ("", *_SIDE_SUFFIXES):
        entry = Path(f"{path}{suffix}")
        if entry.is_symlink():
            raise StoreError(f"{entry}: a symbolic link; the store does not follow links (remove it)")
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(f"{path}: a symbolic link; the store does not follow links (remove it)") from None
        raise StoreError(f"{path}: cannot open the session store ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{path}: not a regular file")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    except OSError as exc:
        raise StoreError(f"{path}: cannot make the session store private ({exc.strerror})") from None
    finally:
        os.close(fd)


def _configure(connection: sqlite3.Connection, path: Path) -> None:
    """Exclusive lock, WAL, then the schema: checked, or created in an empty file, in one transaction."""
    try:
        connection.execute("PRAGMA locking_mode = EXCLUSIVE")
        (journal,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
        if str(journal).lower() != "wal":
            raise StoreError(f"{path}: SQLite refused WAL mode (journal mode {journal})")
        # WAL with NORMAL: a crashed host loses nothing committed; a power cut may lose the last commits, never
        # the file. FULL would sync the disk on every append.
        connection.execute("PRAGMA synchronous = NORMAL")
        _transaction(connection, lambda c: _check_schema(c, path))  # its write lock is kept until close
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreError(
                f"{path}: in use by another process (another host on this store directory?); one host per store"
            ) from None
        raise StoreError(f"{path}: not a usable session store ({_one_line(exc)})") from None
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a session store ({_one_line(exc)})") from None


def _check_schema(connection: sqlite3.Connection, path: Path) -> None:
    tables = {str(name) for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute("INSERT INTO store_schema (version) VALUES (?)", (SCHEMA_VERSION,))
        return
    if "store_schema" not in tables:
        raise StoreError(f"{path}: a SQLite database but not an acp-session store (no store_schema table)")
    versions = [row[0] for row in connection.execute("SELECT version FROM store_schema")]
    if versions != [SCHEMA_VERSION]:
        found = versions[0] if len(versions) == 1 else f"unreadable ({len(versions)} rows)"
        raise StoreError(
            f"{path}: session store schema version {found}; this acp-session reads version {SCHEMA_VERSION}"
        )
    if not tables >= _TABLES:
        missing = ", ".join(sorted(_TABLES - tables))
        raise StoreError(f"{path}: a damaged session store (missing {missing})")
