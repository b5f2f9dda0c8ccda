"""Issue 26, items 2, 5 and 11: what a hostile protocol-v1 agent calling into the client cannot do.

The agent is ``agents/v1_requests_agent.py`` over real pipes; memory is measured as the peak RSS of a client in a
process of its own (``benchmarks/memory.py``'s answer scenarios), never with timing assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection, Limits
from acp_session.conversation import Conversation
from acp_session.errors import MessageTooLarge
from acp_session.providers.files import select_lines
from acp_session.schema.types import AgentMessageChunk, TextContent, UpdateSessionNotification

AGENT = Path(__file__).parent / "agents" / "v1_requests_agent.py"
ROOT = Path(__file__).parents[2]
MEMORY = ROOT / "benchmarks" / "memory.py"
MiB = 1 << 20


@asynccontextmanager
async def v1_requests_agent(
    tmp_path: Path, builder: ClientBuilder, prompts: list[dict[str, Any]], **options: Any
) -> AsyncIterator[tuple[ClientConnection, Conversation, Path]]:
    """A conversation with the hostile v1 agent running ``prompts`` (one step per ``session/prompt``)."""
    log = tmp_path / "agent.log"
    argv = [sys.executable, str(AGENT), str(log), json.dumps({"prompts": prompts})]
    async with builder.spawn(argv, **options) as client:
        yield client, await client.start_conversation(tmp_path), log


def agent_read(log: Path) -> list[dict[str, Any]]:
    """What the agent read from the client, in order (large answers as ``{"id", "size"}`` only)."""
    return [json.loads(line) for line in log.read_text().splitlines()]


def answers(log: Path) -> dict[Any, dict[str, Any]]:
    """The client's answers to the agent's requests, by id."""
    found = {}
    for entry in agent_read(log):
        message = entry.get("msg", entry)
        if "method" not in message:
            found[message.get("id")] = message
    return found


# -- 2. answers in flight ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize(("scenario", "count"), [("answers_files", 16), ("answers_terminal", 40)])
def test_large_answers_in_flight_stay_under_the_cap(backend: str, scenario: str, count: int) -> None:
    """16 reads of a 4 MiB file of 0x01 bytes (24 MiB each as JSON), 40 terminal outputs of 1 MiB of 0x01, all at
    once, with a 16 MiB answer budget: every answer arrives, and the client's peak RSS growth stays under the
    documented cap, 2 x (budget + largest answer), far below what the answers weigh together (before: all of
    them were built and queued at once)."""
    budget = 16 * MiB
    argv = [sys.executable, str(MEMORY), "--scenario", scenario, "--n", str(count), "--backend", backend]
    argv += ["--budget", str(budget)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    run = json.loads(done.stdout.splitlines()[-1])
    print(run)
    assert run["answers"] == count  # nothing lost
    assert run["largest_answer"] > 6 * MiB  # 0x01 is \u0001 in JSON: six bytes per byte
    assert run["answer_bytes"] >= count * run["largest_answer"] * 0.99
    cap = 2 * (budget + run["largest_answer"])
    assert 0 < run["rss_growth"] <= cap
    assert run["rss_growth"] < run["answer_bytes"] / 3  # bounded by the budget, not by what was asked


@pytest.mark.anyio
async def test_the_connection_bounds_are_limits_set_on_the_builder(tmp_path: Path) -> None:
    assert (Limits().answer_bytes, Limits().parked_requests) == (64 * MiB, 4096)
    with pytest.raises(ValueError, match="answer_bytes"):
        ClientBuilder().limits(answer_bytes=0)
    with pytest.raises(ValueError, match="parked_requests"):
        ClientBuilder().limits(parked_requests=-1)
    builder = ClientBuilder("test", "1").limits(answer_bytes=5 * MiB, parked_requests=7)
    async with v1_requests_agent(tmp_path, builder, []) as (client, _conversation, _log):
        assert client.rpc.answer_budget.capacity == 5 * MiB and client.rpc._incoming.max_parked == 7
        assert client.limits.answer_bytes == 5 * MiB


# -- 5. lone surrogate escapes ----------------------------------------------------------------------------------

CUT_EMOJI = "cut \\ud83d"  # JSON text: the first half of an emoji, as Node's JSON.stringify writes a cut string


@pytest.mark.anyio
async def test_lone_surrogate_escapes_lose_no_chunk_and_a_write_is_refused_on_its_own_id(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    update = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"' + CUT_EMOJI + '"}}}}'
    )
    write = (
        '{"jsonrpc":"2.0","id":"w1","method":"fs/write_text_file","params":'
        '{"sessionId":"s1","path":' + json.dumps(str(target)) + ',"content":"' + CUT_EMOJI + '"}}'
    )
    pair = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    pair += '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" \\ud83d\\ude00"}}}}'
    notes: list[str] = []

    def on_update(note: UpdateSessionNotification) -> None:
        if isinstance(note.update, AgentMessageChunk) and isinstance(note.update.content, TextContent):
            notes.append(note.update.content.text)

    builder = ClientBuilder("test", "1").with_file_system().on_session_update(on_update)
    prompts = [{"raw": [update, pair, write], "wait": 1, "text": " end"}]
    with anyio.fail_after(20):
        async with v1_requests_agent(tmp_path, builder, prompts) as (client, conversation, log):
            response = await conversation.chat_to_completion("go")
    assert notes == ["cut \ufffd", " \U0001f600", " end"]  # the chunk decoded, the pair kept whole
    assert response.text == "cut \ufffd \U0001f600 end"
    got = answers(log)
    assert None not in got  # no -32700 with id null
    assert got["w1"]["error"]["code"] == -32602
    assert "surrogate" in got["w1"]["error"]["message"]
    assert not target.exists()  # never written with a replacement character
    assert client.rpc.bad_frames == 0


# -- 11a. requests that wait -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_pile_of_wait_for_exit_requests_does_not_stop_the_reader(tmp_path: Path) -> None:
    """1 300 ``terminal/wait_for_exit`` on a command that runs for a minute, then the prompt's answer: read at
    once (before: the reader waited for a free handler slot until the client block was left)."""
    create = {"sessionId": "s1", "command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    wait = {"sessionId": "s1", "terminalId": "$terminal"}
    read = {"sessionId": "s1", "path": str(tmp_path / "note.txt")}
    (tmp_path / "note.txt").write_text("still served\n")
    prompts = [
        {"send": [{"method": "terminal/create", "params": create}], "wait": 1},
        {
            "send": [
                {"method": "terminal/wait_for_exit", "params": wait, "count": 1300},
                {"method": "fs/read_text_file", "params": read},
            ],
            "wait": 1,  # the file read's answer: other requests still get a handler
            "text": "answered",
        },
    ]
    builder = ClientBuilder("test", "1").with_terminals(kill_grace=0.2).with_file_system(write=False)
    async with v1_requests_agent(tmp_path, builder, prompts) as (_client, conversation, log):
        await conversation.chat_to_completion("start a command")
        with anyio.fail_after(15):
            response = await conversation.chat_to_completion("wait for it 1 300 times")
        assert response.text == "answered"
        assert answers(log)["h1301"]["result"] == {"content": "still served\n"}
    # Leaving the block ended the command: every wait was answered.
    got = answers(log)
    assert all(f"h{n}" in got for n in range(1, 1301))


# -- 11b. line numbers far past the end -------------------------------------------------------------------------


def test_line_selection_costs_one_scan_whatever_the_numbers() -> None:
    text = "\n" * (16 << 20)
    started = time.process_time()
    assert select_lines(text, 2**32, None) == ""
    assert select_lines(text, 1, 2**32) == text
    assert select_lines(text, (16 << 20) - 1, 2**32) == "\n\n"
    assert time.process_time() - started < 1.0  # before: 2.6 s of CPU for the first call alone


@pytest.mark.anyio
async def test_reads_far_past_the_end_of_a_file_of_newlines_are_cheap(tmp_path: Path) -> None:
    """8 concurrent ``fs/read_text_file`` with ``line = 2**32`` on a file of 16 Mi newlines (before: 2.6 s of CPU
    each alone, 22 s each for 8 at once, all of it holding the interpreter the event loop runs on)."""
    path = tmp_path / "newlines.txt"
    path.write_bytes(b"\n" * (16 << 20))
    read = {"sessionId": "s1", "path": str(path), "line": 2**32, "limit": 2**32}
    prompts = [{"send": [{"method": "fs/read_text_file", "params": read, "count": 8}], "wait": 8}]
    builder = ClientBuilder("test", "1").with_file_system(write=False)
    async with v1_requests_agent(tmp_path, builder, prompts) as (_client, conversation, log):
        cpu = time.process_time()
        with anyio.fail_after(60):
            await conversation.chat_to_completion("read far")
        cpu = time.process_time() - cpu
    got = answers(log)
    assert [got[f"h{n}"]["result"] for n in range(8)] == [{"content": ""}] * 8
    assert cpu < 5.0  # CPU time of this process (reading 8 x 16 MiB and decoding it), not wall time


# -- 11c. a prompt over the frame limit -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_prompt_over_the_frame_limit_is_refused_before_sending(tmp_path: Path) -> None:
    builder = ClientBuilder("test", "1")
    prompts = [{"text": "small one answered"}]
    with anyio.fail_after(20):
        async with v1_requests_agent(tmp_path, builder, prompts, max_frame_size=MiB) as (_client, conversation, log):
            with pytest.raises(MessageTooLarge) as raised:
                conversation.chat("x" * (2 * MiB))
            assert raised.value.outgoing and raised.value.limit == MiB
            assert f"exceeds the {MiB}-byte frame limit; it was not sent" in str(raised.value)
            with pytest.raises(MessageTooLarge):
                await conversation.session.send_prompt("y" * (2 * MiB))
            response = await conversation.chat_to_completion("small")  # the connection and the session go on
            assert response.text == "small one answered"
            assert [m.text for m in conversation.messages() if m.role == "user"] == ["small"]
    prompts_sent = [e["msg"] for e in agent_read(log) if e.get("msg", {}).get("method") == "session/prompt"]
    assert len(prompts_sent) == 1


def test_cli_chat_prints_the_frame_limit_for_a_huge_stdin_line(tmp_path: Path) -> None:
    """``acp-session chat`` with a 34 MB line on stdin (the reference agent): the error names the limit, at once
    (before: it hung silently for minutes)."""
    line = b"x" * 34_000_000 + b"\n"
    # The frame holds the session id, whose length depends on how many sessions the agent's store already has:
    # a store of this test's own (its first session: sess-1) keeps the count exact wherever the CLI was used before.
    env = {**os.environ, "NO_COLOR": "1", "ACP_REFERENCE_AGENT_STORE": str(tmp_path / "store.json")}
    done = subprocess.run(
        [sys.executable, "-m", "acp_session", "chat"],
        input=line,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "the prompt is too large to send: 34000119 bytes, over the 33554432-byte frame limit" in err
    assert "Traceback" not in err
