"""Spawn an agent as a subprocess and speak to it over its stdin/stdout.

stderr is read line by line on its own task into a callback or logger, never mixed with protocol bytes;
the last lines are kept so a ``ConnectionClosed`` can say why the agent died.

By default everything the agent starts is ours: real agents start helpers (a node wrapper and its native
binary, a CLI and its model client) that outlive a signal sent to the direct child alone, and some ignore the
end of their stdin. On Linux the agent runs under the reaper (``process_tree.ReapedTree``), which holds every
descendant however it detaches; elsewhere it runs in a session and process group of its own. Shutting down
ends all of it (see ``AgentProcess.aclose``); a zombie left for a slow reaper counts as gone.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import Process

from .base import DEFAULT_RECEIVE_SIZE, FrameTransport, PeerExit
from .exits import exit_words
from .framing import DEFAULT_MAX_FRAME_SIZE
from .lines import LineFrames
from .pipe import PipeFrames, PipeReader, PipeWriter, open_pipe, open_stdin_pipe
from .process_tree import GroupTree, ProcessTree, ReapedTree, group_running, open_tree

__all__ = ["AgentProcess", "group_running", "stdio_agent"]  # group_running: for callers of its former home


_log = logging.getLogger("acp_session.agent.stderr")
_MAX_STDERR_LINE = 64 * 1024
_EXIT_WAIT = 0.05  # how long peer_exit() waits for the exit code once stdout ended
_KILL_WAIT = 2.0  # how long shutdown waits for SIGKILLed members to be gone (uninterruptible sleep)
_MAX_NAME = 120


def command_line(argv: Sequence[str], limit: int = _MAX_NAME) -> str:
    """``argv`` as a shell would read it, cut to ``limit`` characters (for messages)."""
    text = shlex.join(argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AgentProcess:
    """A ``Transport`` over a running agent subprocess; ``aclose()`` shuts it down politely, then firmly.

    ``pid`` is the agent's own pid and ``pgid`` its process group (None when it shares ours:
    ``own_process_group=False``); ``tree`` is the agent with everything it started (``process_tree``);
    ``process`` is the process we started: the reaper when the agent runs under it (``reaped``), else the
    agent itself. ``argv`` is the command the agent was started with, ``name`` that command for messages.
    """

    def __init__(
        self,
        process: Process,
        stdout: PipeReader | None = None,
        stdin: PipeWriter | None = None,
        *,
        grace_period: float,
        terminate_timeout: float,
        stderr_tail_lines: int,
        pgid: int | None = None,
        argv: Sequence[str] = (),
        tree: ProcessTree | None = None,
    ) -> None:
        self.process = process
        self.tree: ProcessTree = tree if tree is not None else GroupTree(process, pgid)
        self.argv: tuple[str, ...] = tuple(argv)
        self.name = command_line(self.argv) if self.argv else f"pid {self.tree.pid}"
        self._stdout = stdout  # read directly (POSIX); else the process's own stdout stream
        self._stdin = stdin  # written directly (POSIX); else the process's own stdin stream
        self.grace_period = grace_period
        self.terminate_timeout = terminate_timeout
        self._stderr_tail: deque[str] = deque(maxlen=stderr_tail_lines)
        self._stderr_done = anyio.Event()
        self._closed = False
        if process.stderr is None:
            self._stderr_done.set()

    @property
    def pid(self) -> int:
        return self.tree.pid

    @property
    def pgid(self) -> int | None:
        return self.tree.pgid

    @property
    def reaped(self) -> bool:
        """Whether the agent runs under the reaper, which ends every descendant however it detached (Linux)."""
        return isinstance(self.tree, ReapedTree)

    @property
    def returncode(self) -> int | None:
        """The exit code, once the agent has exited."""
        return self.tree.returncode

    async def wait(self) -> int:
        """Wait for the agent itself to exit (not for what it started); its exit code."""
        return await self.tree.wait()

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        return tuple(self._stderr_tail)

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        if self._stdout is not None:
            return await self._stdout.receive(max_bytes)
        assert self.process.stdout is not None
        return await self.process.stdout.receive(max_bytes)

    def frames(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> FrameTransport:
        """Newline framing over the agent's stdout and stdin (what a ``Connection`` uses; see ``FramedStream``).

        With the pipes read and written directly (POSIX) that is ``PipeFrames``, with the fast paths of a
        ``FastPathTransport``; otherwise plain ``LineFrames`` over this transport's bytes.
        """
        if self._stdout is not None and self._stdin is not None:
            return PipeFrames(self._stdout, self._stdin, self, max_frame_size)
        return LineFrames(self, max_frame_size)

    async def send(self, item: bytes) -> None:
        if self._stdin is not None:
            await self._stdin.send(item)
            return
        assert self.process.stdin is not None
        await self.process.stdin.send(item)

    async def close_stdin(self) -> None:
        """Close the agent's stdin only (its end of input, as a client that is done does), leaving the agent to
        exit on its own; ``aclose`` later does the rest."""
        with anyio.CancelScope(shield=True):
            if self._stdin is not None:
                await self._stdin.aclose()
            elif self.process.stdin is not None:
                await self.process.stdin.aclose()

    async def peer_exit(self) -> PeerExit:
        with anyio.move_on_after(_EXIT_WAIT):
            await self.tree.wait()
            await self._stderr_done.wait()
        code = self.tree.returncode
        return PeerExit(code, self.stderr_tail, None if code is None else exit_words(code))

    async def aclose(self) -> None:
        """Close stdin, wait ``grace_period`` for a clean exit, then SIGTERM, wait ``terminate_timeout``, then SIGKILL.

        Under the reaper (Linux, the default) the agent has exited only once it and every process it started
        have, however they detached, and the signals go to all of them. With its own process group (elsewhere)
        the same holds for the members of the group. Either way a helper that ignores the end of stdin or
        outlives its parent is ended too, and none is left running when this returns. With
        ``own_process_group=False`` only the direct child is waited for and signalled.
        """
        if self._closed:
            return
        self._closed = True
        process, tree = self.process, self.tree
        with anyio.CancelScope(shield=True):
            if self._stdin is not None:
                await self._stdin.aclose()
            if process.stdin is not None:
                await process.stdin.aclose()
            if not await self._wait_exit(self.grace_period):
                tree.signal_all(signal.SIGTERM)
                if not await self._wait_exit(self.terminate_timeout):
                    tree.signal_all(signal.SIGKILL)
                    if not await self._wait_exit(_KILL_WAIT):
                        tree.abandon()
                    if process.returncode is None:
                        await process.wait()
            if isinstance(tree, ReapedTree):
                tree.close()
            if process.stdout is not None:
                await process.stdout.aclose()
            if self._stdout is not None:
                await self._stdout.aclose()
            with anyio.move_on_after(0.2):
                await self._stderr_done.wait()
            _release_pipes(process)

    async def _wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until nothing of the agent runs; True if nothing does."""
        with anyio.move_on_after(timeout):
            await self.tree.wait_all()
        return not self.tree.running()

    async def _pump_stderr(self, on_line: Callable[[str], object] | None) -> None:
        stream = self.process.stderr
        assert stream is not None
        pending = bytearray()
        try:
            while True:
                try:
                    chunk = await stream.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                pending += chunk
                while True:
                    nl = pending.find(b"\n")
                    if nl < 0:
                        if len(pending) > _MAX_STDERR_LINE:
                            self._emit(bytes(pending[:_MAX_STDERR_LINE]), on_line)
                            del pending[:]
                        break
                    self._emit(bytes(pending[:nl]), on_line)
                    del pending[: nl + 1]
            if pending:
                self._emit(bytes(pending), on_line)
        finally:
            self._stderr_done.set()
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    def _emit(self, raw: bytes, on_line: Callable[[str], object] | None) -> None:
        line = raw[:_MAX_STDERR_LINE].decode("utf-8", "replace").rstrip("\r")
        self._stderr_tail.append(line)
        if on_line is None:
            _log.info("%s", line)
        else:
            try:
                on_line(line)
            except Exception:
                _log.exception("stderr callback failed")


