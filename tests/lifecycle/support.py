"""Looking at processes from the tests: who is in a process group, who still runs (zombies do not count)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from acp_session import ClientConnection
from acp_session.transport import AgentProcess

AGENTS = Path(__file__).parent / "agents"


def tree_agent(role: str, **config: Any) -> list[str]:
    return [sys.executable, str(AGENTS / "tree_agent.py"), role, json.dumps(config)]


def _stat(pid: int | str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()  # state, ppid, pgrp, ...


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan's reaper may take a while to collect it)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


def group_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(entry)
            if fields is not None and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                found.append(int(entry))
    return found


def agent_of(client: ClientConnection) -> AgentProcess:
    transport = client.rpc.transport
    assert isinstance(transport, AgentProcess)
    return transport


async def pid_from_stderr(agent: AgentProcess, word: str, timeout: float = 10.0) -> int:
    """The pid an agent of ``tree_agent.py`` reported as ``WORD <pid>`` on stderr."""
    with anyio.fail_after(timeout):
        while True:
            for line in agent.stderr_tail:
                if line.startswith(word + " "):
                    return int(line.split()[1])
            await anyio.sleep(0.01)
