"""Time limits: ``initialize`` has one by default (``InitializeTimeout``, naming the agent, with its stderr tail);
any call can have one (``RequestTimeout``, the request withdrawn, a prompt's turn cancelled too). Non-JSON
output is reported once and blocks nothing."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import ConnectionClosed, InitializeTimeout, RequestTimeout, RpcError
from acp_session.protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT

from .support import AGENTS

pytestmark = pytest.mark.anyio

QUICK: dict[str, Any] = {"grace_period": 0.3, "terminate_timeout": 0.3}


def slow_agent(**config: Any) -> list[str]:
    return [sys.executable, str(AGENTS / "slow_agent.py"), json.dumps(config)]


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


async def wait_received(log: Path, method: str, timeout: float = 5.0) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        while True:
            for message in received(log):
                if message.get("method") == method:
                    return message
            await anyio.sleep(0.01)


def rpc_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "acp_session.rpc" and r.levelno >= logging.WARNING]


def test_the_default_initialize_limit_leaves_room_for_slow_starters() -> None:
    assert 15 <= DEFAULT_INITIALIZE_TIMEOUT <= 60  # measured: up to ~8 s for gemini, opencode and copilot


@pytest.mark.skipif(shutil.which("sleep") is None, reason="needs sleep")
async def test_an_agent_that_never_answers_initialize_ends_in_the_time_limit() -> None:
    start = anyio.current_time()
    with pytest.raises(InitializeTimeout) as caught:
        async with ClientBuilder().spawn(["sleep", "600"], initialize_timeout=0.5):
            pytest.fail("connected to sleep")
    assert 0.5 <= anyio.current_time() - start < 2  # the error, then a short shutdown (sleep ignores stdin)
    error = caught.value
    assert isinstance(error, RequestTimeout) and isinstance(error, TimeoutError)
    assert (error.agent, error.timeout, error.stderr_tail) == ("sleep 600", 0.5, ())
    assert str(error) == "the agent `sleep 600` did not answer initialize within 0.5 s"


async def test_a_banner_then_silence_ends_in_the_time_limit_with_the_stderr_tail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="acp_session.rpc")
    banner = ["Welcome to Slow Agent 1.0 " + "=" * 300, "Loading plugins", "{not json"]
    stderr = [f"log line {n}" for n in range(6)] + ["waiting for a login"]
    argv = slow_agent(stdout=banner, stderr=stderr, initialize=False)
    start = anyio.current_time()
    with pytest.raises(InitializeTimeout) as caught:
        async with ClientBuilder().spawn(argv, initialize_timeout=0.5, **QUICK):
            pytest.fail("connected")
    assert anyio.current_time() - start < 3
    error = caught.value
    assert error.agent is not None and "slow_agent.py" in error.agent
    assert error.stderr_tail == tuple(stderr)
    assert str(error).endswith("within 0.5 s; last stderr lines: log line 4 | log line 5 | waiting for a login")
    # The non-JSON lines: one warning naming the agent and quoting the first line (cut short); no more.
    (warning,) = rpc_warnings(caplog)
    assert "slow_agent.py" in warning and "not JSON-RPC" in warning
    assert "'Welcome to Slow Agent 1.0 ===" in warning and "=" * 200 not in warning
    assert "Loading plugins" not in warning


async def test_a_banner_before_the_protocol_is_reported_once_and_blocks_nothing(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger="acp_session.rpc")
    argv = slow_agent(stdout=["Slow Agent 1.0", "Tip: press Ctrl-C to quit", "ready."])
    async with ClientBuilder().spawn(argv, **QUICK) as client:
        assert client.agent.info.name == "slow"
        session = await client.new_session(tmp_path)
        assert session.session_id == "s1"
        assert client.rpc.bad_frames == 3
    (warning,) = rpc_warnings(caplog)
    assert "'Slow Agent 1.0'" in warning and "further ones of this kind are counted, not logged" in warning


async def test_an_agent_dying_before_initialize_says_why() -> None:
    argv = slow_agent(stderr=["error: GEMINI_API_KEY is not set"], exit=2)
    with pytest.raises(ConnectionClosed) as caught:
        async with ClientBuilder().spawn(argv, **QUICK):
            pytest.fail("connected")
    assert caught.value.exit_code == 2
    assert caught.value.stderr_tail == ("error: GEMINI_API_KEY is not set",)
    assert "GEMINI_API_KEY is not set" in str(caught.value)


async def test_an_initialize_error_carries_the_stderr_tail() -> None:
    argv = slow_agent(stderr=["config.toml: bad syntax"], initialize={"code": -32603, "message": "Internal error"})
    with pytest.raises(RpcError) as caught:
        async with ClientBuilder().spawn(argv, **QUICK):
            pytest.fail("connected")
    assert caught.value.code == -32603
    assert caught.value.stderr_tail == ("config.toml: bad syntax",)  # type: ignore[attr-defined]


async def test_session_new_with_a_time_limit_is_withdrawn(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    async with ClientBuilder().spawn(slow_agent(hang=["session/new"], log=str(log)), **QUICK) as client:
        start = anyio.current_time()
        with pytest.raises(RequestTimeout):
            await client.new_session(tmp_path, timeout=0.2)
        assert anyio.current_time() - start < 2
        cancel = await wait_received(log, "$/cancel_request")
        new = next(m for m in received(log) if m.get("method") == "session/new")
        assert cancel["params"] == {"requestId": new["id"]}


async def test_calls_with_time_limits_are_withdrawn_and_an_expired_prompt_cancels_its_turn(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    hang = ["session/prompt", "session/set_config_option", "session/list", "session/resume", "_slow/thing"]
    async with ClientBuilder().spawn(slow_agent(hang=hang, log=str(log)), **QUICK) as client:
        session = await client.new_session(tmp_path)

        sent = session.send_prompt("hello", timeout=0.2)
        with pytest.raises(RequestTimeout):
            await sent
        assert (await wait_received(log, "session/cancel"))["params"] == {"sessionId": "s1"}
        assert session.prompts[0].status == "failed"
        assert isinstance(session.prompts[0].error, RequestTimeout)

        with pytest.raises(RequestTimeout):
            await session.set_config_option("fast", False, timeout=0.1)
        with pytest.raises(RequestTimeout):
            [info async for info in client.list_sessions(timeout=0.1)]
        with pytest.raises(RequestTimeout):
            await client.request("_slow/thing", {}, timeout=0.1)
        with pytest.raises(RequestTimeout):
            await client.resume_session("s0", tmp_path, timeout=0.1)

        later = session.send_prompt("again")  # no limit when sent; one given when awaited
        with pytest.raises(RequestTimeout):
            await later.result(timeout=0.1)
        with anyio.fail_after(5):  # one session/cancel per expired prompt
            while sum(m.get("method") == "session/cancel" for m in received(log)) < 2:
                await anyio.sleep(0.01)

        await session.close(timeout=5)  # the connection still works
        cancelled = [m["params"]["requestId"] for m in received(log) if m.get("method") == "$/cancel_request"]
        asked = [m["id"] for m in received(log) if m.get("method") in hang]
        assert sorted(cancelled) == sorted(asked)  # every expired request was withdrawn
