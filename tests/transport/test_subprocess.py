"""Real subprocess peers over real pipes: tiny Python scripts speaking raw JSON lines."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

from acp_session.errors import ConnectionClosed, RequestCancelled
from acp_session.rpc import Connection
from acp_session.rpc.connection import MAX_BUSY_POLL
from acp_session.transport import stdio_agent
from tests.helpers.raw_end import helper

pytestmark = pytest.mark.anyio


async def test_request_roundtrip_and_notifications_in_order() -> None:
    ticks: list[int] = []
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        conn.on_notification("tick", lambda p: ticks.append(p["n"]))
        assert await conn.request("echo", {"hello": "wörld"}) == {"hello": "wörld"}
        assert await conn.request("burst", {"count": 500}) == {"sent": 500}
        assert ticks == list(range(500))
    assert agent.returncode == 0  # closing stdin let it exit cleanly


async def test_agent_calls_the_client_on_the_same_connection() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:

        async def permission(params: dict[str, str]) -> dict[str, str]:
            await anyio.sleep(0.01)
            return {"outcome": params["option"]}

        conn.on_request("session/request_permission", permission)
        result = await conn.request("ask", {"method": "session/request_permission", "params": {"option": "allow"}})
        assert result == {"client_said": {"outcome": "allow"}}


async def test_cancel_over_pipe_gets_request_cancelled_acp2_001() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        handle = conn.request("sleep", {"seconds": 30})
        await anyio.sleep(0.05)
        handle.cancel()
        with anyio.fail_after(2), pytest.raises(RequestCancelled):
            await handle
        assert await conn.request("echo", {"still": "alive"}) == {"still": "alive"}


async def test_cancel_race_result_first_then_cancel_acp2_002() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        handle = conn.request("sleep", {"seconds": 0.01})
        await anyio.sleep(0.2)
        handle.cancel()  # the answer is already in: nothing is sent, the result stands
        assert await handle == {"slept": True}


async def test_agent_death_fails_pending_with_exit_code_and_stderr() -> None:
    lines: list[str] = []
    async with stdio_agent(helper("raw_agent.py"), on_stderr=lines.append) as agent, Connection(agent) as conn:
        waiting = conn.request("sleep", {"seconds": 30})
        conn.request("crash", {"code": 3, "stderr": ["fatal: model unavailable"]})
        with anyio.fail_after(1), pytest.raises(ConnectionClosed) as info:
            await waiting
        assert info.value.exit_code == 3
        assert info.value.stderr_tail == ("fatal: model unavailable",)
        assert lines == ["fatal: model unavailable"]


async def test_pending_fail_within_100ms_of_stream_end() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        waiting = conn.request("ignore")
        await anyio.sleep(0.05)
        start = anyio.current_time()
        agent.process.kill()
        with pytest.raises(ConnectionClosed) as info:
            await waiting
        assert anyio.current_time() - start < 0.1
        assert info.value.exit_code is not None and info.value.exit_code != 0


async def test_client_answers_bad_frames_over_the_pipe() -> None:
    lines = [
        "{broken",
        "[]",
        json.dumps({"jsonrpc": "2.0", "id": None, "method": "x"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "nothing/here"}),
        json.dumps({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 77}}),
    ]
    got: list[str] = []
    argv = [*helper("replay_peer.py"), json.dumps(lines)]
    async with stdio_agent(argv, on_stderr=got.append) as agent, Connection(agent):
        with anyio.fail_after(3):
            while len(got) < 4:
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
    replies = [json.loads(line[4:]) for line in got if line.startswith("GOT ")]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (4, -32601),
    ]  # and nothing for the cancel of an unknown id (ACP2-002)


async def test_shutdown_escalates_to_kill_for_a_stubborn_agent() -> None:
    argv = [*helper("raw_agent.py"), "--stubborn"]
    start = anyio.current_time()
    async with stdio_agent(argv, grace_period=0.1, terminate_timeout=0.1) as agent, Connection(agent) as conn:
        assert await conn.request("echo", {}) == {}
    assert anyio.current_time() - start < 3
    assert agent.returncode is not None and agent.returncode != 0


async def test_stdio_server_agent_built_on_the_rpc_layer() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    stderr: list[str] = []
    async with (
        stdio_agent(helper("stdio_echo_agent.py"), env=env, on_stderr=stderr.append) as agent,
        Connection(agent) as conn,
    ):
        conn.on_request("client/hello", lambda p: {"hi": p["name"]})
        assert await conn.request("echo", {"a": [1, 2]}) == {"a": [1, 2]}
        assert await conn.request("ask", {"method": "client/hello", "params": {"name": "x"}}) == {"hi": "x"}
    assert agent.returncode == 0
    assert any("stray print" in line for line in stderr)


@pytest.mark.parametrize("busy_poll", [0, MAX_BUSY_POLL], ids=["sleep", "busy-poll"])
async def test_answers_arriving_alone_while_the_reader_waits_follow_every_rule(busy_poll: float) -> None:
    """On asyncio a lone response is settled inside the pipe's readiness callback, or by the caller itself
    while it busy-polls; whatever is not a plain answer (unknown id, malformed, a request, a result holding a
    "method" key) still gets the same handling. The lines come 2 ms apart, inside the polling window."""
    errors: list[Exception] = []
    options = {"on_frame_error": errors.append, "busy_poll": busy_poll}
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent, **options) as conn:
        seen: list[int] = []
        conn.on_notification("tick", lambda p: seen.append(p["n"]))
        conn.on_request("ping", lambda p: {"pong": p["n"]})
        for n in range(20):
            assert await conn.request("echo", {"n": n}) == {"n": n}
        assert await conn.request("echo", {"method": "in a result"}) == {"method": "in a result"}
        lines = [
            '{"jsonrpc":"2.0","id":9999,"result":1}',  # unknown id: dropped
            '{"jsonrpc":"2.0","id":9998,"result":1,"error":{"code":1,"message":"x"}}',  # malformed: -32600
            '{"jsonrpc":"2.0","method":"tick","params":{"n":7}}',
            '{"jsonrpc":"2.0",\n"id":9997,"result":1}',  # one write, two lines: two malformed frames
        ]
        assert await conn.request("drip", {"lines": lines, "gap": 0.002}) == "dripped"
        assert seen == [7]
        assert [type(e).__name__ for e in errors] == ["InvalidRequest", "ParseError", "ParseError"]
        assert await conn.request("echo", {"after": True}) == {"after": True}


async def test_a_request_larger_than_the_pipe_is_written_whole() -> None:
    big = "x" * (3 << 20)  # a direct write takes what fits; the rest must follow in order
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        first = conn.request("echo", {"big": big})
        second = conn.request("echo", {"small": 1})
        assert await first == {"big": big}
        assert await second == {"small": 1}


async def test_agent_death_while_the_caller_busy_polls_fails_the_request() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent, busy_poll=MAX_BUSY_POLL) as conn:
        with anyio.fail_after(2), pytest.raises(ConnectionClosed) as caught:
            await conn.request("crash", {"code": 3})
    assert caught.value.exit_code == 3


@pytest.mark.parametrize("busy_poll", [-1e-6, MAX_BUSY_POLL * 2])
def test_busy_poll_is_bounded(busy_poll: float) -> None:
    with pytest.raises(ValueError, match="busy_poll"):
        Connection(None, busy_poll=busy_poll)  # type: ignore[arg-type]