@asynccontextmanager
async def stdio_agent(
    argv: Sequence[str],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    on_stderr: Callable[[str], object] | None = None,
    grace_period: float = 2.0,
    terminate_timeout: float = 2.0,
    stderr_tail_lines: int = 20,
    own_process_group: bool = True,
    start_new_session: bool | None = None,
    reap_descendants: bool = True,
) -> AsyncIterator[AgentProcess]:
    """Spawn ``argv`` and yield its transport; on exit the agent is shut down (see ``AgentProcess.aclose``).

    ``env`` replaces the environment when given. stderr lines go to ``on_stderr`` or, by default, to the
    ``acp_session.agent.stderr`` logger; the last ``stderr_tail_lines`` are kept for error messages.

    ``own_process_group`` (the default, POSIX) makes everything the agent starts ours, and leaving the block
    ends all of it (stdin closed, ``grace_period``, SIGTERM, ``terminate_timeout``, SIGKILL), so no helper of
    the agent outlives it. On Linux, with ``reap_descendants`` (the default), the agent runs under the reaper
    (``acp_session.transport.reaper``), a child subreaper that holds every descendant however it detaches
    (``setsid``, a double-fork daemon, ...) and, should this process die, ends them on its own; elsewhere (or
    with ``reap_descendants=False``) the agent runs in a new session and process group, and a process that
    leaves the group (``setsid``) is out of reach. A terminal's Ctrl-C reaches only the caller either way,
    which can turn it into ``session/cancel``. ``own_process_group=False`` keeps the agent in the caller's group
    and session (it gets the terminal's signals) and signals only the direct child on shutdown, leaving
    whatever it started alone. ``start_new_session`` is the former name of ``own_process_group`` (it wins
    when given).
    """
    if start_new_session is not None:
        own_process_group = start_new_session
    own_process_group = own_process_group and hasattr(os, "killpg")
    stdout: PipeReader | None = None
    stdin: PipeWriter | None = None
    child_stdout: int = subprocess.PIPE
    child_stdin: int = subprocess.PIPE
    if os.name == "posix":
        stdout, child_stdout = open_pipe()
        stdin, child_stdin = open_stdin_pipe()
    try:
        tree = await open_tree(
            list(argv),
            reap=reap_descendants,
            own_group=own_process_group,
            grace=terminate_timeout,
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
        )
    except BaseException:
        if stdout is not None:
            await stdout.aclose()
        if stdin is not None:
            await stdin.aclose()
        raise
    finally:
        if stdout is not None:
            os.close(child_stdout)  # the child has its own copy; ours would keep the pipe from ever ending
        if stdin is not None:
            os.close(child_stdin)
    agent = AgentProcess(
        tree.process,
        stdout,
        stdin,
        grace_period=grace_period,
        terminate_timeout=terminate_timeout,
        stderr_tail_lines=stderr_tail_lines,
        argv=argv,
        tree=tree,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent._pump_stderr, on_stderr)
        if isinstance(tree, ReapedTree):
            tg.start_soon(tree.watch)  # a reaper killed outright: what it held is ended at once
        try:
            yield agent
        finally:
            await agent.aclose()
            tg.cancel_scope.cancel()  # a grandchild may hold stderr open; never wait for it


def _release_pipes(process: Process) -> None:
    """Close the OS pipes of an exited process that the event loop may still hold.

    On asyncio a read pipe whose reader was paused (unread output left behind by an agent killed while it
    was writing) never sees end of file, so closing the stream does not release it and the subprocess
    transport is reported unclosed when the loop ends. anyio offers no public handle for this, so the
    asyncio transport is closed directly; trio closes the file descriptors itself.
    """
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if process.returncode is not None and callable(close):
        with suppress(Exception):
            close()
