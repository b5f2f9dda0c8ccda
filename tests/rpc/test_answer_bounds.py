"""The rpc layer's bounds on answering the peer (issue 26): the answer budget, requests that only wait, repaired
text refused where it must be exact, and outgoing frames over the limit."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from acp_session.errors import MessageTooLarge
from acp_session.rpc import Connection
from acp_session.rpc.budget import AnswerBudget, answer_bound, reserve_answer
from acp_session.rpc.core import RequestReceived, RpcCore
from acp_session.rpc.repair import repair_lone_surrogates
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

pytestmark = pytest.mark.anyio


async def test_budget_grants_in_order_and_a_single_oversized_reservation_alone() -> None:
    budget = AnswerBudget(100)
    order: list[str] = []

    async def take(name: str, size: int, hold: anyio.Event) -> None:
        await budget.acquire(size)
        order.append(name)
        await hold.wait()
        budget.adjust(-size)

    holds = {name: anyio.Event() for name in "abcd"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(take, "a", 60, holds["a"])
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(take, "b", 500, holds["b"])  # larger than the whole budget: waits until nothing is held
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(take, "c", 10, holds["c"])  # would fit, but does not overtake b
        await anyio.wait_all_tasks_blocked()
        assert order == ["a"] and budget.used == 60
        holds["a"].set()
        await anyio.wait_all_tasks_blocked()
        assert order == ["a", "b"] and budget.used == 500
        holds["b"].set()
        await anyio.wait_all_tasks_blocked()
        assert order == ["a", "b", "c"]
        tg.start_soon(take, "d", 90, holds["d"])  # 10 + 90 fits
        await anyio.wait_all_tasks_blocked()
        assert order == ["a", "b", "c", "d"] and budget.used == 100
        holds["c"].set()
        holds["d"].set()
    assert budget.used == 0


async def test_a_cancelled_wait_gives_its_place_to_the_next() -> None:
    budget = AnswerBudget(100)
    await budget.acquire(80)
    granted = anyio.Event()

    async def small() -> None:
        await budget.acquire(10)
        granted.set()

    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as big:
            tg.start_soon(small)
            await anyio.wait_all_tasks_blocked()
            big.cancel()
        with anyio.move_on_after(0.05) as waited:
            await budget.acquire(50)  # blocks the small one behind it ...
        assert waited.cancelled_caught
        with anyio.fail_after(1):
            await granted.wait()  # ... until its wait is withdrawn
    assert budget.used == 90


async def test_reserve_answer_outside_a_request_handler_does_nothing() -> None:
    await reserve_answer(10**12)  # no connection, no budget: returns at once


async def test_large_answers_wait_for_room_and_all_arrive() -> None:
    """Five answers of 600 bytes with a budget of 1 000: one is built at a time, every one is answered."""
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    peak = 0
    async with Connection(ours, answer_budget=1000) as conn:

        async def big(params: Any) -> str:
            nonlocal peak
            await reserve_answer(answer_bound(100))  # 1 112 bytes: more than the budget, so each goes alone
            peak = max(peak, conn.answer_budget.used)
            await anyio.sleep(0.01)
            return "x" * 100

        conn.on_request("big", big)
        for n in range(5):
            await raw.send({"jsonrpc": "2.0", "id": n, "method": "big", "params": {}})
        got = sorted([(await raw.recv())["id"] for _ in range(5)])
        assert got == [0, 1, 2, 3, 4]
        assert peak == answer_bound(100)  # never two at once
        with anyio.fail_after(1):
            while conn.answer_budget.used:
                await anyio.sleep(0.01)


async def test_waiting_requests_hold_no_slot() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    forever = anyio.Event()
    async with Connection(ours, max_concurrent_requests=2, max_parked_requests=20) as conn:

        async def wait(params: Any) -> str:
            await forever.wait()
            return "exited"

        conn.on_request("wait", wait, waits=True)
        conn.on_request("echo", lambda params: params)
        for n in range(20):
            await raw.send({"jsonrpc": "2.0", "id": n, "method": "wait", "params": {}})
        await raw.send({"jsonrpc": "2.0", "id": "e", "method": "echo", "params": {"still": "read"}})
        assert await raw.recv() == {"jsonrpc": "2.0", "id": "e", "result": {"still": "read"}}
        forever.set()
        assert sorted([(await raw.recv())["id"] for _ in range(20)]) == list(range(20))


LONE = b'{"jsonrpc":"2.0","id":7,"method":"write","params":{"content":"half \\ud83d"}}'


async def test_repaired_text_is_refused_where_it_must_be_exact_and_replaced_elsewhere() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    seen: list[Any] = []
    async with Connection(ours) as conn:
        conn.on_request("write", seen.append, lossless=True)
        conn.on_request("show", lambda params: seen.append(params) or "shown")
        await raw.send(LONE)
        reply = await raw.recv()
        assert reply["id"] == 7 and reply["error"]["code"] == -32602
        await raw.send(LONE.replace(b'"write"', b'"show"'))
        assert (await raw.recv())["result"] == "shown"
    assert seen == [{"content": "half \ufffd"}]


def test_repair_touches_only_lone_escapes() -> None:
    assert repair_lone_surrogates(rb'"\ud83d\ude00"') is None  # a pair
    assert repair_lone_surrogates(rb'"\\ud83d"') is None  # an escaped backslash, then text
    assert repair_lone_surrogates(rb'"plain"') is None
    assert repair_lone_surrogates(rb'"a\uD83Db\uDE00"') == rb'"a\ufffdb\ufffd"'
    assert repair_lone_surrogates(rb'"\\\ud83d"') == rb'"\\\ufffd"'  # backslash, then a real lone escape
    fixed = repair_lone_surrogates(rb'"\ude00\ud83d\ude00\ud83d"')
    assert fixed is not None and json.loads(fixed) == "\ufffd\U0001f600\ufffd"


def test_core_flags_a_repaired_request_and_delivers_a_repaired_notification() -> None:
    core: RpcCore[Any] = RpcCore()
    event = core.receive(LONE)
    assert isinstance(event, RequestReceived) and event.lossy
    assert core.receive(LONE.replace(b'"id":7,', b"")) is not None  # a notification: delivered, not -32700
    events = list(core.receive_block([LONE.replace(b'"id":7', b'"id":8'), b'{"jsonrpc":"2.0","id":9,"method":"x"}']))
    assert [type(e).__name__ for e in events] == ["RequestReceived", "RequestReceived"]
    assert [e.lossy for e in events] == [True, False]


async def test_outgoing_frames_over_the_limit_are_refused_and_nothing_is_sent() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    async with Connection(ours, max_frame_size=1024) as conn:
        with pytest.raises(MessageTooLarge) as raised:
            conn.request("big", {"text": "x" * 2000})
        assert raised.value.outgoing and raised.value.limit == 1024 and raised.value.size > 2000
        with pytest.raises(MessageTooLarge):
            await conn.notify("big", {"text": "x" * 2000})
        small = conn.request("small", {})
        message = await raw.recv()
        assert message["method"] == "small"
        await raw.send({"jsonrpc": "2.0", "id": message["id"], "result": "ok"})
        assert await small == "ok"
