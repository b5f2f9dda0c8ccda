"""Answer the agent's ``terminal/*`` requests by running commands as local subprocesses, bounded and reaped.

Each command runs directly (no shell), with stdout and stderr joined on one pipe that a reader task drains
into a buffer capped at the output limit. On Linux it runs under the reaper (``acp_session.transport.reaper``),
which holds every process the command starts however it detaches (``setsid``, a double-fork daemon, ...);
elsewhere in a session and process group of its own. Killing ends all of it (elsewhere: the whole group), so a
command's children go too. The reader and exit-watcher tasks live in the provider's own task group, entered
by ``async with LocalTerminals(...)``; leaving it ends every process the provider started. POSIX only.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Protocol, runtime_checkable

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import TaskGroup

from acp_session.errors import InternalError, InvalidParams, RequestCancelled, ResourceNotFound
from acp_session.rpc.budget import answer_bound, reserve_answer
from acp_session.schema import v1
from acp_session.transport.process_tree import ProcessTree, ReapedTree, open_tree

from ._roots import SessionRoots, resolve_requested, root_of, unknown_session

__all__ = ["LocalTerminals", "TerminalProvider", "minimal_environment"]

_CHUNK = 64 * 1024
_DRAIN_CHUNKS = 16  # a sync drain after exit reads at most this many chunks (a pipe holds 64 KiB by default)
_START_POLL = 0.01  # how often shutdown checks whether commands being started are done starting
_KILL_SETTLE = 1.0  # how long a kill waits for SIGKILLed processes to finish dying
_BASE_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL")


@runtime_checkable
class TerminalProvider(Protocol):
    """What the client calls for the agent's ``terminal/*`` requests; raise an ``RpcError`` to answer with an error."""

    async def create_terminal(self, request: v1.CreateTerminalRequest) -> v1.CreateTerminalResponse: ...

    async def terminal_output(self, request: v1.TerminalOutputRequest) -> v1.TerminalOutputResponse: ...

    async def wait_for_terminal_exit(
        self, request: v1.WaitForTerminalExitRequest
    ) -> v1.WaitForTerminalExitResponse: ...

    async def kill_terminal(self, request: v1.KillTerminalRequest) -> v1.KillTerminalResponse: ...

    async def release_terminal(self, request: v1.ReleaseTerminalRequest) -> v1.ReleaseTerminalResponse: ...


