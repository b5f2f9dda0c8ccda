"""Spawn an agent as a subprocess and speak to it over its stdin/stdout.

stderr is read line by line on its own task into a callback or logger, never mixed with protocol bytes;
the last lines are kept so a ``ConnectionClosed`` can say why the agent died.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import Process

from .base import DEFAULT_RECEIVE_SIZE, PeerExit
from .pipe import PipeReader, PipeWriter, open_pipe, open_stdin_pipe

__all__ = ["AgentProcess", "stdio_agent"]

_log = logging.getLogger("acp_session.agent.stderr")
_MAX_STDERR_LINE = 64 * 1024
_EXIT_WAIT = 0.05  # how long peer_exit() waits for the exit code once stdout ended


class AgentProcess:
    """A ``Transport`` over a running agent subprocess; ``aclose()`` shuts it down politely, then firmly."""

    def __init__(
        self,
        process: Process,
        stdout: PipeReader | None = None,
        stdin: PipeWriter | None = None,
        *,
        grace_period: float,
        terminate_timeout: float,
        stderr_tail_lines: int,
    ) -> None:
        self.process = process
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
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code, once the agent has exited."""
        return self.process.returncode

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        return tuple(self._stderr_tail)

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        if self._stdout is not None:
            return await self._stdout.receive(max_bytes)
        assert self.process.stdout is not None
        return await self.process.stdout.receive(max_bytes)

    def set_ready_consumer(self, consumer: Callable[[bytes], bool] | None) -> None:
        """See ``PipeReader.set_ready_consumer`` (no-op when stdout is not read directly)."""
        if self._stdout is not None:
            self._stdout.set_ready_consumer(consumer)

    @property
    def poll_ready(self) -> Callable[[], bool | None] | None:
        """See ``PipeReader.poll_ready`` (None when stdout is not read directly)."""
        return None if self._stdout is None else self._stdout.poll_ready

    @property
    def send_nowait(self) -> Callable[[bytes], int] | None:
        """Writes what fits into the agent's stdin at once (None when stdin is not written directly)."""
        return None if self._stdin is None else self._stdin.send_nowait

    async def send(self, item: bytes) -> None:
        if self._stdin is not None:
            await self._stdin.send(item)
            return
        assert self.process.stdin is not None
        await self.process.stdin.send(item)

    async def peer_exit(self) -> PeerExit:
        with anyio.move_on_after(_EXIT_WAIT):
            await self.process.wait()
            await self._stderr_done.wait()
        return PeerExit(self.process.returncode, self.stderr_tail)

    async def aclose(self) -> None:
        """Close stdin, wait ``grace_period`` for a clean exit, then terminate, then kill."""
        if self._closed:
            return
        self._closed = True
        process = self.process
        with anyio.CancelScope(shield=True):
            if self._stdin is not None:
                await self._stdin.aclose()
            if process.stdin is not None:
                await process.stdin.aclose()
            if process.returncode is None:
                with anyio.move_on_after(self.grace_period):
                    await process.wait()
            if process.returncode is None:
                with suppress(ProcessLookupError):
                    process.terminate()
                with anyio.move_on_after(self.terminate_timeout):
                    await process.wait()
            if process.returncode is None:
                with suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
            if self._stdout is not None:
                await self._stdout.aclose()
            with anyio.move_on_after(0.2):
                await self._stderr_done.wait()
            _release_pipes(process)

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
    start_new_session: bool = False,
) -> AsyncIterator[AgentProcess]:
    """Spawn ``argv`` and yield its transport; on exit the agent is shut down (see ``AgentProcess.aclose``).

    ``env`` replaces the environment when given. stderr lines go to ``on_stderr`` or, by default, to the
    ``acp_session.agent.stderr`` logger. ``start_new_session`` runs the agent in its own session and process
    group (POSIX), so a terminal's Ctrl-C reaches only the caller, which can turn it into ``session/cancel``.
    """
    stdout: PipeReader | None = None
    stdin: PipeWriter | None = None
    child_stdout: int = subprocess.PIPE
    child_stdin: int = subprocess.PIPE
    if os.name == "posix":
        stdout, child_stdout = open_pipe()
        stdin, child_stdin = open_stdin_pipe()
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=start_new_session,
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
        process,
        stdout,
        stdin,
        grace_period=grace_period,
        terminate_timeout=terminate_timeout,
        stderr_tail_lines=stderr_tail_lines,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent._pump_stderr, on_stderr)
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
