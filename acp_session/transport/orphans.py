"""What a dead reaper leaves behind, found and ended (Linux).

The reaper keeps a record of the processes below it (``pid starttime`` lines, rewritten as the tree changes) in
a file the client handed it. While it lives, every orphan among them is its own; if it is killed outright, they
are adopted by pid 1 and nobody would end them. The client then reads the record (``end_recorded``): each
process still alive *as itself* (same start time, so a pid reused since is left alone) is stopped, then
everything below it and the members of the sessions and process groups it leads (stopped too, so none can fork
away meanwhile), then all of them are killed.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress

__all__ = ["end_recorded", "recorded_pids"]

MAX_RECORD = 16 * 1024 * 1024  # bytes of the record read at most (a tree of about a million processes)
_STOP_ROUNDS = 20  # rescans for processes forked just before their parent was stopped


def recorded_pids(data: bytes) -> dict[int, bytes]:
    """The record's processes: pid -> start time (clock ticks after boot, as ``/proc/PID/stat`` says it)."""
    found: dict[int, bytes] = {}
    for line in data.split(b"\n"):
        pid, _, start = line.partition(b" ")
        if pid.isdigit() and start.isdigit():
            found[int(pid)] = start
    return found


def _stat(pid: int) -> list[bytes] | None:
    """``/proc/PID/stat`` from the state on (state, ppid, pgrp, session, ...), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields if len(fields) > 19 and fields[0] not in (b"Z", b"X") else None


def _living() -> dict[int, list[bytes]]:
    table: dict[int, list[bytes]] = {}
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = _stat(int(entry))
                if fields is not None:
                    table[int(entry)] = fields
    return table


def _reach(roots: set[int], table: dict[int, list[bytes]]) -> set[int]:
    """``roots``, every living process below them, and the members of sessions and groups they lead."""
    leaders = {b"%d" % pid for pid in roots}
    reached = set(roots)
    reached.update(pid for pid, fields in table.items() if fields[2] in leaders or fields[3] in leaders)
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        children.setdefault(int(fields[1]), []).append(pid)
    stack = list(reached)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in reached:
                reached.add(child)
                stack.append(child)
    return reached


def _signal(pids: set[int], signum: int) -> None:
    for pid in pids:
        with suppress(OSError):  # gone meanwhile, or not ours to signal
            os.kill(pid, signum)


def end_recorded(data: bytes) -> int:
    """SIGKILL every recorded process still alive as itself and everything attached to it (see the module);
    how many processes were signalled."""
    roots = {pid for pid, start in recorded_pids(data).items() if (f := _stat(pid)) is not None and f[19] == start}
    roots.discard(os.getpid())
    if not roots:
        return 0
    stopped: set[int] = set()
    for _ in range(_STOP_ROUNDS):
        found = _reach(roots | stopped, _living()) - stopped - {os.getpid()}
        if not found:
            break
        _signal(found, signal.SIGSTOP)  # a stopped process forks no more: the next scan is complete
        stopped |= found
    _signal(stopped, signal.SIGKILL)
    return len(stopped)
