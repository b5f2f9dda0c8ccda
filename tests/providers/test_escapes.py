"""No process outlives the connection, however it detaches (issue 26, item 6).

A hostile v1 agent (``agents/v1_provider_agent.py``) starts processes that try to escape, each a way real
programs detach (``agents/escape.py``: ``setsid``, ``setpgid``, a double-fork daemon, ``nohup``, ``disown``,
``setsid`` and SIGTERM ignored, the ``setsid`` command), both as terminal commands it asks the client to run
and as its own descendants. Each escaped process writes its pid; the tests check it runs, then that it does not
once the block is left, once the agent died, or once the client process itself was killed. On Linux the reaper
(``acp_session/transport/reaper.py``) guarantees this; elsewhere only the process group is, so these tests
need Linux.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import ConnectionClosed
from acp_session.transport.process_tree import reaper_available

from .agent_support import ESCAPE, agent_argv, run_steps

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not reaper_available(), reason="the reaper is Linux only (elsewhere: process groups)"),
]

TECHNIQUES = ("setsid", "setpgid", "daemon", "nohup", "disown", "stubborn", "setsid-command")
QUICK = {"grace_period": 0.3, "terminate_timeout": 0.3}


def running(pid: int) -> bool:
    """Exists and is not a zombie (an orphan's reaper may be slow to collect it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def escaped(pidfile: Path, count: int) -> list[int]:
    pids = [int(line) for line in pidfile.read_text().split()]
    assert len(pids) == count, pids
    return pids


def terminal_escapes(pidfile: Path) -> list[dict[str, object]]:
    """A terminal per technique: its command detaches a sleeper and exits; wait for that exit."""
    steps: list[dict[str, object]] = []
    for technique in TECHNIQUES:
        params = {"sessionId": "s1", "command": sys.executable, "args": [str(ESCAPE), technique, str(pidfile)]}
        steps += [
            {"call": "terminal/create", "params": params},
            {"call": "terminal/wait_for_exit", "params": {"sessionId": "s1", "terminalId": "$terminal"}},
        ]
    return steps


def agent_escapes(pidfile: Path) -> list[dict[str, object]]:
    return [{"escape": technique, "pidfile": str(pidfile)} for technique in TECHNIQUES]


async def wait_gone(pids: list[int], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while [pid for pid in pids if running(pid)]:
            await anyio.sleep(0.02)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("where", ["terminal", "agent"])
async def test_nothing_escapes_leaving_the_block(tmp_path: Path, where: str) -> None:
    pidfile, log = tmp_path / "pids", tmp_path / "agent.log"
    steps = terminal_escapes(pidfile) if where == "terminal" else agent_escapes(pidfile)
    builder = ClientBuilder("escapes", "1").with_terminals(kill_grace=0.3)
    pids: list[int] = []
    try:
        async with builder.spawn(agent_argv(log), **QUICK) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, steps)
            pids = escaped(pidfile, len(TECHNIQUES))
            assert all(running(pid) for pid in pids)  # every one got away from its parent
        assert [pid for pid in pids if running(pid)] == []
    finally:
        kill_all(pids)


async def test_without_the_reaper_a_setsid_process_and_a_daemon_escape(tmp_path: Path) -> None:
    # The control: the same requests with the reaper off (process groups only) leave processes behind.
    pidfile, log = tmp_path / "pids", tmp_path / "agent.log"
    steps = [step for step in terminal_escapes(pidfile) if _technique(step) in (None, "setsid", "daemon")]
    builder = ClientBuilder("escapes", "1").with_terminals(kill_grace=0.3, reap_descendants=False)
    pids: list[int] = []
    try:
        async with builder.spawn(agent_argv(log), reap_descendants=False, **QUICK) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, steps)
            pids = escaped(pidfile, 2)
        assert all(running(pid) for pid in pids)
    finally:
        kill_all(pids)


def _technique(step: dict[str, object]) -> str | None:
    params = step.get("params")
    args = params.get("args") if isinstance(params, dict) else None
    return str(args[1]) if isinstance(args, list) else None


async def test_terminals_end_when_the_agent_dies_not_when_the_block_is_left(tmp_path: Path) -> None:
    pidfile, log = tmp_path / "pids", tmp_path / "agent.log"
    sleeper = {"sessionId": "s1", "command": "sleep", "args": ["60"]}
    steps = [*terminal_escapes(pidfile), {"call": "terminal/create", "params": sleeper}]
    pids: list[int] = []
    try:
        async with ClientBuilder("escapes", "1").with_terminals(kill_grace=0.3).spawn(agent_argv(log)) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, steps)
            pids = escaped(pidfile, len(TECHNIQUES))
            assert all(running(pid) for pid in pids)
            with pytest.raises(ConnectionClosed):
                await run_steps(session, [{"exit": 3}])
            await wait_gone(pids)  # still inside the block: the connection's end was enough
            assert client.tools.terminals is not None and client.tools.terminals.terminal_ids == ()  # type: ignore[attr-defined]
    finally:
        kill_all(pids)


async def test_an_agents_escaped_descendants_end_when_the_dead_agent_is_left(tmp_path: Path) -> None:
    pidfile, log = tmp_path / "pids", tmp_path / "agent.log"
    pids: list[int] = []
    try:
        async with ClientBuilder("escapes", "1").spawn(agent_argv(log), **QUICK) as client:
            session = await client.new_session(str(tmp_path))
            await run_steps(session, agent_escapes(pidfile))
            pids = escaped(pidfile, len(TECHNIQUES))
            with pytest.raises(ConnectionClosed):
                await run_steps(session, [{"exit": 3}])
            closed = await client.rpc.wait_closed()
            assert closed.exit_code == 3  # the agent's own exit code, not the reaper's
            assert all(running(pid) for pid in pids)  # the agent is gone, what it started is not (yet)
        assert [pid for pid in pids if running(pid)] == []
    finally:
        kill_all(pids)


async def test_nothing_outlives_a_client_that_is_killed(tmp_path: Path, anyio_backend: str) -> None:
    # The client process gets SIGKILL: no cleanup of ours runs. The reapers see their socket close and end
    # everything on their own (SIGTERM, their grace period, SIGKILL).
    pidfile, log = tmp_path / "pids", tmp_path / "agent.log"
    steps = [*terminal_escapes(pidfile), *agent_escapes(pidfile)]
    client = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parent / "escape_client.py"),
            *(str(log), str(tmp_path), json.dumps(steps), anyio_backend),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    pids: list[int] = []
    try:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "ready"
        pids = escaped(pidfile, 2 * len(TECHNIQUES))
        assert all(running(pid) for pid in pids)
        client.kill()
        client.wait()
        await wait_gone(pids, timeout=10)
    finally:
        client.kill()
        client.wait()
        kill_all(pids)
