"""``RpcCore.receive_block``: a read's frames classified into events in wire order, without any I/O.

Typed runs come out as one ``TypedNotifications`` each, decoded frame by frame and stopping at the first frame
that does not decode; everything else is ``receive``'s event for that frame. The property test checks that a
block gives exactly what ``receive`` gives frame by frame (a typed run standing for its notifications).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session.rpc import (
    CancelRequested,
    Connection,
    FrameTooLarge,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    RpcCore,
    TypedNotifications,
)
from acp_session.rpc.handlers import Handler, json_decode
from acp_session.transport import memory_pair
from acp_session.transport.framing import Frame, InvalidUtf8Frame, OversizedFrame
from tests.helpers.raw_end import RawEnd


class Text(msgspec.Struct):
    text: str


class Count(msgspec.Struct):
    n: int


def note(method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()


def text(value: str) -> bytes:
    return note("text", {"text": value})


def count(n: int) -> bytes:
    return note("count", {"n": n})


def request(id: int, method: str = "ask") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}).encode()


def handlers(*methods: str) -> dict[str, Handler]:
    table = {
        "text": Handler.of(lambda p: None, msgspec.json.Decoder(Text).decode),
        "count": Handler.of(lambda p: None, msgspec.json.Decoder(Count).decode),
        "plain": Handler.of(lambda p: None, json_decode),  # not typed: always the generic path
        # typed, but lax: a decoder group of its own (a block of its lines needs a second msgspec decoder)
        "lax": Handler.of(lambda p: None, msgspec.json.Decoder(Count, strict=False).decode),
    }
    return {m: table[m] for m in methods}


def core_with(*methods: str) -> RpcCore[str]:
    core: RpcCore[str] = RpcCore()
    core.set_notification_handlers(handlers(*methods))
    return core


def summary(event: Any) -> Any:
    """An event as plain data, a typed run as (method, params as dicts, end)."""
    if isinstance(event, TypedNotifications):
        return ("typed", event.method, [msgspec.to_builtins(p) for p in event.params], event.end)
    if isinstance(event, NotificationReceived):
        return ("note", event.method, None if event.params is None else json.loads(bytes(event.params)))
    if isinstance(event, RequestReceived):
        return ("request", event.id, event.method)
    if isinstance(event, ResponseReceived):
        return ("response", event.id, event.slot, event.error is not None)
    if isinstance(event, ProtocolViolation):
        return ("violation", event.problem, event.frame)
    if isinstance(event, CancelRequested):
        return ("cancel", event.id)
    if isinstance(event, FrameTooLarge):
        return ("too large", event.size)
    raise AssertionError(event)


def test_a_mixed_block_in_wire_order() -> None:
    core = core_with("text", "count", "plain")
    id, _ = core.request_frame("x", None)
    core.expect(id, "slot")
    frames: list[Frame] = [
        text("a"),
        text("b"),
        count(1),
        request(7),
        text("c"),
        json.dumps({"jsonrpc": "2.0", "id": id, "result": 1}).encode(),
        b"  ",
        note("plain", {"x": 1}),
        b"{not json",
        OversizedFrame(10_000),
        InvalidUtf8Frame(b'{"a":"\xff"}'),
        count(2),
        count(3),
    ]
    assert [summary(e) for e in core.receive_block(frames)] == [
        ("typed", "text", [{"text": "a"}, {"text": "b"}], 2),
        ("typed", "count", [{"n": 1}], 3),
        ("request", 7, "ask"),
        ("typed", "text", [{"text": "c"}], 5),
        ("response", id, "slot", False),
        ("note", "plain", {"x": 1}),
        ("violation", "malformed JSON", b"{not json"),
        ("too large", 10_000),
        ("violation", "invalid UTF-8", b'{"a":"\xff"}'),
        ("typed", "count", [{"n": 2}, {"n": 3}], 13),
    ]
    assert core.is_in_flight(7) and not core.is_pending(id)


def test_a_frame_that_fails_the_typed_decode_takes_the_generic_path_and_the_run_goes_on() -> None:
    core = core_with("text")
    frames: list[Frame] = [text("a"), note("text", {"text": 5}), text("b"), text("c")]
    assert [summary(e) for e in core.receive_block(frames)] == [
        ("typed", "text", [{"text": "a"}], 1),
        ("note", "text", {"text": 5}),  # the handler's decoder reports it (-32602) as before
        ("typed", "text", [{"text": "b"}, {"text": "c"}], 4),
    ]


def test_two_messages_in_one_frame_and_bad_envelopes_are_not_typed() -> None:
    core = core_with("text")
    two = text("a") + b"\n" + text("b")
    with_id = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "text", "params": {"text": "r"}}).encode()
    extra = json.dumps({"jsonrpc": "2.0", "method": "text", "params": {"text": "x"}, "more": 1}).encode()
    frames: list[Frame] = [two, with_id, extra, text("ok")]
    events = [summary(e) for e in core.receive_block(frames)]
    assert events[0] == ("violation", "malformed JSON", two)
    assert events[1] == ("request", 1, "text")
    assert events[2] == ("note", "text", {"text": "x"})  # an unknown field: the lenient generic path's call
    assert events[3] == ("typed", "text", [{"text": "ok"}], 4)


def test_a_lone_frame_is_classified_as_in_a_block() -> None:
    for frame in [text("a"), count(1), request(3), b"", b"[]", note("plain", None), OversizedFrame(5)]:
        alone = [summary(e) for e in core_with("text", "count").receive_block([frame])]
        in_block = [summary(e) for e in core_with("text", "count").receive_block([frame, b" "])]
        assert alone == in_block, frame


def test_no_typed_method_means_no_typed_runs() -> None:
    events = [summary(e) for e in core_with("plain").receive_block([text("a"), text("b")])]
    assert events == [("note", "text", {"text": "a"}), ("note", "text", {"text": "b"})]


def test_classification_is_lazy_so_a_handler_registered_during_a_block_decodes_the_rest() -> None:
    core = core_with("text")
    frames: list[Frame] = [text("a"), count(1), count(2), request(9)]
    events = iter(core.receive_block(frames))
    assert summary(next(events)) == ("typed", "text", [{"text": "a"}], 1)
    assert not core.is_in_flight(9)  # not classified yet
    core.set_notification_handlers(handlers("text", "count"))
    assert [summary(e) for e in events] == [
        ("typed", "count", [{"n": 1}, {"n": 2}], 3),  # the frame that failed before is tried again
        ("request", 9, "ask"),
    ]


def test_a_table_change_between_runs_of_one_decode_redecodes_the_rest() -> None:
    core = core_with("text", "count")
    frames: list[Frame] = [text("a"), count(1), text("b")]
    events = iter(core.receive_block(frames))
    assert summary(next(events)) == ("typed", "text", [{"text": "a"}], 1)
    core.set_notification_handlers(handlers("text"))  # count is no longer typed
    assert [summary(e) for e in events] == [("note", "count", {"n": 1}), ("typed", "text", [{"text": "b"}], 3)]


def test_resuming_after_part_of_a_run() -> None:
    """What the driver does when a handler changes the table mid-run: ``end - len(messages) + k``."""
    core = core_with("text")
    frames: list[Frame] = [request(1), text("a"), text("b"), text("c")]
    events = iter(core.receive_block(frames))
    next(events)
    run = next(events)
    assert isinstance(run, TypedNotifications) and run.end == 4
    rest = frames[run.end - len(run.messages) + 1 :]
    assert [summary(e) for e in core.receive_block(rest)] == [("typed", "text", [{"text": "b"}, {"text": "c"}], 2)]


FRAMES = st.sampled_from(
    [
        text("a"),
        text("é"),
        count(1),
        note("text", {"text": 1}),
        note("count", None),
        note("plain", {"p": 1}),
        request(1),
        request(2, "text"),
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": None}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}}).encode(),
        b"",
        b" \n",
        b"[1]",
        b"{",
        b'{"jsonrpc":"2.0","method":"text","params":{"text":"a"}} ',
        text("a") + text("b"),
        # no method (nor id): not a notification of any method, whichever one method its params would fit
        json.dumps({"jsonrpc": "2.0", "params": {"text": "m"}}).encode(),
        json.dumps({"jsonrpc": "2.0", "params": {"n": 4}}).encode(),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAMES, max_size=12), st.sampled_from([(), ("text",), ("text", "count"), ("count", "plain")]))
def test_a_block_classifies_as_receive_does_frame_by_frame(frames: list[Frame], typed: tuple[str, ...]) -> None:
    block = core_with(*typed)
    one = core_with(*typed)
    decoders = {m: h.decode for m, h in handlers("text", "count", "plain").items()}
    got: list[Any] = []
    for event in block.receive_block(frames):
        if isinstance(event, TypedNotifications):
            got += [("note", event.method, msgspec.to_builtins(p)) for p in event.params]
        else:
            got.append(summary(event))
    expected: list[Any] = []
    for frame in frames:
        event = one.receive(frame)  # type: ignore[arg-type]
        if event is None:
            continue
        if isinstance(event, NotificationReceived) and event.method in typed and event.params is not None:
            try:
                value = decoders[event.method](event.params)
            except msgspec.DecodeError:
                expected.append(summary(event))
            else:
                expected.append(("note", event.method, msgspec.to_builtins(value)))
            continue
        if isinstance(event, ProtocolViolation):
            event.frame = frame  # type: ignore[assignment]
        expected.append(summary(event))
    assert got == expected


@pytest.mark.anyio
async def test_a_handler_registered_by_a_handler_mid_run_takes_the_rest_of_the_block() -> None:
    """The driver's side of the rule: after the first message of a run, the rest is decoded with the new table."""
    ours, theirs = memory_pair()
    log: list[tuple[str, Any]] = []
    async with Connection(ours) as conn:

        def first(p: Text) -> None:
            log.append(("first", p.text))
            conn.on_notification("text", lambda q: log.append(("second", q)))  # generic decoder now

        conn.on_notification("text", first, Text)
        await RawEnd(theirs).send(b"".join(text(v) + b"\n" for v in "abc"))
        with anyio.fail_after(3):
            while len(log) < 3:
                await anyio.sleep(0.005)
    assert log == [("first", "a"), ("second", {"text": "b"}), ("second", {"text": "c"})]
