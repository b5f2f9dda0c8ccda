"""The one-pass notification path gives exactly what the generic path gives, and falls back for everything else."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from acp_session import codec
from acp_session.errors import AcpError
from acp_session.rpc import Connection
from acp_session.schema import types as t
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

pytestmark = pytest.mark.anyio


def chunk(text: str, message_id: str = "m1") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": message_id,
                "content": {"type": "text", "text": text},
            },
        },
    }


def block(*texts: str) -> bytes:
    """Chunk notifications for ``texts``, one per line, to be sent in one write."""
    return b"".join(json.dumps(chunk(text)).encode() + b"\n" for text in texts)


@pytest.fixture
async def typed_pair() -> AsyncIterator[tuple[Connection, RawEnd, list[Any], list[AcpError]]]:
    ours, theirs = memory_pair()
    received: list[Any] = []
    errors: list[AcpError] = []
    async with Connection(ours, on_frame_error=errors.append) as conn:
        conn.on_notification("session/update", received.append, codec.decoder(t.UpdateSessionNotification))
        yield conn, RawEnd(theirs), received, errors


async def wait_for(received: list[Any], count: int) -> None:
    with anyio.fail_after(3):
        while len(received) < count:
            await anyio.sleep(0.005)


async def test_a_block_of_typed_notifications_arrives_typed_and_in_order(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    texts = [f"part {i} ✓ ünïcode" for i in range(200)]
    await raw.send(block(*texts))
    await wait_for(received, 200)
    assert all(isinstance(n, t.UpdateSessionNotification) for n in received)
    assert [n.update.content.text for n in received] == texts


async def test_unknown_variant_takes_the_lenient_path_in_order(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    future = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s1", "update": {"sessionUpdate": "_x/y"}},
    }
    await raw.send(b"\n".join(json.dumps(m).encode() for m in (chunk("a"), future, chunk("b"))) + b"\n")
    await wait_for(received, 3)
    assert isinstance(received[1].update, t.UnknownSessionUpdate)
    assert [type(n.update) for n in received] == [t.AgentMessageChunk, t.UnknownSessionUpdate, t.AgentMessageChunk]


async def test_typed_method_with_an_id_is_a_request_not_a_notification(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    await raw.send({**chunk("x"), "id": 7})
    reply = await raw.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32601
    assert received == []


async def test_wrong_jsonrpc_version_is_rejected_not_delivered(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    await raw.send({**chunk("x"), "jsonrpc": "1.0"})
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    await raw.send(chunk("after"))
    await wait_for(received, 1)
    assert received[0].update.content.text == "after"


async def test_two_objects_on_one_line_is_a_parse_error(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    line = json.dumps(chunk("a")) + json.dumps(chunk("b"))
    await raw.send(line.encode() + b"\n" + json.dumps(chunk("c")).encode() + b"\n")
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    await wait_for(received, 1)
    assert [n.update.content.text for n in received] == ["c"]


async def test_bad_params_are_reported_and_the_stream_continues(typed_pair: Any) -> None:
    _conn, raw, received, _errors = typed_pair
    bad = chunk("x")
    bad["params"]["update"]["content"]["text"] = 5
    await raw.send(b"\n".join(json.dumps(m).encode() for m in (bad, chunk("ok"))) + b"\n")
    await wait_for(received, 1)
    assert [n.update.content.text for n in received] == ["ok"]
    await raw.expect_silence()  # a notification is never answered, even with bad params


async def test_blank_and_whitespace_lines_beside_a_double_object_line_in_one_block(typed_pair: Any) -> None:
    """A blank line and a whitespace-only line cannot hide a line holding two objects: that line still gets
    -32700, the others are delivered in order."""
    _conn, raw, received, _ = typed_pair
    double = json.dumps(chunk("x")) + json.dumps(chunk("y"))
    lines = [json.dumps(chunk("a")), "", "   ", double, json.dumps(chunk("c"))]
    await raw.send("\n".join(lines).encode() + b"\n")
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    await wait_for(received, 2)
    assert [n.update.content.text for n in received] == ["a", "c"]


async def test_a_leading_space_line_is_delivered_by_the_per_frame_path(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    lines = [json.dumps(chunk("a")), "  " + json.dumps(chunk("b")), json.dumps(chunk("c"))]
    await raw.send("\n".join(lines).encode() + b"\n")
    await wait_for(received, 3)
    assert [n.update.content.text for n in received] == ["a", "b", "c"]
    await raw.expect_silence()


async def test_a_frame_split_by_a_newline_inside_a_run_is_two_parse_errors(typed_pair: Any) -> None:
    """Each line is decoded on its own: the halves of a notification cut by a newline are never joined
    back into one (they are two bad frames, -32700 each), and the frames around them arrive in order."""
    _conn, raw, received, errors = typed_pair
    whole = json.dumps(chunk("split"), separators=(",", ":"))
    cut = whole.index(',"params"') + 1
    lines = [json.dumps(chunk("a")), whole[:cut], whole[cut:], json.dumps(chunk("c"))]
    await raw.send("\n".join(lines).encode() + b"\n")
    first, second = await raw.recv(), await raw.recv()
    assert first["error"]["code"] == second["error"]["code"] == -32700
    await wait_for(received, 2)
    assert [n.update.content.text for n in received] == ["a", "c"]
    assert len(errors) == 2


async def test_invalid_utf8_inside_a_run_of_non_ascii_frames_is_a_parse_error(typed_pair: Any) -> None:
    _conn, raw, received, _ = typed_pair
    good = [json.dumps(chunk(f"é{i}"), ensure_ascii=False).encode() for i in range(3)]
    bad = json.dumps(chunk("BAD")).encode().replace(b"BAD", b"\xff\xfe")
    await raw.send(b"\n".join([good[0], good[1], bad, good[2]]) + b"\n")
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    await wait_for(received, 3)
    assert [n.update.content.text for n in received] == ["é0", "é1", "é2"]


def without_method(text: str) -> dict[str, Any]:
    message = chunk(text)
    del message["method"]
    return message


@pytest.mark.parametrize("count", [2, 3, 8], ids=["short run", "run of frames", "block"])
async def test_a_frame_without_method_is_an_invalid_request_even_with_one_typed_method(
    typed_pair: Any, count: int
) -> None:
    """A frame with params that fit the one typed method but no ``method`` (nor ``id``) is no notification: -32600,
    id null, and never delivered, whether it comes after a notification in a short run (decoded frame by frame)
    or inside a read of many lines (decoded as one block)."""
    _conn, raw, received, _ = typed_pair
    texts = [f"t{i}" for i in range(count)]
    messages: list[Any] = [chunk(text) for text in texts]
    messages.insert(1, without_method("stray"))
    await raw.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    await wait_for(received, count)
    assert [n.update.content.text for n in received] == texts
    await raw.expect_silence()


@pytest.fixture
async def batch_pair() -> AsyncIterator[tuple[Connection, RawEnd, list[Any]]]:
    """``session/update`` with a batch handler; ``other`` without one: the log shows how each was delivered."""
    ours, theirs = memory_pair()
    log: list[Any] = []

    def batch(notes: list[t.UpdateSessionNotification]) -> None:
        log.append(("batch", [n.update.content.text for n in notes]))  # type: ignore[union-attr]

    async with Connection(ours) as conn:
        conn.on_notification(
            "session/update",
            lambda n: log.append(("one", n.update.content.text)),
            codec.decoder(t.UpdateSessionNotification),
            batch=batch,
        )
        conn.on_notification("other", lambda p: log.append(("other", p.text)), codec.decoder(t.TextContent))
        yield conn, RawEnd(theirs), log


def other(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "other", "params": {"type": "text", "text": text}}


def flat(log: list[Any]) -> list[str]:
    return [text for kind, item in log if kind != "other" for text in (item if kind == "batch" else [item])]


async def test_a_frame_without_method_is_an_invalid_request_with_two_typed_methods(batch_pair: Any) -> None:
    _conn, raw, log = batch_pair
    messages = [chunk("a"), other("x"), without_method("stray"), chunk("b"), chunk("c"), chunk("d")]
    await raw.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    reply = await raw.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    await wait_for(log, 3)
    with anyio.fail_after(3):
        while sum(len(i) if k == "batch" else 1 for k, i in log) < 5:
            await anyio.sleep(0.005)
    assert flat(log) == ["a", "b", "c", "d"] and ("other", "x") in log


async def test_a_batch_handler_gets_consecutive_runs_in_arrival_order(batch_pair: Any) -> None:
    _conn, raw, log = batch_pair
    messages = [chunk("a"), chunk("b"), other("x"), chunk("c"), chunk("d"), chunk("e")]
    await raw.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    await wait_for(log, 3)
    with anyio.fail_after(3):
        while sum(len(i) if k == "batch" else 1 for k, i in log) < 6:
            await anyio.sleep(0.005)
    assert log == [("batch", ["a", "b"]), ("other", "x"), ("batch", ["c", "d", "e"])]


async def test_a_lone_notification_still_takes_the_single_handler(batch_pair: Any) -> None:
    _conn, raw, log = batch_pair
    await raw.send(chunk("alone"))
    await wait_for(log, 1)
    assert log == [("one", "alone")]


async def test_a_failing_batch_handler_is_logged_and_the_stream_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    ours, theirs = memory_pair()
    seen: list[str] = []

    def batch(notes: list[t.UpdateSessionNotification]) -> None:
        texts = [n.update.content.text for n in notes]  # type: ignore[union-attr]
        if "boom" in texts:
            raise RuntimeError("boom")
        seen.extend(texts)

    async with Connection(ours) as conn:
        conn.on_notification(
            "session/update", lambda n: seen.append(n.update.content.text), t.UpdateSessionNotification, batch=batch
        )
        raw = RawEnd(theirs)
        await raw.send(block("boom", "lost?"))
        await anyio.sleep(0.05)
        await raw.send(block("next", "one"))
        await wait_for(seen, 2)
    assert seen == ["next", "one"]
    assert "batch notification handler for 'session/update' failed" in caplog.text


async def test_an_awaitable_from_a_batch_handler_finishes_before_later_notifications() -> None:
    ours, theirs = memory_pair()
    order: list[str] = []
    release = anyio.Event()

    async def slow(texts: list[str]) -> None:
        await release.wait()
        order.extend(texts)

    def batch(notes: list[t.UpdateSessionNotification]) -> Any:
        return slow([n.update.content.text for n in notes])  # type: ignore[union-attr]

    async with Connection(ours) as conn:
        conn.on_notification(
            "session/update", lambda n: order.append(n.update.content.text), t.UpdateSessionNotification, batch=batch
        )
        raw = RawEnd(theirs)
        await raw.send(block("a", "b"))
        await anyio.sleep(0.05)
        await raw.send(chunk("c"))
        await anyio.sleep(0.05)
        assert order == []
        release.set()
        await wait_for(order, 3)
    assert order == ["a", "b", "c"]
