"""``on_request(..., inline=True)``: a plain handler the reader runs itself, before it reads the next message, so
what it does (registering handlers: an agent's ``initialize`` picking a protocol version) is what a request
pipelined right behind it finds (issue 50)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from acp_session.errors import InvalidParams
from acp_session.rpc import Connection
from acp_session.transport import memory_pair
from tests.helpers.raw_end import RawEnd

pytestmark = pytest.mark.anyio


def _lines(*messages: dict[str, Any]) -> bytes:
    """Several messages in one write: the reader gets them in one read, as a pipelining client sends them."""
    return b"".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n" for m in messages)


class Offer(msgspec.Struct):
    version: int


async def test_a_request_pipelined_behind_an_inline_one_finds_the_handlers_it_registered() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    async with Connection(ours) as conn:

        def initialize(offer: Offer) -> dict[str, Any]:
            conn.on_request("hello", lambda params: f"hello in version {offer.version}")
            return {"version": offer.version}

        conn.on_request("initialize", initialize, msgspec.json.Decoder(Offer).decode, inline=True)
        await raw.send(
            _lines({"id": 1, "method": "initialize", "params": {"version": 1}}, {"id": 2, "method": "hello"})
        )
        assert await raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"version": 1}}
        assert await raw.recv() == {"jsonrpc": "2.0", "id": 2, "result": "hello in version 1"}


async def test_an_inline_handler_answers_as_any_handler_does_and_keeps_its_receipt() -> None:
    ours, theirs = memory_pair()
    raw = RawEnd(theirs)
    async with Connection(ours) as conn:

        def refuse(params: Any) -> None:
            raise InvalidParams(data={"reason": "no"})

        def broken(params: Any) -> None:
            raise RuntimeError("a bug: logged, never sent")

        conn.on_request("receipt", lambda params: conn.request_receipt(), inline=True)
        conn.on_request("typed", lambda offer: offer.version, msgspec.json.Decoder(Offer).decode, inline=True)
        conn.on_request("refuse", refuse, inline=True)
        conn.on_request("broken", broken, inline=True)
        await raw.send(
            _lines(
                {"id": "a", "method": "receipt"},
                {"id": "b", "method": "receipt"},
                {"id": "c", "method": "typed", "params": {"version": "two"}},
                {"id": "d", "method": "refuse"},
                {"id": "e", "method": "broken"},
            )
        )
        answers = {m["id"]: m for m in [await raw.recv() for _ in range(5)]}
        assert answers["a"]["result"] == 0 and answers["b"]["result"] == 1
        assert answers["c"]["error"]["code"] == -32602 and answers["c"]["error"]["data"]["path"] == "$.version"
        assert answers["d"]["error"] == {"code": -32602, "message": "Invalid params", "data": {"reason": "no"}}
        assert answers["e"]["error"]["code"] == -32603 and "bug" not in json.dumps(answers["e"])


async def test_an_inline_handler_must_be_a_plain_function() -> None:
    ours, _ = memory_pair()
    async with Connection(ours) as conn:

        async def later(params: Any) -> None:
            return None

        with pytest.raises(TypeError, match="must be a plain"):
            conn.on_request("later", later, inline=True)
