"""``--allow-files`` / ``--allow-terminal`` through ``acp-session serve``: a protocol version 1 agent (the Python SDK
agent ``tests/interop/py_v1_agent.py``: ``read PATH``, ``write PATH TEXT``, ``run CMD ARGS``) reads and writes
files and runs a command in the session's directory when the host allows it, cannot leave that directory, and
without the options gets a JSON-RPC error (its tool call fails; neither it nor the host crashes)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from acp_session import ClientBuilder
from tests.interop.conftest import PY_V1_AGENT

from .conftest import Host

pytestmark = pytest.mark.anyio

AGENT = f"{sys.executable} {PY_V1_AGENT}"


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the notes\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    return work, secret


async def _ask(host: Host, cwd: Path, *prompts: str) -> list[str]:
    """Each prompt as one turn of one session through the host; the replies' text."""
    replies = []
    with anyio.fail_after(60):
        async with ClientBuilder("files-test", "1.0").connect_url(host.url) as client:
            conversation = await client.start_conversation(str(cwd))
            for prompt in prompts:
                reply = await conversation.chat_to_completion(prompt)
                assert reply.stop_reason == "end_turn"
                replies.append(reply.text)
    return replies


async def test_files_and_commands_inside_the_session_directory_when_allowed(
    start_host: Callable[..., Host], tmp_path: Path
) -> None:
    work, secret = _dirs(tmp_path)
    host = start_host("--allow-files", "--allow-terminal", agent=AGENT)
    assert host.wait_for("agent_started")["protocolVersion"] == 1
    read, wrote, ran = await _ask(
        host, work, f"read {work}/notes.txt", f"write {work}/made.txt made by the agent", "run echo from-the-terminal"
    )
    assert "the notes" in read
    assert (work / "made.txt").read_text() == "made by the agent" and "wrote" in wrote
    assert "from-the-terminal" in ran and "exit code: 0" in ran
    # Out of the directory: refused, by absolute path or by climbing out, for reads and writes.
    escapes = await _ask(
        host,
        work,
        f"read {secret}",
        f"read {work}/../secret.txt",
        f"write {tmp_path}/planted.txt planted",
        f"write {work}/../planted.txt planted",
    )
    assert all("outside the directories" in reply and "the secret" not in reply for reply in escapes), escapes
    assert not (tmp_path / "planted.txt").exists() and secret.read_text() == "the secret\n"


async def test_without_the_options_the_agent_gets_an_error_not_a_crash(
    start_host: Callable[..., Host], tmp_path: Path
) -> None:
    work, _ = _dirs(tmp_path)
    host = start_host(agent=f"{AGENT} --ignore-capabilities")  # it calls fs/* and terminal/* all the same
    replies = await _ask(host, work, f"read {work}/notes.txt", f"write {work}/made.txt x", "run echo nope")
    assert all(reply.startswith("error:") for reply in replies), replies
    assert "the notes" not in replies[0] and not (work / "made.txt").exists() and "nope" not in replies[2]
    assert host.process.poll() is None
    assert len([e for e in host.events if e["event"] == "agent_started"]) == 1  # the agent did not die either
    ended = await anyio.to_thread.run_sync(functools.partial(host.wait_for, "turn_ended", 3))
    assert ended["stopReason"] == "end_turn"
