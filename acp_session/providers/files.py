"""Answer the agent's ``fs/read_text_file`` and ``fs/write_text_file`` from the local disk, inside allowed roots.

A session may touch only its cwd, its additional directories and the embedder's roots. The requested path is
resolved (symlinks and ``..``) before it is checked, and then opened one directory at a time with
``O_NOFOLLOW`` below the root it was found in, so a symlink swapped in after the check is refused instead of
followed. Disk work runs in a worker thread so a slow disk never stalls the event loop. POSIX only.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Sequence
from contextlib import suppress
from typing import NoReturn, Protocol, runtime_checkable

import anyio.to_thread

from acp_session._counted_log import CountedLog
from acp_session.errors import InternalError, InvalidParams, MethodNotFound, ResourceNotFound
from acp_session.rpc.budget import answer_bound, reserve_answer
from acp_session.schema import v1

from ._roots import SessionRoots, resolve_requested, root_of

__all__ = ["FileSystemProvider", "LocalFileSystem"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused once opened).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_READ_CHUNK = 1 << 20


@runtime_checkable
class FileSystemProvider(Protocol):
    """What the client calls for the agent's ``fs/*`` requests; raise an ``RpcError`` to answer with an error."""

    async def read_text_file(self, request: v1.ReadTextFileRequest) -> v1.ReadTextFileResponse: ...

    async def write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse: ...


class LocalFileSystem:
    """Reads and writes UTF-8 text files on this machine, confined to each session's allowed directories.

    ``roots`` are allowed for every session on top of its own cwd and additional directories. ``read`` and
    ``write`` choose what the client advertises (``can_read`` / ``can_write``); a call to a disabled method is
    answered with -32601. Files larger than ``max_read_bytes`` are not read.
    """

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]] = (),
        *,
        read: bool = True,
        write: bool = True,
        max_read_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        if max_read_bytes < 0:
            raise ValueError("max_read_bytes must not be negative")
        self.can_read: bool = read
        self.can_write: bool = write
        self.max_read_bytes = max_read_bytes
        self._sessions = SessionRoots(roots)

    def open_session(self, session_id: str, cwd: str, additional_directories: Sequence[str] = ()) -> None:
        """Allow ``session_id`` its cwd and additional directories (absolute paths); reopening replaces them."""
        self._sessions.open(session_id, cwd, additional_directories)

    def close_session(self, session_id: str) -> None:
        """Forget ``session_id``: its later requests are refused with -32002. Unknown ids are ignored."""
        self._sessions.close(session_id)

    def allowed_roots(self, session_id: str) -> tuple[str, ...]:
        """The resolved directories ``session_id`` may touch (-32002 if it is not open)."""
        return self._sessions.roots(session_id)

    def check_path(self, session_id: str, path: str) -> str:
        """The resolved form of ``path`` if ``session_id`` may touch it, else the error a request would get.

        For providers built on this one (e.g. serving unsaved editor buffers); it looks at the disk to resolve
        symlinks, so it blocks briefly.
        """
        root, parts = _locate(_absolute(path), self._sessions.roots(session_id), self._sessions.log)
        return os.path.join(root, *parts)

    async def read_text_file(self, request: v1.ReadTextFileRequest) -> v1.ReadTextFileResponse:
        if not self.can_read:
            raise MethodNotFound(message="fs/read_text_file is not enabled by this client")
        roots = self._sessions.roots(request.session_id)
        path = _absolute(request.path)
        line = request.line if isinstance(request.line, int) else None
        limit = request.limit if isinstance(request.limit, int) else None
        log = self._sessions.log
        fd, size = await anyio.to_thread.run_sync(_open_regular, path, roots, self.max_read_bytes, log)
        try:
            # Room in the connection's answer budget first: many large reads at once go a few at a time.
            await reserve_answer(answer_bound(size))
            content = await anyio.to_thread.run_sync(_read_text, fd, path, self.max_read_bytes, line, limit)
        finally:
            os.close(fd)
        return v1.ReadTextFileResponse(content=content)

    async def write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse:
        if not self.can_write:
            raise MethodNotFound(message="fs/write_text_file is not enabled by this client")
        roots = self._sessions.roots(request.session_id)
        path = _absolute(request.path)
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams(
                message="content is not valid Unicode text (it holds a lone surrogate)", data={"path": path}
            ) from None
        await anyio.to_thread.run_sync(_write_bytes, path, roots, data, self._sessions.log)
        return v1.WriteTextFileResponse()


def select_lines(text: str, line: int | None, limit: int | None) -> str:
    """Lines ``line`` (1-based; 0 or None means 1) to ``line + limit - 1`` of ``text``, line endings kept.

    Only ``\\n`` ends a line (``\\r\\n`` stays whole); a start past the end gives an empty string. The work is
    bounded by the text, whatever the numbers (``line = 2**32`` on a file of newlines costs one scan).
    """
    start = _after_newlines(text, 0, max(line or 1, 1) - 1)
    if start < 0:
        return ""
    if limit is None:
        return text[start:] if start else text
    end = _after_newlines(text, start, limit)
    return text[start:] if end < 0 else text[start:end]


_LINE_BLOCK = 8192


def _after_newlines(text: str, start: int, count: int) -> int:
    """The index just after the ``count``-th newline from ``start`` (``start`` if ``count`` <= 0); -1 if fewer.

    Whole blocks are skipped by counting their newlines (C speed); only the block holding the one sought is
    searched newline by newline, so the Python loop runs at most ``_LINE_BLOCK`` times."""
    if count <= 0:
        return start
    size = len(text)
    while start < size:
        end = min(start + _LINE_BLOCK, size)
        found = text.count("\n", start, end)
        if found < count:
            count -= found
            start = end
            continue
        for _ in range(count):
            start = text.index("\n", start) + 1
        return start
    return -1