def minimal_environment() -> dict[str, str]:
    """The default environment of a command: PATH, HOME, LANG and LC_ALL copied when set here, and TERM=dumb.

    Nothing else of this process's environment (tokens, keys, agent settings) reaches an agent's command.
    """
    env = {name: os.environ[name] for name in _BASE_VARIABLES if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["TERM"] = "dumb"  # output goes to a pipe, not a screen: no colours or cursor movement
    return env


def exit_status(returncode: int) -> tuple[int | None, str | None]:
    """``(exitCode, signal)`` for a subprocess return code: a negative code means killed by that signal."""
    if returncode >= 0:
        return returncode, None
    try:
        return None, signal.Signals(-returncode).name
    except ValueError:
        return None, f"SIG{-returncode}"


def complete_length(buffer: bytes | bytearray) -> int:
    """The length of ``buffer`` without a trailing UTF-8 sequence that is still incomplete (more may come)."""
    size = len(buffer)
    for back in range(1, min(4, size) + 1):
        byte = buffer[size - back]
        if byte & 0xC0 != 0x80:  # ASCII or a lead byte: how long should its sequence be?
            need = 4 if byte >= 0xF0 else 3 if byte >= 0xE0 else 2 if byte >= 0xC0 else 1
            return size - back if need > back else size
    return size


def fit_utf8(text: str, limit: int, truncated: bool = False) -> tuple[str, bool]:
    """The end of ``text`` that fits in ``limit`` UTF-8 bytes, cut at a character boundary, and whether
    anything was cut (or ``truncated`` already)."""
    data = text.encode("utf-8")
    excess = len(data) - limit
    if excess <= 0:
        return text, truncated
    size = len(data)
    while excess < size and data[excess] & 0xC0 == 0x80:  # never start inside a character
        excess += 1
    return data[excess:].decode("utf-8"), True


class _Terminal:
    """One command: its process, the read end of its output pipe and the retained output."""

    def __init__(self, terminal_id: str, session_id: str, tree: ProcessTree, fd: int, limit: int) -> None:
        self.id = terminal_id
        self.session_id = session_id
        self.tree = tree  # the command and everything it starts
        self.fd = fd  # -1 once closed
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.eof = False
        self.returncode: int | None = None
        self.exited = anyio.Event()
        self.reader_scope = anyio.CancelScope()
        self.reader_done = anyio.Event()
        self.disposed: anyio.Event | None = None  # set once killed and released (a second dispose waits for it)

    def read_chunk(self) -> bool | None:
        """One non-blocking read: True if bytes came, None if none are ready, False at end of output."""
        if self.fd < 0:
            return False
        try:
            data = os.read(self.fd, _CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return False
        self._keep(data)
        return True

    def drain(self) -> None:
        """Read what is already in the pipe (bounded: a grandchild may still be writing)."""
        for _ in range(_DRAIN_CHUNKS):
            if not self.read_chunk():
                return

    def _keep(self, data: bytes) -> None:
        buffer = self.output
        buffer += data
        excess = len(buffer) - self.limit
        if excess > 0:  # drop the oldest bytes, and then the rest of a character cut in two (ACP1-009)
            size = len(buffer)
            while excess < size and buffer[excess] & 0xC0 == 0x80:
                excess += 1
            del buffer[:excess]
            self.truncated = True

    def text(self) -> tuple[str, bool]:
        """The retained output as text, and whether it was truncated; an incomplete last character waits for
        its remaining bytes.

        Bytes that are not UTF-8 become U+FFFD, three bytes each, so the text can be longer than the bytes
        kept: it is cut again after decoding, from the beginning and at a character boundary, to stay within
        the limit in UTF-8 bytes (ACP1-009)."""
        end = len(self.output) if self.eof else complete_length(self.output)
        text = self.output[:end].decode("utf-8", "replace")
        if len(text) * 4 <= self.limit:  # no character takes more than 4 bytes: it fits
            return text, self.truncated
        return fit_utf8(text, self.limit, self.truncated)

    def record_exit(self, returncode: int) -> None:
        """Note the exit once, after taking in what the command wrote before it ended."""
        if self.returncode is None:
            self.drain()
            self.returncode = returncode
            self.exited.set()

    def close_output(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def close_tree(self) -> None:
        """Let go of the reaper's socket (the tree is ended by then; were it not, the reaper ends it now)."""
        if isinstance(self.tree, ReapedTree):
            self.tree.close()


class LocalTerminals:
    """Runs the agent's commands as local subprocesses, confined to each session's allowed directories.

    ``roots`` are allowed as working directories for every session on top of its own cwd and additional
    directories. ``env`` is the complete environment of every command (None: ``minimal_environment()``); the
    request's variables are added on top. Output is kept up to the smaller of the request's ``outputByteLimit``
    and ``output_byte_limit``; at most ``max_terminals`` terminals exist until released; a kill sends SIGTERM to
    the command and everything it started (``reap_descendants``, Linux: however it detached; else its process
    group) and SIGKILL ``kill_grace`` seconds later. Use it as an async context manager.
    """

    def __init__(
        self,
        roots: Sequence[str | os.PathLike[str]] = (),
        *,
        env: Mapping[str, str] | None = None,
        output_byte_limit: int = 1024 * 1024,
        max_terminals: int = 32,
        kill_grace: float = 2.0,
        reap_descendants: bool = True,
    ) -> None:
        if output_byte_limit < 0:
            raise ValueError("output_byte_limit must not be negative")
        if max_terminals < 1:
            raise ValueError("max_terminals must be at least 1")
        if kill_grace < 0:
            raise ValueError("kill_grace must not be negative")
        self.env: dict[str, str] | None = None if env is None else dict(env)
        self.output_byte_limit = output_byte_limit
        self.max_terminals = max_terminals
        self.kill_grace = kill_grace
        self.reap_descendants = reap_descendants
        self._sessions = SessionRoots(roots)
        self._terminals: dict[str, _Terminal] = {}  # by id, until released
        self._live: set[_Terminal] = set()  # until the process is reaped and its output closed
        self._starting = 0
        self._task_group: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None
        self._closed = False

    # -- lifetime --------------------------------------------------------------------------------------------

    async def __aenter__(self) -> LocalTerminals:
        if self._stack is not None or self._closed:
            raise RuntimeError("a LocalTerminals can be entered only once")
        async with AsyncExitStack() as stack:
            self._task_group = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self._shutdown)  # runs before the task group waits for its tasks
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """End every command, then close the task group. The body's own exception is not handed to the task
        group, so it propagates as it is instead of wrapped in an exception group."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _shutdown(self) -> None:
        self._closed = True
        with anyio.CancelScope(shield=True):
            while self._starting:  # a command being started now is stopped by its own request
                await anyio.sleep(_START_POLL)
        await self.end_all()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()  # nothing should be left; never wait on a stray pipe

    async def end_all(self) -> None:
        """Kill and release every terminal now (concurrently, one grace period): what the client does when the
        agent's connection ends, since nobody is left to read, wait for or release them."""
        self._terminals.clear()
        await self._dispose_all(list(self._live))

    def open_session(self, session_id: str, cwd: str, additional_directories: Sequence[str] = ()) -> None:
        """Allow ``session_id`` its cwd and additional directories (absolute paths); reopening replaces them."""
        self._sessions.open(session_id, cwd, additional_directories)

    async def close_session(self, session_id: str) -> None:
        """Forget ``session_id`` and kill and release its terminals (concurrently, each with its grace period)."""
        self._sessions.close(session_id)
        mine = [term for term in self._terminals.values() if term.session_id == session_id]
        for term in mine:
            del self._terminals[term.id]
        await self._dispose_all(mine)

    @property
    def terminal_ids(self) -> tuple[str, ...]:
        """The ids of the terminals not yet released."""
        return tuple(self._terminals)

    # -- requests --------------------------------------------------------------------------------------------

    async def create_terminal(self, request: v1.CreateTerminalRequest) -> v1.CreateTerminalResponse:
        task_group = self._running()
        session_id = request.session_id
        cwd = self._working_directory(session_id, request.cwd if isinstance(request.cwd, str) else None)
        argv = _argv(request)
        env = self._environment(request.env if isinstance(request.env, list) else [])
        limit = self.output_byte_limit
        if isinstance(request.output_byte_limit, int):
            limit = min(limit, request.output_byte_limit)
        if len(self._live) + self._starting >= self.max_terminals:
            raise RequestCancelled(
                message=f"too many terminals ({self.max_terminals} exist); release finished ones first",
                data={"limit": self.max_terminals},
            )
        self._starting += 1
        try:
            tree, fd = await _spawn(argv, cwd, env, self.reap_descendants, self.kill_grace)
            term = _Terminal(f"term_{secrets.token_hex(8)}", session_id, tree, fd, limit)
            if self._closed or session_id not in self._sessions:  # closed while the command was starting
                await self._stop(term)
                term.close_output()
                term.close_tree()
                if self._closed:
                    raise RequestCancelled(message="the client is shutting down; no new terminals")
                raise unknown_session(session_id)
            self._live.add(term)
            task_group.start_soon(self._pump, term)
            task_group.start_soon(self._watch, term)
            self._terminals[term.id] = term
        finally:
            self._starting -= 1
        return v1.CreateTerminalResponse(terminal_id=term.id)

    async def terminal_output(self, request: v1.TerminalOutputRequest) -> v1.TerminalOutputResponse:
        term = self._find(request.session_id, request.terminal_id)
        await reserve_answer(answer_bound(len(term.output)))  # many large outputs at once go a few at a time
        status: v1.TerminalExitStatus | msgspec.UnsetType = msgspec.UNSET  # "present only if the command has exited"
        if term.returncode is not None:
            code, name = exit_status(term.returncode)
            status = v1.TerminalExitStatus(exit_code=code, signal=name)
        output, truncated = term.text()
        return v1.TerminalOutputResponse(output=output, truncated=truncated, exit_status=status)

    async def wait_for_terminal_exit(self, request: v1.WaitForTerminalExitRequest) -> v1.WaitForTerminalExitResponse:
        term = self._find(request.session_id, request.terminal_id)
        await term.exited.wait()
        assert term.returncode is not None
        code, name = exit_status(term.returncode)
        return v1.WaitForTerminalExitResponse(exit_code=code, signal=name)

    async def kill_terminal(self, request: v1.KillTerminalRequest) -> v1.KillTerminalResponse:
        """Stop the command (and its process group); the terminal stays readable until released."""
        term = self._find(request.session_id, request.terminal_id)
        await self._stop(term)
        return v1.KillTerminalResponse()

    async def release_terminal(self, request: v1.ReleaseTerminalRequest) -> v1.ReleaseTerminalResponse:
        """Forget the terminal at once, then kill what is still running and free its output."""
        term = self._find(request.session_id, request.terminal_id)
        del self._terminals[term.id]
        await self._dispose(term)
        return v1.ReleaseTerminalResponse()

    # -- helpers ---------------------------------------------------------------------------------------------

    def _running(self) -> TaskGroup:
        if self._closed:
            raise RequestCancelled(message="the client is shutting down; no new terminals")
        if self._task_group is None:
            raise InternalError(message="the terminal provider is not running (enter it with 'async with')")
        return self._task_group

    def _find(self, session_id: str, terminal_id: str) -> _Terminal:
        term = self._terminals.get(terminal_id)
        if term is None or term.session_id != session_id:  # another session's terminal is not even named
            raise ResourceNotFound(
                message=f"unknown or released terminal: {terminal_id!r}",
                data={"sessionId": session_id, "terminalId": terminal_id},
            )
        return term

    def _working_directory(self, session_id: str, requested: str | None) -> str:
        roots = self._sessions.roots(session_id)
        if requested is None:
            cwd = self._sessions.cwd(session_id)
        else:
            if "\0" in requested or not os.path.isabs(requested):
                raise InvalidParams(message=f"cwd must be an absolute path: {requested!r}", data={"cwd": requested})
            cwd = resolve_requested(requested, "cwd", self._sessions.log)
            if root_of(cwd, roots) is None:
                raise InvalidParams(
                    message=f"cwd {requested} is outside the directories this session may access",
                    data={"cwd": requested},
                )
        if not os.path.isdir(cwd):
            if os.path.exists(cwd):
                raise InvalidParams(message=f"cwd {requested or cwd} is not a directory", data={"cwd": cwd})
            raise ResourceNotFound(message=f"cwd {requested or cwd} does not exist", data={"cwd": cwd})
        return cwd

    def _environment(self, variables: Sequence[v1.EnvVariable]) -> dict[str, str]:
        env = minimal_environment() if self.env is None else dict(self.env)
        for variable in variables:
            name, value = variable.name, variable.value
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise InvalidParams(message=f"invalid environment variable name or value: {name!r}")
            env[name] = value
        return env

    async def _pump(self, term: _Terminal) -> None:
        """Move the command's output into its buffer until the pipe ends or the terminal is released."""
        fd = term.fd
        try:
            with term.reader_scope:
                while True:
                    got = term.read_chunk()
                    if got is False:
                        break
                    if got is None:
                        await anyio.wait_readable(fd)
                    else:
                        await anyio.lowlevel.checkpoint()  # a chatty command must not starve the event loop
        finally:
            term.close_output()
            term.reader_done.set()

    async def _watch(self, term: _Terminal) -> None:
        term.record_exit(await term.tree.wait())
        if isinstance(term.tree, ReapedTree):
            await term.tree.watch()  # what the command left running: ended at once should the reaper be killed

    async def _stop(self, term: _Terminal) -> None:
        """SIGTERM to the command and all it started, SIGKILL to whatever is left after ``kill_grace``; returns
        once the command has exited and nothing it started runs (or ``_KILL_SETTLE`` after SIGKILL, for one
        stuck in the kernel). Shielded: a cancelled request must not leave a half-killed command behind."""
        tree = term.tree
        with anyio.CancelScope(shield=True):
            if tree.running():
                tree.signal_all(signal.SIGTERM)
                with anyio.move_on_after(self.kill_grace) as grace:
                    await self._ended(term)
                if grace.cancelled_caught:
                    tree.signal_all(signal.SIGKILL)
                    with anyio.move_on_after(_KILL_SETTLE) as settle:
                        await self._ended(term)
                    if settle.cancelled_caught:
                        tree.abandon()
            term.record_exit(await tree.wait())

    @staticmethod
    async def _ended(term: _Terminal) -> None:
        term.record_exit(await term.tree.wait())
        await term.tree.wait_all()

    async def _dispose(self, term: _Terminal) -> None:
        if term.disposed is not None:  # released and ended at the same time (the connection closed): once
            await term.disposed.wait()
            return
        term.disposed = anyio.Event()
        with anyio.CancelScope(shield=True):
            await self._stop(term)
            term.close_tree()
            term.reader_scope.cancel()
            await term.reader_done.wait()
            self._live.discard(term)
            term.disposed.set()

    async def _dispose_all(self, terms: Sequence[_Terminal]) -> None:
        if not terms:
            return
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as task_group:
                for term in terms:
                    task_group.start_soon(self._dispose, term)


def _argv(request: v1.CreateTerminalRequest) -> list[str]:
    args = request.args if isinstance(request.args, list) else []
    argv = [request.command, *args]
    if not request.command:
        raise InvalidParams(message="command must not be empty")
    if any("\0" in part for part in argv):
        raise InvalidParams(message="command and args must not contain NUL characters")
    return argv


async def _spawn(argv: list[str], cwd: str, env: dict[str, str], reap: bool, grace: float) -> tuple[ProcessTree, int]:
    """Start ``argv`` with stdout and stderr on one pipe, under the reaper (``reap``, Linux) or in a new
    session; returns the started tree and the read end of the pipe."""
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        with anyio.CancelScope(shield=True):  # once started, the process must be tracked
            tree = await open_tree(
                argv,
                reap=reap,
                grace=grace,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=cwd,
                env=env,
            )
    except BaseException as exc:
        os.close(read_fd)
        if isinstance(exc, FileNotFoundError):
            raise ResourceNotFound(message=f"command not found: {argv[0]!r}", data={"command": argv[0]}) from None
        if isinstance(exc, PermissionError):
            raise InvalidParams(message=f"command is not executable: {argv[0]!r}", data={"command": argv[0]}) from None
        if isinstance(exc, OSError):
            raise InternalError(
                message=f"cannot start {argv[0]!r}: {exc.strerror or exc}", data={"command": argv[0]}
            ) from None
        raise
    finally:
        os.close(write_fd)  # the child has its own copy; ours would keep the pipe from ever ending
    return tree, read_fd
