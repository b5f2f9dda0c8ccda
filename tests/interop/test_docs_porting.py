"""docs/porting.md: its three examples run unchanged against an agent written on the official Python SDK 1.0
(tests/interop/py_sdk1_agent.py): the sandbox client over a process's pipes (and over asyncio streams), the chat
persona streaming into a panel, and the remote reply over the SDK's WebSocket and HTTP server."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.schema_source import REPO

from .py_sdk1 import Sdk1Server, sdk1_agent, sdk1_python, sdk1_server

__all__ = ["sdk1_agent", "sdk1_python", "sdk1_server"]

pytestmark = pytest.mark.anyio

DOC = (REPO / "docs" / "porting.md").read_text(encoding="utf-8")
EXAMPLES = dict(re.findall(r"```python\n# example: (\w+)\n(.*?)```", DOC, re.DOTALL))


def example(name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"porting_{name}"}
    exec(compile(EXAMPLES[name], f"docs/porting.md ({name})", "exec"), namespace)
    return namespace


def test_the_doc_has_the_three_examples() -> None:
    assert set(EXAMPLES) == {"sandbox", "persona", "websocket"}


SANDBOX_TASKS = (
    ("/read /work/notes.txt", ("Read: remember the milk", "end_turn")),
    ("/write /work/out.txt hello sandbox", ("Wrote 13 characters.", "end_turn")),
    ("/read /work/missing.txt", ("Refused: -32002", "end_turn")),  # ResourceNotFound, as the provider raised it
)


async def test_the_sandbox_example_over_a_process_s_pipes(
    anyio_backend: str, sdk1_agent: list[str], tmp_path: Path
) -> None:
    """The agent's file calls are answered from the sandbox's files, never the host's.

    Each task is one SDK agent process (about a second of CPU to start): the tasks are about the example and the
    agent, not the event loop, so asyncio runs the two reads and trio the write, and each backend still drives the
    example over a process's pipes."""
    ns = example("sandbox")
    files = {"/work/notes.txt": "remember the milk"}
    tasks = SANDBOX_TASKS[0::2] if anyio_backend == "asyncio" else SANDBOX_TASKS[1::2]
    results = []
    for task, _ in tasks:
        agent = await anyio.open_process(sdk1_agent, stderr=subprocess.DEVNULL)
        async with agent:
            with anyio.fail_after(30):
                transport = ns["from_sandbox"](agent.stdout, agent.stdin)
                # A v1 agent, as sandboxed harnesses drive (v2 has no fs/*); only 1 is offered, see the doc.
                results.append(await ns["solve"](transport, task, str(tmp_path), files, versions=(1,)))
                await agent.wait()  # the end of its input ended the agent
    assert results == [expected for _, expected in tasks]
    wrote = {"/work/out.txt": "hello sandbox"} if anyio_backend == "trio" else {}
    assert files == {"/work/notes.txt": "remember the milk", **wrote}
    assert not (tmp_path / "out.txt").exists()  # nothing reached the host's file system


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_sandbox_example_over_asyncio_streams(
    anyio_backend: str, sdk1_agent: list[str], tmp_path: Path
) -> None:
    """The adapter for asyncio ``StreamReader`` / ``StreamWriter`` (what the SDK's ``connect_to_agent`` took)."""
    ns = example("sandbox")
    files = {"/work/notes.txt": "asyncio streams"}
    process = await asyncio.create_subprocess_exec(
        *sdk1_agent, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None and process.stdin is not None
    with anyio.fail_after(30):
        transport = ns["AsyncioStreams"](process.stdout, process.stdin)
        reply = await ns["solve"](transport, "/read /work/notes.txt", str(tmp_path), files, versions=(1,))
        assert await process.wait() == 0
    assert reply == ("Read: asyncio streams", "end_turn")


class Panel:
    """A chat panel as a UI framework would give it: what was appended, shown and asked."""

    def __init__(self, choice: str | None) -> None:
        self.text: list[str] = []
        self.lines: list[str] = []
        self.questions: list[tuple[str, list[str]]] = []
        self.choice = choice
        self.got_text = anyio.Event()

    def append(self, text: str) -> None:
        self.text.append(text)
        self.got_text.set()

    def show(self, line: str) -> None:
        self.lines.append(line)

    async def ask(self, question: str, choices: list[str]) -> str | None:
        self.questions.append((question, choices))
        return self.choice


@pytest.mark.parametrize("choice", ["Allow", None])
async def test_the_persona_example_streams_into_the_panel(
    sdk1_agent: list[str], tmp_path: Path, choice: str | None
) -> None:
    ns = example("persona")
    panel = Panel(choice)
    persona = ns["AgentPersona"](sdk1_agent, panel, str(tmp_path))
    stopped: list[Any] = []

    async def message(text: str) -> None:  # each message in a task of its own, as a chat server runs them
        stopped.append(await persona.process_message(text))

    async with anyio.create_task_group() as tg:
        tg.start_soon(persona.run)
        with anyio.fail_after(30):
            first = await persona.process_message("hello there")
            assert "".join(panel.text) == first.text == "You said: hello there"
            panel.text.clear()
            second = await persona.process_message("/permission")
            assert panel.questions == [("Run rm -rf build/?", ["Allow", "Reject"])]
            status = "completed" if choice == "Allow" else "failed"  # dismissed: answered cancelled, not approved
            assert panel.lines == ["running: rm -rf build/", f"rm -rf build/: {status}"]
            assert "".join(panel.text) == second.text == ("Done." if choice == "Allow" else "Not allowed.")

            panel.text.clear()
            panel.got_text = anyio.Event()
            async with anyio.create_task_group() as messages:
                messages.start_soon(message, "/slow 200")
                await panel.got_text.wait()
                await persona.stop()  # the stop button
            assert stopped[0].stop_reason == "cancelled" and "".join(panel.text).startswith("chunk 1. ")
            assert (await persona.process_message("again")).text == "You said: again"  # the chat goes on
        persona.close()
    assert persona.conversation is None
    with pytest.raises(RuntimeError, match="not running"):
        await persona.process_message("after close")


@pytest.mark.parametrize("scheme", ["ws", "http"])
async def test_the_websocket_example_against_the_sdk_server(
    sdk1_server: Sdk1Server, scheme: str, tmp_path: Path
) -> None:
    ns = example("websocket")
    url = sdk1_server.ws_url if scheme == "ws" else sdk1_server.url
    with anyio.fail_after(30):
        pieces = [piece async for piece in ns["remote_reply"](url, "t0ken", str(tmp_path), "hello there")]
        assert len(pieces) >= 1 and "".join(pieces) == "You said: hello there"
        # approve_reads() with no handler: running a command is not approved.
        refused = [piece async for piece in ns["remote_reply"](url, "t0ken", str(tmp_path), "/permission")]
        assert "".join(refused) == "Not allowed."