def _absolute(path: str) -> str:
    if "\0" in path:
        raise InvalidParams(message="path contains a NUL character", data={"path": path})
    if not os.path.isabs(path):
        raise InvalidParams(message=f"path must be absolute: {path!r}", data={"path": path})
    return path


def _locate(path: str, roots: Sequence[str], log: CountedLog) -> tuple[str, list[str]]:
    """The allowed root holding the resolved ``path`` and the components below it; -32602 if outside all roots."""
    resolved = resolve_requested(path, "path", log)
    root = root_of(resolved, roots)
    if root is None:
        raise InvalidParams(message=f"{path} is outside the directories this session may access", data={"path": path})
    relative = os.path.relpath(resolved, root)
    parts = [] if relative == os.curdir else relative.split(os.sep)
    if not parts:
        raise InvalidParams(message=f"{path} is a directory, not a file", data={"path": path})
    return root, parts


def _open_parent(root: str, parts: Sequence[str], *, create: bool) -> int:
    """A descriptor for the directory holding ``parts[-1]``, opened component by component without following
    symlinks (creating missing directories when ``create``)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # made by someone else meanwhile: opened just below
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _fail(exc: OSError, path: str, doing: str) -> NoReturn:
    """Turn an OS error into the JSON-RPC error the agent gets (never a traceback)."""
    data = {"path": path}
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        raise ResourceNotFound(message=f"{path} does not exist", data=data) from None
    if exc.errno == errno.ELOOP:  # a symlink appeared after the path was checked: never follow it
        raise InvalidParams(message=f"{path} changed while it was being checked (a symbolic link)", data=data) from None
    raise InternalError(message=f"cannot {doing} {path}: {exc.strerror or exc}", data=data) from None


def _too_large(path: str, size: int, limit: int) -> InvalidParams:
    return InvalidParams(
        message=f"{path} is larger than the {limit}-byte limit of this client ({size} bytes)",
        data={"path": path, "size": size, "limit": limit},
    )


def _read_text(fd: int, path: str, max_bytes: int, line: int | None, limit: int | None) -> str:
    data = _read_fd(fd, path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidParams(
            message=f"{path} is not UTF-8 text (invalid byte at offset {exc.start})",
            data={"path": path, "offset": exc.start},
        ) from None
    return select_lines(text, line, limit)


def _open_regular(path: str, roots: Sequence[str], limit: int, log: CountedLog) -> tuple[int, int]:
    """A descriptor of the regular file at ``path`` (inside ``roots``, at most ``limit`` bytes) and its size."""
    root, parts = _locate(path, roots, log)
    try:
        parent = _open_parent(root, parts, create=False)
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=parent)
        finally:
            os.close(parent)
    except OSError as exc:
        _fail(exc, path, "read")
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InvalidParams(message=f"{path} is a directory, not a file", data={"path": path})
        if not stat.S_ISREG(info.st_mode):
            raise InvalidParams(message=f"{path} is not a regular file", data={"path": path})
        if info.st_size > limit:
            raise _too_large(path, info.st_size, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def _read_fd(fd: int, path: str, limit: int) -> bytes:
    """The content of the open file ``fd``, at most ``limit`` bytes (the caller closes it)."""
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # the file may grow while it is read: never read more than the limit and a byte
            chunk = os.read(fd, min(_READ_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise _too_large(path, size, limit)
        return b"".join(chunks)
    except OSError as exc:
        _fail(exc, path, "read")


def _writable(name: str, parent: int) -> bool:
    """Whether this process may write the existing file ``name`` itself (mode, ACLs, read-only mounts,
    immutable files), with the effective ids, as ``open(path, "w")`` would check."""
    return os.access(name, os.W_OK, dir_fd=parent, effective_ids=os.access in os.supports_effective_ids)


def _write_bytes(path: str, roots: Sequence[str], data: bytes, log: CountedLog) -> None:
    """Write through a temporary file in the same directory, then rename it over the target (atomic)."""
    root, parts = _locate(path, roots, log)
    name = parts[-1]
    try:
        parent = _open_parent(root, parts, create=True)
    except OSError as exc:
        if isinstance(exc, NotADirectoryError):
            raise InvalidParams(message=f"a parent of {path} is not a directory", data={"path": path}) from None
        _fail(exc, path, "write")
    try:
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None:
            if stat.S_ISLNK(info.st_mode):
                _fail(OSError(errno.ELOOP, "symbolic link"), path, "write")
            if stat.S_ISDIR(info.st_mode):
                raise InvalidParams(message=f"{path} is a directory, not a file", data={"path": path})
            if not stat.S_ISREG(info.st_mode):
                raise InvalidParams(message=f"{path} is not a regular file", data={"path": path})
            if not _writable(name, parent):  # the replace below would succeed where the user's own write fails
                _fail(PermissionError(errno.EACCES, "the file is read-only for this user"), path, "write")
        temp = f".{secrets.token_hex(8)}.acp-write.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o666 if info is None else 0o600, dir_fd=parent)
        try:
            try:
                if info is not None:
                    # Keep the permission bits, never set-user/group-id: the agent wrote this content.
                    os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o777)
                    if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                        with suppress(OSError):  # only root may give a file away; the content still lands
                            os.fchown(fd, info.st_uid, info.st_gid)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
    except OSError as exc:
        _fail(exc, path, "write")
    finally:
        os.close(parent)
