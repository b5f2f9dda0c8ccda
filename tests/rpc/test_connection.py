"""Connection driver over memory_pair(): one side is ours, the other a raw JSON-line peer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest

from acp_session.errors import (
    AcpError,
    ConnectionClosed,
    InvalidResponse,
    MessageTooLarge,
    RequestCancelled,
    RequestTimeout,
    ResourceNotFound,
)
from acp_session.rpc import Connection
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: int
    label: str = ""


class Wrapper(msgspec.Struct):
    update: Point


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Connection, RawEnd, list[AcpError]]]:
    ours, theirs = memory_pair()
    frame_errors: list[AcpError] = []
    async with Connection(ours, max_frame_size=1024, on_frame_error=frame_errors.append) as conn:
        yield conn, RawEnd(theirs), frame_errors


async def test_request_roundtrip_typed_and_ids_increase_acp2_006(pair: Any) -> None:
    conn, raw, _ = pair
    first = conn.request("echo", {"x": 1}, decode=msgspec.json.Decoder(Point).decode)
    second = conn.request("echo", Point(2))
    m1, m2 = await raw.recv(), await raw.recv()
    assert (m1["id"], m2["id"]) == (first.id, second.id) and first.id != second.id
    assert m2 == {"jsonrpc": "2.0", "id": second.id, "method": "echo", "params": {"x": 2, "label": ""}}
    await raw.send({"jsonrpc": "2.0", "id": m2["id"], "result": {"x": 2}})
    await raw.send({"jsonrpc": "2.0", "id": m1["id"], "result": {"x": 1, "label": "a"}})
    assert await first == Point(1, "a")
    assert await second == {"x": 2}
    assert await first == Point(1, "a")  # awaiting again gives the same answer


async def test_error_response_raises_subclass(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("session/load", {})
    msg = await raw.recv()
    await raw.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32002, "message": "no", "data": {"s": 1}}})
    with pytest.raises(ResourceNotFound) as info:
        await handle
    assert info.value.data == {"s": 1}


async def test_result_that_does_not_decode_raises_invalid_response(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("m", None, decode=msgspec.json.Decoder(Point).decode)
    await raw.send({"jsonrpc": "2.0", "id": (await raw.recv())["id"], "result": {"x": "no"}})
    with pytest.raises(InvalidResponse, match=r"\$\.x"):
        await handle


@pytest.mark.parametrize("rid", [7, "req-7"])
async def test_incoming_request_answered_with_same_id_acp2_005(pair: Any, rid: int | str) -> None:
    conn, raw, _ = pair
    conn.on_request("add", lambda p: {"sum": p.x + 1}, msgspec.json.Decoder(Point).decode)
    await raw.send({"jsonrpc": "2.0", "id": rid, "method": "add", "params": {"x": 41}})
    assert await raw.recv() == {"jsonrpc": "2.0", "id": rid, "result": {"sum": 42}}


async def test_unknown_method_gets_method_not_found(pair: Any) -> None:
    _, raw, _ = pair
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "nope/nothing"})
    reply = await raw.recv()
    assert reply["id"] == 1 and reply["error"]["code"] == -32601


async def test_bad_params_get_invalid_params_with_field_path(pair: Any) -> None:
    conn, raw, _ = pair
    conn.on_request("upd", lambda p: None, msgspec.json.Decoder(Wrapper).decode)
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "upd", "params": {"update": {"x": "text"}}})
    reply = await raw.recv()
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["path"] == "$.update.x"


async def test_handler_exception_gives_generic_internal_error_without_text(pair: Any) -> None:
    conn, raw, _ = pair

    async def broken(_: Any) -> None:
        raise ValueError("secret detail /home/user/key")

    conn.on_request("broken", broken)
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "broken", "params": {}})
    frame = await raw.recv_frame()
    assert b"secret" not in frame and b"Traceback" not in frame and b"ValueError" not in frame
    assert msgspec.json.decode(frame)["error"] == {"code": -32603, "message": "Internal error"}


async def test_handler_raising_rpc_error_sends_it(pair: Any) -> None:
    conn, raw, _ = pair

    def missing(_: Any) -> None:
        raise ResourceNotFound(message="Session not found", data={"sessionId": "s1"})

    conn.on_request("load", missing)
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "load", "params": {}})
    assert (await raw.recv())["error"] == {"code": -32002, "message": "Session not found", "data": {"sessionId": "s1"}}


async def test_the_incoming_request_hook_wraps_each_handling_and_changes_no_answer(pair: Any) -> None:
    """What opt-in telemetry hooks into: it sees the method and raw params, awaits the handling (decoding
    included) and passes the result or the exception on; the answers are the ones without a hook."""
    conn, raw, _ = pair
    seen: list[Any] = []

    async def around(method: str, params: msgspec.Raw | None, handling: Any) -> Any:
        seen.append((method, None if params is None else msgspec.json.decode(params)))
        try:
            result = await handling
        except BaseException as exc:
            seen.append("cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else type(exc).__name__)
            raise
        seen.append(("result", result))
        return result

    async def forever(_: Any) -> None:
        await anyio.sleep_forever()

    assert conn.incoming_request_hook is None
    conn.incoming_request_hook = around
    conn.on_request("add", lambda p: {"sum": p.x + 1}, msgspec.json.Decoder(Point).decode)
    conn.on_request("upd", lambda p: None, msgspec.json.Decoder(Wrapper).decode)
    conn.on_request("work", forever)
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "add", "params": {"x": 41}})
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"sum": 42}}
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "upd", "params": {"update": {"x": "text"}}})
    assert (await raw.recv())["error"]["data"]["path"] == "$.update.x"
    await raw.send({"jsonrpc": "2.0", "id": 3, "method": "work"})
    await anyio.sleep(0.01)
    await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 3}})
    assert (await raw.recv())["error"]["code"] == -32800
    await raw.send({"jsonrpc": "2.0", "id": 4, "method": "nope/nothing"})
    assert (await raw.recv())["error"]["code"] == -32601  # answered before any handling: not hooked
    assert seen == [
        ("add", {"x": 41}),
        ("result", {"sum": 42}),
        ("upd", {"update": {"x": "text"}}),
        "InvalidParams",
        ("work", None),
        "cancelled",
    ]
    conn.incoming_request_hook = None
    await raw.send({"jsonrpc": "2.0", "id": 5, "method": "add", "params": {"x": 1}})
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 5, "result": {"sum": 2}}
    assert len(seen) == 6


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc":"2.0","method":"x","params":{"t":"\xff"}}', -32700),
        (b"42", -32600),
        (b'{"jsonrpc":"2.0","foo":1}', -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"}', -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"x"}', -32600),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":2,"method":"x"}]', -32600),
    ],
)
async def test_bad_frames_get_one_error_with_null_id_acp2_004(pair: Any, data: bytes, code: int) -> None:
    conn, raw, frame_errors = pair
    called: list[Any] = []
    conn.on_request("x", called.append)
    await raw.send(data)
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == code
    await raw.expect_silence(0.05)  # exactly one response, even for a batch: nothing in it ran
    assert called == [] and len(frame_errors) == 1
    # the connection still works afterwards
    conn.on_request("ping", lambda _: "pong")
    await raw.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert (await raw.recv())["result"] == "pong"


async def test_oversized_frame_reported_and_connection_keeps_working(pair: Any) -> None:
    conn, raw, frame_errors = pair
    conn.on_request("ping", lambda _: "pong")
    await raw.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 5000 + b'"}}')
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 2, "result": "pong"}
    assert len(frame_errors) == 1 and isinstance(frame_errors[0], MessageTooLarge)
    assert frame_errors[0].size > 5000 and frame_errors[0].limit == 1024


async def test_response_with_unknown_id_is_dropped(pair: Any) -> None:
    conn, raw, _ = pair
    await raw.send({"jsonrpc": "2.0", "id": 999, "result": 1})
    await raw.expect_silence(0.05)
    handle = conn.request("m")
    await raw.send({"jsonrpc": "2.0", "id": (await raw.recv())["id"], "result": "fine"})
    assert await handle == "fine"


async def test_notifications_handled_in_arrival_order_mixing_sync_and_async(pair: Any) -> None:
    conn, raw, _ = pair
    seen: list[tuple[str, int]] = []
    done = anyio.Event()

    def fast(p: dict[str, int]) -> None:
        seen.append(("sync", p["n"]))

    async def slow(p: dict[str, int]) -> None:
        await anyio.sleep(0.001 * (p["n"] % 3))
        seen.append(("async", p["n"]))
        if p["n"] == 59:
            done.set()

    conn.on_notification("fast", fast)
    conn.on_notification("slow", slow)
    for n in range(60):
        await raw.send({"jsonrpc": "2.0", "method": "slow" if n % 4 == 0 or n == 59 else "fast", "params": {"n": n}})
    with anyio.fail_after(5):
        await done.wait()
    assert [n for _, n in seen] == list(range(60))


async def test_notification_handler_may_await_a_request_on_the_same_connection(pair: Any) -> None:
    conn, raw, _ = pair
    answers: list[Any] = []

    async def on_update(p: Any) -> None:
        answers.append(await conn.request("client/lookup", p))

    conn.on_notification("update", on_update)
    await raw.send({"jsonrpc": "2.0", "method": "update", "params": {"k": 1}})
    request = await raw.recv()
    assert request["method"] == "client/lookup"
    await raw.send({"jsonrpc": "2.0", "id": request["id"], "result": "found"})
    with anyio.fail_after(2):
        while not answers:
            await anyio.sleep(0.005)
    assert answers == ["found"]


async def test_slow_request_handler_does_not_block_the_reader(pair: Any) -> None:
    conn, raw, _ = pair
    release = anyio.Event()
    seen: list[int] = []

    async def wait_for_human(_: Any) -> str:
        await release.wait()
        return "allowed"

    conn.on_request("permission", wait_for_human)
    conn.on_notification("tick", lambda p: seen.append(p["n"]))
    conn.on_request("ping", lambda _: "pong")
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "permission", "params": {}})
    for n in range(3):
        await raw.send({"jsonrpc": "2.0", "method": "tick", "params": {"n": n}})
    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 2, "result": "pong"}
    assert seen == [0, 1, 2]
    release.set()
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": "allowed"}


async def test_incoming_cancel_answers_request_cancelled_acp2_001(pair: Any) -> None:
    conn, raw, _ = pair
    cancelled = anyio.Event()

    async def forever(_: Any) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    conn.on_request("work", forever)
    await raw.send({"jsonrpc": "2.0", "id": "w1", "method": "work", "params": {}})
    await anyio.sleep(0.01)
    await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "w1"}})
    reply = await raw.recv()
    assert reply["id"] == "w1" and reply["error"]["code"] == -32800
    assert cancelled.is_set()
    # a second cancel and a cancel for an unknown id are ignored: never a second response (ACP2-002)
    await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "w1"}})
    await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "nobody"}})
    await raw.expect_silence(0.05)


async def test_cancel_immediately_after_request_before_handler_started(pair: Any) -> None:
    conn, raw, _ = pair

    async def forever(_: Any) -> None:
        await anyio.sleep_forever()

    conn.on_request("work", forever)
    await raw.send(
        b'{"jsonrpc":"2.0","id":3,"method":"work","params":{}}\n'
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}\n'
    )
    reply = await raw.recv()
    assert reply["id"] == 3 and reply["error"]["code"] == -32800
    await raw.expect_silence(0.05)


async def test_cancel_after_answer_is_ignored_acp2_002(pair: Any) -> None:
    conn, raw, _ = pair
    conn.on_request("quick", lambda _: "done")
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "quick", "params": {}})
    assert (await raw.recv())["result"] == "done"
    await raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})
    await raw.expect_silence(0.05)


async def test_outgoing_cancel_sends_cancel_request_and_still_waits_acp2_001(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("session/prompt", {"p": 1})
    sent = await raw.recv()
    handle.cancel()
    handle.cancel()  # two cancels: one notification
    assert await raw.recv() == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": sent["id"]}}
    await raw.expect_silence(0.05)
    assert not handle.done
    # the peer finished anyway: we get its real result
    await raw.send({"jsonrpc": "2.0", "id": sent["id"], "result": {"stopReason": "end_turn"}})
    assert await handle == {"stopReason": "end_turn"}


async def test_outgoing_cancel_answered_with_request_cancelled(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("slow")
    sent = await raw.recv()
    handle.cancel()
    await raw.recv()
    await raw.send({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32800, "message": "Request cancelled"}})
    with pytest.raises(RequestCancelled):
        await handle


async def test_cancel_after_result_arrived_sends_nothing(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("m")
    await raw.send({"jsonrpc": "2.0", "id": (await raw.recv())["id"], "result": 1})
    with anyio.fail_after(1):
        while not handle.done:
            await anyio.sleep(0.001)
    handle.cancel()
    await raw.expect_silence(0.05)
    assert await handle == 1


async def test_timeout_raises_and_sends_cancel(pair: Any) -> None:
    conn, raw, _ = pair
    handle = conn.request("m", timeout=0.05)
    sent = await raw.recv()
    with pytest.raises(RequestTimeout):
        await handle
    assert (await raw.recv())["params"] == {"requestId": sent["id"]}
    await raw.send({"jsonrpc": "2.0", "id": sent["id"], "result": "late"})  # logged and dropped
    handle2 = conn.request("m2")
    assert (await raw.recv())["id"] != sent["id"]  # ids are never reused (ACP2-006)
    assert not handle2.done


async def test_peer_close_fails_pending_within_100ms() -> None:
    ours, theirs = memory_pair()
    async with Connection(ours) as conn:
        handles = [conn.request("m", {"i": i}) for i in range(3)]
        await anyio.sleep(0.01)
        start = anyio.current_time()
        await theirs.aclose()
        for handle in handles:
            with pytest.raises(ConnectionClosed):
                await handle
        assert anyio.current_time() - start < 0.1
        with pytest.raises(ConnectionClosed):
            conn.request("after")
        assert isinstance(await conn.wait_closed(), ConnectionClosed)


async def test_aclose_answers_in_flight_incoming_requests_with_cancelled() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    async with Connection(ours) as conn:

        async def forever(_: Any) -> None:
            await anyio.sleep_forever()

        conn.on_request("work", forever)
        await raw.send({"jsonrpc": "2.0", "id": 1, "method": "work", "params": {}})
        await anyio.sleep(0.02)
    reply = await raw.recv()
    assert reply["id"] == 1 and reply["error"]["code"] == -32800


async def test_fallback_handlers_get_method_and_raw_params(pair: Any) -> None:
    conn, raw, _ = pair
    seen: list[tuple[str, bytes]] = []
    conn.set_fallback_request_handler(lambda method, params: {"m": method, "p": msgspec.json.decode(params)})
    conn.set_fallback_notification_handler(lambda method, params: seen.append((method, params)))
    await raw.send({"jsonrpc": "2.0", "method": "_ext/note", "params": {"a": 1}})
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "_ext/ask", "params": [1, 2]})
    assert (await raw.recv())["result"] == {"m": "_ext/ask", "p": [1, 2]}
    assert seen == [("_ext/note", b'{"a": 1}')]


async def test_never_sends_a_batch(pair: Any) -> None:
    conn, raw, _ = pair
    for i in range(20):
        conn.request("m", {"i": i})
        await conn.notify("n", {"i": i})
    for _ in range(40):
        frame = await raw.recv_frame()
        assert frame.startswith(b"{")


async def test_a_request_nobody_awaits_yet_is_still_sent_at_once_and_in_order(pair: Any) -> None:
    """The writer wake for a request is deferred (its caller normally writes it when awaiting); a request
    that is not awaited must still go out promptly, before a notification queued after it."""
    conn, raw, _ = pair
    pending = conn.request("first", {"n": 1})
    await conn.notify("second", {"n": 2})
    first, second = await raw.recv(timeout=1), await raw.recv(timeout=1)
    assert (first["method"], first["id"], second["method"]) == ("first", pending.id, "second")
    later = conn.request("third")
    assert (await raw.recv(timeout=1))["id"] == later.id
    await raw.send({"jsonrpc": "2.0", "id": pending.id, "result": 1})
    await raw.send({"jsonrpc": "2.0", "id": later.id, "result": 3})
    assert await pending == 1 and await later == 3


async def test_several_waiters_on_one_request_and_a_cancelled_one(pair: Any) -> None:
    """On asyncio the first waiter waits on a bare future and later ones share a flag; cancelling any of
    them (here the first) must leave the others waiting, and awaiting again afterwards still works."""
    conn, raw, _ = pair
    handle = conn.request("slow")
    request = await raw.recv()
    results: list[Any] = []

    async def wait() -> None:
        results.append(await handle)

    with anyio.move_on_after(0.02) as scope:
        await handle  # the first waiter, cancelled
    assert scope.cancelled_caught and not handle.done
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        tg.start_soon(wait)
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.01):
            await handle  # one more, cancelled while the two others wait
        assert results == []
        await raw.send({"jsonrpc": "2.0", "id": request["id"], "result": {"n": 1}})
    assert results == [{"n": 1}, {"n": 1}]
    assert await handle == {"n": 1} and handle.done


async def test_notifications_of_encoded_params_are_the_frames_notify_writes(pair: Any) -> None:
    """``notify_encoded`` (a relay's logged updates queued at once) writes byte for byte what ``notify`` writes
    for the same params; a frame over the limit is refused before it is queued."""
    conn, raw, _ = pair
    params = [{"sessionId": "s1", "n": i, "text": 'é "q"'} for i in range(3)]
    for one in params:
        await conn.notify("session/update", one)
    await conn.notify_encoded("session/update", [msgspec.json.encode(one) for one in params])
    frames = [await raw.recv_frame() for _ in range(6)]
    assert frames[:3] == frames[3:] and msgspec.json.decode(frames[4])["params"] == params[1]
    conn.max_frame_size = 64
    with pytest.raises(MessageTooLarge):
        await conn.notify_encoded("session/update", [b'{"text":"' + b"x" * 64 + b'"}'])
