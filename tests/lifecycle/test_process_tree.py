"""The agent's process tree is ours: leaving ``spawn(...)`` ends every process of the agent's group.

The agents (``agents/tree_agent.py``) start helpers the way real ones do: a helper that ignores the end of
stdin and SIGTERM, a node-style wrapper whose native child outlives a SIGTERM to the wrapper (codex-acp), a
wrapper that exits at once and leaves its child running. Zombies do not count as running: this sandbox's
pid 1 is slow to reap orphans.
"""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import ConnectionClosed
from acp_session.transport import stdio_agent

from .support import agent_of, group_members, pid_from_stderr, running, tree_agent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not os.path.isdir("/proc") or not hasattr(os, "killpg"), reason="needs /proc and killpg"),
]

QUICK = {"grace_period": 0.3, "terminate_timeout": 0.3}


async def test_a_helper_ignoring_eof_and_sigterm_ends_with_the_agent() -> None:
    argv = tree_agent("agent", helper=True, helper_ignores_term=True)
    async with ClientBuilder().spawn(argv, **QUICK) as client:
        agent = agent_of(client)
        assert agent.pgid == agent.pid  # its own group (and session), by default
        assert os.getsid(agent.pid) == agent.process.pid  # the session of the reaper (Linux), or its own
        assert agent.reaped == (agent.process.pid != agent.pid)
        helper = await pid_from_stderr(agent, "helper")
        assert os.getpgid(helper) == agent.pgid
    assert agent.returncode == 0  # the agent itself left at the end of stdin
    assert not running(helper)  # SIGTERM was ignored: SIGKILL ended it
    assert group_members(agent.pid) == []


async def test_a_native_child_that_survives_its_wrappers_sigterm_is_killed() -> None:
    # codex-acp: the wrapper dies on SIGTERM, the native agent ignores both the end of stdin and SIGTERM.
    argv = tree_agent("wrapper", ignore_eof=True, ignore_term=True)
    start = anyio.current_time()
    async with ClientBuilder().spawn(argv, **QUICK) as client:
        agent = agent_of(client)
        native = await pid_from_stderr(agent, "child")
        assert client.agent.info.name == "tree"  # the native child answers
    assert agent.returncode == -signal.SIGTERM
    assert not running(native)
    assert group_members(agent.pid) == []
    assert anyio.current_time() - start < 5


async def test_members_left_after_the_direct_child_exited_are_ended() -> None:
    argv = tree_agent("wrapper", detach=True, ignore_eof=True)
    async with ClientBuilder().spawn(argv, **QUICK) as client:
        agent = agent_of(client)
        native = await pid_from_stderr(agent, "child")
        with anyio.fail_after(5):
            await agent.wait()
        assert agent.returncode == 0 and running(native)  # the wrapper is gone, its child is not
    assert not running(native)
    assert group_members(agent.pid) == []


async def test_helpers_of_an_agent_that_died_are_ended_on_leaving() -> None:
    argv = tree_agent("agent", helper=True, exit_after_init=True)
    async with ClientBuilder().spawn(argv, **QUICK) as client:
        agent = agent_of(client)
        helper = await pid_from_stderr(agent, "helper")
        closed = await client.rpc.wait_closed()
        assert isinstance(closed, ConnectionClosed) and closed.exit_code == 3
        assert running(helper)
    assert not running(helper)
    assert group_members(agent.pid) == []


async def test_a_quiet_exit_is_not_held_up_by_the_grace_period() -> None:
    start = anyio.current_time()
    async with ClientBuilder().spawn(tree_agent("agent"), grace_period=5, terminate_timeout=5) as client:
        agent = agent_of(client)
    assert agent.returncode == 0
    assert anyio.current_time() - start < 2.5


@pytest.mark.parametrize("how", ["spawn", "stdio_agent", "start_new_session"])
async def test_opting_out_keeps_the_agent_in_our_group_and_its_children_alone(how: str) -> None:
    argv = tree_agent("agent", helper=True)
    helper = 0
    try:
        if how == "spawn":
            async with ClientBuilder().spawn(argv, own_process_group=False, **QUICK) as client:
                agent = agent_of(client)
                helper = await pid_from_stderr(agent, "helper")
        else:
            option = {"own_process_group": False} if how == "stdio_agent" else {"start_new_session": False}
            async with stdio_agent(argv, **option, **QUICK) as agent:  # type: ignore[arg-type]
                helper = await pid_from_stderr(agent, "helper")
        assert agent.pgid is None
        assert os.getpgid(helper) == os.getpgrp()  # the caller's group, as before
        assert agent.returncode == 0
        assert running(helper)  # as before: only the direct child is ours to end
    finally:
        if helper:
            os.kill(helper, signal.SIGKILL)
