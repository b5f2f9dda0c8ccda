"""A reaper killed outright (``kill -9``) leaves no daemon behind: the client follows the reaper, sees its death
and ends every process it had recorded below it, a ``setsid`` double-fork daemon included (issue 41, 12;
``acp_session/transport/orphans.py``). Linux only, as the reaper is."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from acp_session.transport.orphans import recorded_pids
from acp_session.transport.process_tree import REAPER, ReapedTree, reaper_available
from acp_session.transport.subprocess import stdio_agent
from tests.helpers.processes import alive

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not reaper_available(), reason="the reaper is Linux only")]

# An "agent" that leaves a daemon: double fork, setsid, the agent's stdin/stdout/stderr held open for good.
DAEMONISING_AGENT = r"""
import os, sys, time
pidfile = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as file:
            file.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        while True:
            time.sleep(1)
    os._exit(0)
os.wait()
for line in sys.stdin:
    pass
"""


async def test_a_killed_reaper_leaves_no_daemon_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    async with stdio_agent([sys.executable, "-c", DAEMONISING_AGENT, str(pidfile)]) as agent:
        tree = agent.tree
        assert isinstance(tree, ReapedTree)
        with anyio.fail_after(20):
            while not pidfile.exists():
                await anyio.sleep(0.01)
            daemon = int(pidfile.read_text())
            while daemon not in tree.recorded():  # the reaper has seen it (it looks every 0.2 s)
                await anyio.sleep(0.01)
        assert alive(daemon) and os.getsid(daemon) != os.getsid(agent.pid)  # out of the agent's session and group
        os.kill(agent.process.pid, signal.SIGKILL)  # the reaper itself
        killed = anyio.current_time()
        with anyio.fail_after(10):
            while alive(daemon):
                await anyio.sleep(0.01)
        assert anyio.current_time() - killed < 1.0
        assert not alive(agent.pid)


def test_the_record_names_the_tree_and_is_emptied_at_a_normal_exit(tmp_path: Path) -> None:
    record = os.open(tmp_path / "record", os.O_RDWR | os.O_CREAT)
    ours, theirs = socket.socketpair()
    command = ["sh", "-c", "sleep 30 & echo $! > pid; wait"]
    argv = [sys.executable, "-I", "-S", REAPER, str(theirs.fileno()), "1.0", str(record), "--", *command]
    reaper = subprocess.Popen(argv, pass_fds=(theirs.fileno(), record), cwd=tmp_path)
    theirs.close()
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sleeper = int((tmp_path / "pid").read_text())
        started = ours.recv(100).split()
        assert started[0] == b"started"
        while set(recorded_pids(os.pread(record, 4096, 0))) != {int(started[1]), sleeper}:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(sleeper, signal.SIGTERM)
        assert reaper.wait(timeout=20) == 0
        assert os.pread(record, 4096, 0) == b""  # nothing left: a client reading it ends nothing
    finally:
        reaper.kill()
        reaper.wait()
        ours.close()
        os.close(record)
