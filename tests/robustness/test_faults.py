"""Faults: the agent is SIGKILLed at every point of a turn; handlers raise, hang, or call back into the connection.

After a kill every pending await fails with ``ConnectionClosed`` within 100 ms, the history folded from the updates
keeps everything received before the crash, and no task is left running once the client block is left.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder
from acp_session.errors import ConnectionClosed
from acp_session.schema.types import AgentMessageChunk, RequestPermissionRequest, TextContent, UpdateSessionNotification

from .support import Observed, hostile, responses, wait_for_responses

PERMISSION = {
    "sessionId": "s1",
    "title": "run it?",
    "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
}
KILL = [{"marker": "kill"}, {"block": True}]
STREAM = [{"answer": {"messageId": "u1"}}, {"chunks": 50}]


def texts(count: int) -> str:
    return "".join(f"c{i}" for i in range(count))


def task_count() -> int:
    return len(anyio.get_running_tasks())


# name -> (agent config, what the test starts before the kill, chunks received before the kill)
SCENARIOS: dict[str, tuple[dict[str, Any], list[str], int]] = {
    "before acceptance": ({"on_prompt": [{"chunks": 5}, *KILL]}, ["prompt", "config"], 5),
    "mid-stream": ({"on_prompt": [*STREAM, *KILL]}, ["prompt", "prompt2", "config"], 50),
    "permission pending": (
        {"on_prompt": [*STREAM, {"request": "session/request_permission", "id": "perm", "params": PERMISSION}, *KILL]},
        ["prompt", "prompt2"],
        50,
    ),
    "during close": ({"on_close": [{"chunks": 7}, *KILL]}, ["close", "config"], 7),
}


@pytest.mark.anyio
@pytest.mark.parametrize("point", list(SCENARIOS))
async def test_agent_killed(point: str, tmp_path: Path) -> None:
    config, started, chunks = SCENARIOS[point]
    handler_state: list[str] = []

    async def on_permission(request: RequestPermissionRequest) -> str:
        handler_state.append("asked")
        try:
            await anyio.sleep_forever()
        finally:
            handler_state.append("cancelled")
        return "yes"

    builder = ClientBuilder("robustness", "1.0").on_request_permission(on_permission)
    before = task_count()
    outcomes: dict[str, tuple[type[BaseException] | None, float]] = {}
    killed_at = 0.0
    async with hostile(tmp_path, config, builder) as (client, session, seen, _log):

        async def record(name: str, call: Callable[[], Awaitable[Any]]) -> None:
            try:
                await call()
            except BaseException as exc:
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    raise
                outcomes[name] = (type(exc), anyio.current_time())
            else:
                outcomes[name] = (None, anyio.current_time())

        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "prompt": lambda: session.send_prompt("go").result(),
            "prompt2": lambda: session.send_prompt("and then").result(),
            "config": lambda: session.set_config_option("fast", True),
            "close": session.close,
        }
        async with anyio.create_task_group() as tg:
            for name in started:
                tg.start_soon(record, name, calls[name])
                await anyio.sleep(0.01)  # keep the order of the requests on the wire
            with anyio.fail_after(10):
                await seen.marker("kill").wait()
            if point == "permission pending":
                assert handler_state == ["asked"]
            os.kill(client.rpc.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
            killed_at = anyio.current_time()
        closed = client.rpc.close_reason
    assert closed is not None and closed.exit_code == -signal.SIGKILL
    # Every pending await failed with ConnectionClosed, promptly.
    for name in started:
        error, when = outcomes[name]
        if name == "prompt" and point in ("mid-stream", "permission pending"):
            assert error is None  # accepted before the crash
            continue
        assert error is ConnectionClosed, (name, error)
        assert when - killed_at < 0.1, (name, when - killed_at)
    # History keeps every update received before the crash.
    state = seen.states["s1"]
    message = state.message("a1")
    assert message is not None and message.text == texts(chunks)
    if point == "permission pending":
        assert handler_state == ["asked", "cancelled"]
    assert task_count() == before


@pytest.mark.anyio
async def test_handler_that_raises_is_answered_without_details(tmp_path: Path) -> None:
    def on_permission(request: RequestPermissionRequest) -> str:
        if request.title == "boom":
            raise RuntimeError("secret detail /home/user/.ssh")
        return "yes"

    def on_update(note: UpdateSessionNotification) -> None:
        seen.on_update(note)
        update = note.update
        content = update.content if isinstance(update, AgentMessageChunk) else None
        if isinstance(content, TextContent) and content.text == "c3":
            raise ValueError("update handler bug")

    seen = Observed()
    builder = ClientBuilder("robustness", "1.0").on_request_permission(on_permission).on_session_update(on_update)
    config = {
        "after_new": [
            {"request": "session/request_permission", "id": "p1", "params": {**PERMISSION, "title": "boom"}},
            {"chunks": 10},
            {"request": "session/request_permission", "id": "p2", "params": PERMISSION},
            {"marker": "end"},
        ]
    }
    async with builder.spawn(_argv(tmp_path, config), on_frame_error=seen.frame_errors.append) as client:
        session = await client.new_session("/tmp")
        with anyio.fail_after(10):
            await seen.marker("end").wait()
            got = await wait_for_responses(tmp_path / "agent.log", 2)
        assert await session.set_config_option("fast", True) == []
    by_id = {m["id"]: m for m in got}
    # A raising handler declines (issue 16): the cancelled outcome, and nothing of the exception reaches the peer.
    assert by_id["p1"] == {"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}}
    assert by_id["p2"]["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    message = seen.states["s1"].message("a1")
    assert message is not None and message.text == texts(10)  # the raising update handler lost nothing


@pytest.mark.anyio
async def test_hanging_handlers_do_not_stop_the_connection(tmp_path: Path) -> None:
    """A permission handler that never returns, and an async update handler stuck on one update: other requests
    are answered, responses still arrive, and closing answers the stuck request cancelled without hanging."""
    stuck = anyio.Event()

    async def on_permission(request: RequestPermissionRequest) -> str:
        if request.title == "hang":
            await anyio.sleep_forever()
        return "yes"

    async def on_update(note: UpdateSessionNotification) -> None:
        seen.on_update(note)
        if len(seen.notes) == 1:
            stuck.set()
            await anyio.sleep_forever()

    seen = Observed()
    builder = ClientBuilder("robustness", "1.0").on_request_permission(on_permission).on_session_update(on_update)
    config = {
        "after_new": [
            {"request": "session/request_permission", "id": "hang", "params": {**PERMISSION, "title": "hang"}},
            {"chunks": 100},
            {"request": "session/request_permission", "id": "ok", "params": PERMISSION},
        ]
    }
    log = tmp_path / "agent.log"
    with anyio.fail_after(10):
        async with builder.spawn(_argv(tmp_path, config)) as client:
            session = await client.new_session("/tmp")
            await stuck.wait()
            (ok,) = await wait_for_responses(log, 1)
            assert ok["id"] == "ok"
            assert await session.set_config_option("fast", True) == []
            assert [i.params.title for i in client.interactions.pending()] == ["hang"]
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert {m["id"]: m.get("result") for m in responses(log)} == {
        "ok": {"outcome": {"outcome": "selected", "optionId": "yes"}},
        "hang": cancelled,
    }


@pytest.mark.anyio
async def test_update_handler_awaiting_a_request_on_the_same_connection(tmp_path: Path) -> None:
    """An async update handler awaits ``set_config_option`` while the agent keeps streaming: no deadlock."""
    seen = Observed()
    answers: list[Any] = []

    async def on_update(note: UpdateSessionNotification) -> None:
        seen.on_update(note)
        update = note.update
        content = update.content if isinstance(update, AgentMessageChunk) else None
        if isinstance(content, TextContent) and content.text in ("c3", "c500"):
            answers.append(await client.session(note.session_id).set_config_option("fast", True))

    builder = ClientBuilder("robustness", "1.0").on_session_update(on_update)
    config = {"on_prompt": [*STREAM[:1], {"chunks": 1000}, {"marker": "end"}]}
    with anyio.fail_after(10):
        async with builder.spawn(_argv(tmp_path, config)) as client:
            session = await client.new_session("/tmp")
            await session.send_prompt("go")
            await seen.marker("end").wait()
    assert answers == [[], []]
    message = seen.states["s1"].message("a1")
    assert message is not None and message.text == texts(1000)


@pytest.mark.anyio
async def test_update_handler_awaiting_a_response_behind_a_long_stream(tmp_path: Path) -> None:
    seen = Observed()

    async def on_update(note: UpdateSessionNotification) -> None:
        seen.on_update(note)
        if len(seen.notes) == 1:
            await client.session(note.session_id).set_config_option("fast", True)

    builder = ClientBuilder("robustness", "1.0").on_session_update(on_update)
    # The agent reads the set_config_option request only after writing 5 000 chunks.
    config = {"on_prompt": [*STREAM[:1], {"chunks": 5000}, {"marker": "end"}]}
    with anyio.fail_after(10.0):  # a deadlock hangs forever; 10 s leaves room for a loaded machine
        async with builder.spawn(_argv(tmp_path, config)) as client:
            session = await client.new_session("/tmp")
            await session.send_prompt("go")
            await seen.marker("end").wait()


def _argv(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    from .support import agent_argv

    return agent_argv("hostile_agent.py", tmp_path / "agent.log", config)


@pytest.mark.anyio
async def test_agent_killed_with_unread_output_releases_its_pipes() -> None:
    """F5 (fixed in transport/subprocess.py): on asyncio an agent that died with output still unread left its
    stdout pipe transport open after ``aclose()`` ("unclosed transport" at loop shutdown)."""
    import sys

    from acp_session.transport import stdio_agent

    code = "import sys, time\nsys.stdout.write('x' * 5_000_000)\nsys.stdout.flush()\ntime.sleep(30)"
    with anyio.move_on_after(0.3):
        async with stdio_agent([sys.executable, "-c", code], grace_period=0.1, terminate_timeout=0.5) as agent:
            await agent.receive()
            await anyio.sleep_forever()
    assert agent.returncode is not None
    transport = getattr(getattr(agent.process, "_process", None), "_transport", None)
    if transport is not None:  # asyncio
        assert transport.is_closing()
