"""The one-pass notification path gives exactly what the generic path gives, and falls back for everything else."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from helpers.raw_end import RawEnd

from acp_session import codec
from acp_session.errors import AcpError
from acp_session.rpc import Connection
from acp_session.schema import types as t
from acp_session.transport import memory_pair

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
    await raw.send(b"".join(json.dumps(chunk(text)).encode() + b"\n" for text in texts))
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
    """The block check counts lines starting with ``{``: a blank line and a whitespace-only line cannot hide a
    line holding two objects (that line still gets -32700, the others are delivered in order)."""
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
