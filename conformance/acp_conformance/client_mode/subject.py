"""The client under test as a process tree, kept on a short leash: whatever it does, a run ends on time.

The client runs under the reaper, as agents do (``acp_session.transport.process_tree``): a helper or daemon it
starts (``setsid``, a double fork) stays within reach. Its stdout and stderr are drained into bounded buffers
(only their last bytes are kept), so a flood of output neither fills the runner's memory nor reaches the
runner's own output, and a daemon holding them open cannot make the runner wait for their end. When the client
exits, whatever it left running is ended; at the deadline the whole tree is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_session.transport.process_tree import ProcessTree, ReapedTree, open_tree

__all__ = ["KEPT_BYTES", "SubjectRun", "run_subject"]

KEPT_BYTES = 64 * 1024
"""Bytes kept of each of the client's output streams (the last ones)."""
_LEFTOVER_GRACE = 1.0  # seconds what the client left running gets after SIGTERM, once the client exited
_KILL_SETTLE = 2.0  # seconds to wait for SIGKILLed processes to be gone
_DRAIN_AFTER = 0.5  # seconds the pipes are still read once the tree ended (what was written before)


@dataclass
class SubjectRun:
    """How one run of the client ended."""

    exit_code: int | None
    """The client's exit status; None when it did not exit in time (then its whole tree was killed)."""
    stdout: bytes
    """The last ``KEPT_BYTES`` it wrote to stdout."""
    stderr: bytes
    """The last ``KEPT_BYTES`` it wrote to stderr."""
    stdout_bytes: int = 0
    """How much it wrote to stdout in all."""


class _Tail:
    """The last ``KEPT_BYTES`` read from a pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.kept = bytearray()
        self.total = 0
        self.ended = anyio.Event()

    async def drain(self) -> None:
        try:
            await self._read_to_end()
        finally:
            self.ended.set()

    async def _read_to_end(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            except OSError:
                return
            if not data:
                return
            self.total += len(data)
            self.kept += data
            del self.kept[:-KEPT_BYTES]
            await anyio.lowlevel.checkpoint()  # a flood must not starve the other runs


async def run_subject(argv: list[str], cwd: Path, env: Mapping[str, str], limit: float) -> SubjectRun:
    """Run ``argv`` for at most ``limit`` seconds (see the module). Raises ``OSError`` if it cannot start."""
    pipes = [os.pipe(), os.pipe()]
    try:
        for read_end, _ in pipes:
            os.set_blocking(read_end, False)
        with anyio.CancelScope(shield=True):  # once started, the tree must be ended
            tree = await open_tree(
                argv,
                reap=True,
                stdin=subprocess.DEVNULL,
                stdout=pipes[0][1],
                stderr=pipes[1][1],
                cwd=cwd,
                env=dict(env),
            )
    except BaseException:
        for read_end, _ in pipes:
            os.close(read_end)
        raise
    finally:
        for _, write_end in pipes:
            os.close(write_end)  # the client has its own copies; ours would keep the pipes from ending
    out, err = _Tail(pipes[0][0]), _Tail(pipes[1][0])
    exit_code: int | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(out.drain)
            tg.start_soon(err.drain)
            if isinstance(tree, ReapedTree):
                tg.start_soon(tree.watch)
            with anyio.move_on_after(limit):
                exit_code = await tree.wait()
            with anyio.CancelScope(shield=True):
                await _end_tree(tree, polite=exit_code is not None)
            with anyio.move_on_after(_DRAIN_AFTER):  # the tree is gone: the pipes end, unless ...
                await out.ended.wait()
                await err.ended.wait()
            tg.cancel_scope.cancel()  # ... a process we could not end holds them: never wait for it
    finally:
        if isinstance(tree, ReapedTree):
            tree.close()
        os.close(out.fd)
        os.close(err.fd)
    return SubjectRun(exit_code, bytes(out.kept), bytes(err.kept), out.total)


async def _end_tree(tree: ProcessTree, *, polite: bool) -> None:
    """End all that is left of the tree: SIGTERM first when the client exited by itself, else SIGKILL."""
    if polite and tree.running():
        tree.signal_all(signal.SIGTERM)
        with anyio.move_on_after(_LEFTOVER_GRACE):
            await tree.wait_all()
    if tree.running():
        tree.signal_all(signal.SIGKILL)
        with anyio.move_on_after(_KILL_SETTLE):
            await tree.wait_all()
        if tree.running():
            tree.abandon()
    with anyio.move_on_after(_KILL_SETTLE):
        await tree.process.wait()
