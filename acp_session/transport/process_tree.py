"""A started command and everything it starts, as one thing to wait for, signal and end.

Two kinds, one interface (``ProcessTree``):

- ``ReapedTree`` (Linux): the command runs under the reaper (``reaper.py``), a child subreaper that adopts
  every orphan among the command's descendants. Whatever a descendant does to detach (``setsid``, ``setpgid``,
  a double-fork daemon, ``nohup``, ``disown``), it stays below the reaper, and ending the tree ends it. The
  reaper is tied to us by a socket: if this process dies, the kernel closes our end and the reaper ends the
  whole tree on its own. Should the reaper itself be killed, its orphans would go to pid 1: it keeps a record
  of the processes below it, and whoever follows the tree (``ReapedTree.watch``, which the agent transport
  and the terminal provider run) ends every one of them the moment the reaper's death is seen
  (``orphans.end_recorded``).
- ``GroupTree`` (elsewhere, or when the reaper is off): the command in a process group of its own, and that
  group signalled; a process that leaves the group is out of reach.

``open_tree`` starts a command the best way available.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping
from contextlib import suppress
from typing import IO, Any, Protocol

import anyio
from anyio.abc import Process

from .orphans import MAX_RECORD, end_recorded, recorded_pids

__all__ = [
    "GroupTree",
    "ProcessTree",
    "ReapedTree",
    "group_running",
    "open_tree",
    "reaper_available",
]

_log = logging.getLogger("acp_session.transport")
_GROUP_POLL = 0.02  # how often a group is looked at while waiting for it to empty
REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")


def reaper_available() -> bool:
    """Whether commands can run under the reaper here: Linux (``/proc``, ``prctl``) and a Python to run it."""
    return sys.platform.startswith("linux") and bool(sys.executable) and os.path.isdir("/proc")


def group_running(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie.

    ``killpg(pgid, 0)`` answers at once when the group is gone (the usual case); when it still exists, Linux's
    ``/proc`` tells the living from zombies that wait for their reaper (an orphan's new parent may take
    seconds to collect it). Without ``/proc`` every member counts as running.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member we may not signal still exists
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    wanted = b"%d" % pgid
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue  # exited meanwhile
        fields = stat[stat.rfind(b")") + 2 :].split()  # state, ppid, pgrp, ...: the name may hold spaces
        if len(fields) > 2 and fields[2] == wanted and fields[0] not in (b"Z", b"X"):
            return True
    return False


class ProcessTree(Protocol):
    """A command and its descendants. ``process`` is the process we started (the reaper, or the command)."""

    process: Process
    pid: int  # the command's own pid
    pgid: int | None  # the command's process group (None: it shares ours)

    @property
    def returncode(self) -> int | None:
        """The command's exit code (negative: killed by that signal), once it exited."""
        ...

    async def wait(self) -> int:
        """Wait for the command itself to exit; its exit code."""
        ...

    def running(self) -> bool:
        """Whether the command or anything left of the tree still runs (zombies do not count)."""
        ...

    async def wait_all(self) -> None:
        """Wait until nothing of the tree runs (bound it with a timeout)."""
        ...

    def signal_all(self, signum: int) -> None:
        """SIGTERM or SIGKILL to the whole tree (as far as this kind of tree reaches)."""
        ...

    def abandon(self) -> None:
        """Last resort after SIGKILL did not end the tree in time: kill what we started itself."""
        ...


class GroupTree:
    """The command in a process group of its own (``pgid``), or with ``pgid=None`` the command alone."""

    def __init__(self, process: Process, pgid: int | None) -> None:
        self.process = process
        self.pid = process.pid
        self.pgid = pgid
        self._group_gone = pgid is None  # once seen empty the group id is never signalled again (reuse)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        code = await self.process.wait()
        self._group_alive()  # an empty group is marked gone now, before its id can be reused
        return code

    def running(self) -> bool:
        if self.process.returncode is None:
            return True
        return self._group_alive() and self.pgid is not None and group_running(self.pgid)

    async def wait_all(self) -> None:
        if self.process.returncode is None:
            await self.process.wait()
        while self.running():
            await anyio.sleep(_GROUP_POLL)

    def signal_all(self, signum: int) -> None:
        self.signal_group(signum)
        if self.process.returncode is None and (self.pgid is None or _pgid_of(self.pid) != self.pgid):
            with suppress(ProcessLookupError):
                self.process.send_signal(signal.Signals(signum))  # no group, or the command left it

    def abandon(self) -> None:
        with suppress(ProcessLookupError):
            self.process.kill()

    def signal_group(self, signum: int) -> None:
        """``signum`` to the members of the group (none once it was seen empty)."""
        if self.pgid is not None and not self._group_gone:
            try:
                os.killpg(self.pgid, signum)
            except (ProcessLookupError, PermissionError):
                self._group_gone = True

    def _group_alive(self) -> bool:
        """False once the group is seen empty (then it is never signalled again)."""
        if self._group_gone or self.pgid is None:
            return False
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            self._group_gone = True
            return False
        return True


