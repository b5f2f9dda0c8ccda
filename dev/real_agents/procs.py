"""Follow every process started for an agent through /proc (Linux), and end whatever is left.

A process is identified by its pid and start time (field 22 of /proc/PID/stat), so a reused pid is never
mistaken for it. Zombies (state Z or X) count as gone: they run nothing, and an orphan's zombie may stay
until its new parent reaps it.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from dataclasses import dataclass

__all__ = ["Proc", "ProcessTracker", "scan"]

_INTERPRETERS = frozenset({"node", "python", "python3", "bun", "deno", "sh", "bash"})


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int
    comm: str

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X", "x")


def _read(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    open_paren, close_paren = raw.find("("), raw.rfind(")")
    if open_paren < 0 or close_paren < 0:
        return None
    fields = raw[close_paren + 2 :].split()
    try:
        return Proc(
            pid=pid,
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            state=fields[0],
            start=int(fields[19]),
            comm=raw[open_paren + 1 : close_paren],
        )
    except (IndexError, ValueError):
        return None


def scan() -> dict[int, Proc]:
    """Every process visible in /proc."""
    out: dict[int, Proc] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            proc = _read(int(name))
            if proc is not None:
                out[proc.pid] = proc
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            parts = f.read().split(b"\0")
    except OSError:
        return ""
    words = [p.decode("utf-8", "replace") for p in parts if p]
    if words:
        words[0] = os.path.basename(words[0])
    return " ".join(words)[:200]


class ProcessTracker:
    """The processes started for one agent: the agent (a new child of this process, or the pid given to
    ``add_root``), everything descended from it, and, when the agent leads its own process group, every member
    of that group. Call ``poll()`` often while the agent runs so that orphans are known before they are
    re-parented."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.my_pgid = os.getpgrp()
        self._children_before = {p.pid for p in scan().values() if p.ppid == self.me}
        self.known: dict[int, Proc] = {}  # pid -> first sighting (start time identifies it)
        self.cmdlines: dict[int, str] = {}
        self.roots: set[int] = set()
        self.pgid: int | None = None

    @property
    def own_group(self) -> bool:
        """Whether the agent leads a process group other than ours (so the whole group is its)."""
        return self.pgid is not None and self.pgid != self.my_pgid

    def add_root(self, pid: int) -> None:
        self.roots.add(pid)
        self.poll()

    def _same(self, proc: Proc) -> bool:
        first = self.known.get(proc.pid)
        return first is not None and first.start == proc.start

    def poll(self) -> list[Proc]:
        """Scan /proc, learn new processes of the agent; returns those alive now."""
        table = scan()
        for proc in table.values():  # the agent: a child of ours that was not there before
            if proc.ppid == self.me and proc.pid not in self._children_before and proc.pid not in self.known:
                self.roots.add(proc.pid)
        for pid in self.roots:
            root = table.get(pid)
            if root is not None and pid not in self.known:
                self._learn(root)
                if self.pgid is None:
                    self.pgid = root.pgid
        children: dict[int, list[Proc]] = {}
        for proc in table.values():
            children.setdefault(proc.ppid, []).append(proc)
        todo = [proc for proc in table.values() if self._same(proc)]
        if self.own_group:
            todo += [proc for proc in table.values() if proc.pgid == self.pgid and proc.pid not in self.known]
        while todo:
            proc = todo.pop()
            if proc.pid in (self.me, 1):
                continue
            if proc.pid not in self.known:
                self._learn(proc)
            elif not self._same(proc):
                continue
            elif proc.alive:  # it may have exec'd another program since it was first seen
                self.cmdlines[proc.pid] = _cmdline(proc.pid) or self.cmdlines[proc.pid]
            todo.extend(c for c in children.get(proc.pid, ()) if c.pid not in self.known)
        return [proc for proc in table.values() if self._same(proc) and proc.alive]

    def _learn(self, proc: Proc) -> None:
        self.known[proc.pid] = proc
        self.cmdlines[proc.pid] = _cmdline(proc.pid)

    def alive(self) -> list[Proc]:
        return self.poll()

    def name(self, pid: int) -> str:
        """A short name: the program, and the script an interpreter ran (``node cli.js``); else ``comm``."""
        words = self.cmdlines.get(pid, "").split()
        proc = self.known.get(pid)
        if not words:
            return proc.comm if proc is not None else str(pid)
        script = next((w for w in words[1:] if not w.startswith("-")), None)
        if words[0] in _INTERPRETERS and script is not None:
            return f"{words[0]} {os.path.basename(script)}"
        return words[0]

    def describe(self, proc: Proc) -> str:
        orphan = ", orphaned" if proc.ppid == 1 and proc.pid not in self.roots else ""
        return f"{self.name(proc.pid)} (pid {proc.pid}{orphan})"

    def tree(self) -> str:
        """Every process seen, nested by parent: ``node codex-acp.js > codex-acp``."""
        seen = self.known

        def label(pid: int) -> str:
            kids = [p for p in seen.values() if p.ppid == pid and p.pid != pid]
            name = self.name(pid)
            if not kids:
                return name
            inner = ", ".join(label(k.pid) for k in sorted(kids, key=lambda p: p.pid))
            return f"{name} > {inner}" if len(kids) == 1 else f"{name} > ({inner})"

        tops = [p for p in seen.values() if p.ppid not in seen]
        return "; ".join(label(p.pid) for p in sorted(tops, key=lambda p: p.pid))

    def kill_all(self) -> list[Proc]:
        """SIGKILL every process of the agent still alive (and its group, when it has its own); returns them."""
        left = self.poll()
        for proc in left:
            if proc.pid in (self.me, 1):
                continue
            with suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
        if self.own_group and self.pgid is not None and any(p.pgid == self.pgid for p in left):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
        return left