class ReapedTree:
    """The command under the reaper (``reaper.py``), which reports its exit and ends its descendants on request.

    The command leads a process group of its own (``pgid == pid``); ``process`` is the reaper, which exits once
    the command has exited and nothing it started is left, so the tree runs exactly as long as the reaper does.
    """

    def __init__(
        self, process: Process, control: socket.socket, pid: int, pending: bytearray, record: int = -1
    ) -> None:
        self.process = process
        self.pid = pid
        self.pgid: int | None = pid
        self._control = control
        self._returncode: int | None = None
        self._exited = False  # the command itself exited (reported)
        self._gone = False  # the reaper exited: the command and all it started are gone
        self._reader: anyio.Event | None = None  # set when the task reading the socket now is done
        self._closing = False  # close() was called while a task was reading: that task closes the socket
        self._pending = pending  # reported bytes read but not yet taken
        self._eof = False  # the reaper closed its end: it exited
        self._group = GroupTree(process, pid)  # the fallback if the reaper itself was killed
        self._record = record  # the reaper's record of the processes below it (a memfd; -1: none or read)

    @property
    def returncode(self) -> int | None:
        self._take_reports()  # up to date without awaiting anything, as a subprocess's returncode is
        return self._returncode

    async def wait(self) -> int:
        while not self._exited:
            await self._follow()
        assert self._returncode is not None
        return self._returncode

    def running(self) -> bool:
        self._take_reports()
        if not self._gone and self.process.returncode is None:
            return True
        return self._group.running()  # members of the command's group the reaper could not hold (it died)

    async def wait_all(self) -> None:
        while not self._gone:
            await self._follow()
        await self._group.wait_all()

    async def watch(self) -> None:
        """Follow the reaper until it exits. Run it beside the command (a task of its own): a reaper killed
        outright is then seen at once, and what it had recorded below it is ended (no daemon outlives it)."""
        while not self._gone:
            await self._follow()

    def recorded(self) -> set[int]:
        """The processes the reaper last recorded below it (for tests and diagnostics)."""
        return set(recorded_pids(_read_record(self._record))) if self._record >= 0 else set()

    def _end_orphans(self) -> None:
        """The reaper is gone: end whatever it had recorded that still runs (nothing, after a normal exit: the
        reaper empties its record when nothing is left below it). Then the record is closed."""
        record, self._record = self._record, -1
        if record < 0:
            return
        try:
            data = _read_record(record)
        finally:
            os.close(record)
        if data and end_recorded(data):
            _log.warning("the process reaper of %d died: ended the processes it had left behind", self.pid)

    def _take_reports(self) -> None:
        """Read what the reaper has reported so far, without waiting."""
        while not self._eof and self._control.fileno() >= 0:
            try:
                data = self._control.recv(4096)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self._eof = True
                break
            self._pending += data
        while (newline := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:newline]).decode("ascii", "replace")
            del self._pending[: newline + 1]
            word, _, value = line.partition(" ")
            if word == "exited" and self._returncode is None:
                self._returncode = os.waitstatus_to_exitcode(int(value))
                self._exited = True

    async def _follow(self) -> None:
        """Take the reaper's next reports, or wait while another task waits for them. Whoever waits reads: no
        background task is needed, so a cancelled owner still finds every report when it shuts down."""
        before = (self._exited, self._eof)
        self._take_reports()
        if (self._exited, self._eof) != before:
            return  # news already: the caller looks again
        if self._reader is not None:
            await self._reader.wait()
            return
        self._reader = reader = anyio.Event()
        try:
            if self._eof or self._control.fileno() < 0:  # the reaper exited (or we closed): the tree is gone
                with anyio.CancelScope(shield=True):
                    await self.process.wait()
                if self._returncode is None:  # killed before it could report the command's exit
                    self._returncode = self.process.returncode
                self._exited = self._gone = True
                self._end_orphans()
            else:
                await anyio.wait_readable(self._control)
                self._take_reports()
        finally:
            self._reader = None
            reader.set()
            if self._closing:
                self._control.close()  # idempotent

    def signal_all(self, signum: int) -> None:
        command = b"K" if signum == signal.SIGKILL else b"T"
        if not self._gone:
            try:
                self._control.send(command)
                return
            except OSError:
                pass
        # The reaper is gone: what is left of the command's group. Never the reaper itself: signalling it through
        # its Popen would collect its exit status behind asyncio's back (which then logs "Unknown child process").
        self._group.signal_group(signum)

    def abandon(self) -> None:
        self._group.signal_group(signal.SIGKILL)
        with suppress(ProcessLookupError):
            self.process.kill()
        self._end_orphans()

    def close(self) -> None:
        """Close our end of the socket: the reaper then ends whatever is left on its own. Safe while another
        task waits for a report: that task sees the reaper's end of file, then the socket is closed."""
        self._closing = True
        with suppress(OSError):
            self._control.shutdown(socket.SHUT_WR)  # the reaper's end of file: it finishes the tree
        if self._reader is None:
            self._control.close()
            if self._record >= 0:  # nobody follows the reaper any more: its record is of no use
                os.close(self._record)
                self._record = -1


async def open_tree(
    argv: list[str],
    *,
    reap: bool,
    own_group: bool = True,
    grace: float = 2.0,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> ProcessTree:
    """Start ``argv``: under the reaper when ``reap`` and it is available (``grace``: how long the reaper
    waits after SIGTERM when we vanish), else in a process group of its own (``own_group``) or ours.

    Raises what starting ``argv`` directly would (``FileNotFoundError`` for a missing command, ...)."""
    if reap and own_group and reaper_available():
        tree = await _open_reaped(argv, grace, stdin, stdout, stderr, cwd, env)
        if tree is not None:
            return tree
    process = await anyio.open_process(
        argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, env=env, start_new_session=own_group
    )
    return GroupTree(process, process.pid if own_group else None)


async def _open_reaped(
    argv: list[str],
    grace: float,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
) -> ReapedTree | None:
    """The command under the reaper; None (logged once) if the reaper itself cannot run here (an interpreter
    this user may not execute, an embedded Python whose ``sys.executable`` is the host application)."""
    ours, theirs = socket.socketpair()
    record = os.memfd_create("acp-session-tree", os.MFD_CLOEXEC)
    try:
        ours.setblocking(False)
        fds = (theirs.fileno(), record)
        command = [sys.executable, "-I", "-S", REAPER, str(fds[0]), repr(float(grace)), str(record), "--", *argv]
        with anyio.CancelScope(shield=True):  # once started, the reaper must be answered or ended
            process = await anyio.open_process(
                command,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=fds,
            )
    except OSError as exc:
        ours.close()
        os.close(record)
        if cwd is not None and not os.path.isdir(cwd):
            raise  # the command's own error: it would fail the same way without the reaper
        _reaper_failed(f"{exc.strerror or exc}")
        return None
    except BaseException:
        ours.close()
        os.close(record)
        raise
    finally:
        theirs.close()  # the reaper has its own copy; ours would hide its end of file
    try:
        pending = bytearray()
        with anyio.CancelScope(shield=True):
            line = await _read_line(ours, pending)
        word, _, value = (line or "").partition(" ")
        if word == "started":
            return ReapedTree(process, ours, int(value), pending, record)
        with anyio.CancelScope(shield=True):
            await process.wait()
        if word == "failed":
            code = int(value)
            raise OSError(code, os.strerror(code), argv[0])  # FileNotFoundError, PermissionError, ... by errno
    except BaseException:
        ours.close()
        os.close(record)
        raise
    ours.close()
    os.close(record)
    _reaper_failed(f"it exited with code {process.returncode} before starting the command")
    return None


_reaper_warned = False


def _reaper_failed(reason: str) -> None:
    global _reaper_warned
    if not _reaper_warned:
        _reaper_warned = True
        _log.warning(
            "the process reaper (%s %s) cannot run here (%s): commands run in a process group of their own "
            "instead, and a process that leaves the group is out of reach",
            sys.executable,
            REAPER,
            reason,
        )


async def _read_line(sock: socket.socket, pending: bytearray) -> str | None:
    """The next line the reaper reported (``pending`` holds what was read beyond it); None at end of file."""
    while (newline := pending.find(b"\n")) < 0:
        await anyio.wait_readable(sock)
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            return None
        pending += data
    line = bytes(pending[:newline])
    del pending[: newline + 1]
    return line.decode("ascii", "replace")


def _read_record(fd: int) -> bytes:
    """The reaper's record as it is now (what it holds, not a buffer of the largest size it may have)."""
    try:
        return os.pread(fd, min(os.fstat(fd).st_size, MAX_RECORD), 0)
    except OSError:
        return b""


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
