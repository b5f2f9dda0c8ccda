"""A read's whole lines decoded in one msgspec call (``FrameReader.feed_block`` + ``RpcCore.receive_block``).

The block path must give what the exact path gives, line by line: the same notifications in the same order,
the same ``-32700``/``-32600`` reports for the same bad lines, the same frame size limit. The property tests feed
one stream both ways, cut into reads at random; the documented leniency (a block holding both a line of two
messages joined by a comma and a message broken over two lines where its comma is missing, in equal number)
has its own test. Bad input: ACP2-001-style framing
(one JSON message per line, no embedded newlines; docs-v2/transports).
"""

from __future__ import annotations

import json
import sys
from itertools import pairwise
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session.errors import AcpError, MessageTooLarge, ParseError
from acp_session.rpc import Connection, ProtocolViolation, TypedNotifications
from acp_session.transport import memory_pair, stdio_agent
from acp_session.transport.framing import (
    BLOCK_LINES,
    Frame,
    FrameReader,
    LineBlock,
    check_utf8,
    lines_in,
)
from tests.helpers.raw_end import RawEnd
from tests.rpc.test_receive_block import Text, core_with, count, handlers, note, request, summary, text


def flat(events: Any) -> list[Any]:
    """Events as plain data, each typed run as one item per notification (runs may be cut differently)."""
    out: list[Any] = []
    for event in events:
        if isinstance(event, TypedNotifications):
            out += [("note", event.method, msgspec.to_builtins(p)) for p in event.params]
        else:
            if isinstance(event, ProtocolViolation) and isinstance(event.frame, memoryview):
                event.frame = bytes(event.frame)
            out.append(summary(event))
    return out


def exact(reads: list[bytes], typed: tuple[str, ...], limit: int = 1 << 20) -> list[Any]:
    core = core_with(*typed)
    reader = FrameReader(limit)
    events: list[Any] = []
    for data in reads:
        frames = reader.feed(data)
        if frames:
            events += flat(core.receive_block(check_utf8(frames, data)))
    return events + flat(core.receive_block(check_utf8(reader.feed_eof(), b""))) if reader.buffered else events


def blocks(reads: list[bytes], typed: tuple[str, ...], limit: int = 1 << 20) -> tuple[list[Any], int, int]:
    """The block path's events, the lines it counted and how many reads came as a ``LineBlock``."""
    core = core_with(*typed)
    reader = FrameReader(limit)
    events: list[Any] = []
    lines = used = 0
    for data in reads:
        frames = reader.feed_block(data)
        if frames:
            lines += lines_in(frames)
            used += type(frames[-1]) is LineBlock
            events += flat(core.receive_block(frames))
    if reader.buffered:
        events += flat(core.receive_block(check_utf8(reader.feed_eof(), b"")))
    return events, lines, used


def cut(stream: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({0, len(stream), *(p % (len(stream) + 1) for p in points)})
    return [stream[a:b] for a, b in pairwise(edges)]


def lax(n: object) -> bytes:
    return note("lax", {"n": n})


GOOD = [text("a"), text("é"), text("ok " * 30), count(1), count(2), lax(5), lax("6")]
BAD_SINGLE = [
    note("text", {"text": 1}),  # typed method, invalid params: the generic path reports it
    note("plain", {"p": 1}),
    request(1),
    request(2, "text"),
    json.dumps({"jsonrpc": "2.0", "id": 1, "result": None}).encode(),
    b"",  # a blank line
    b"   ",
    b"[1]",
    b"{",
    b'{"jsonrpc":"2.0","method":"text","params":{"text":"\xff"}}',  # invalid UTF-8 in a typed notification
    b'{"a":"\xed\xa0\x80"}',
    # invalid UTF-8 where msgspec does not look: an unknown field of the params, skipped by the typed decode
    b'{"jsonrpc":"2.0","method":"text","params":{"text":"a","x":"\xff"}}',
    # no method: a typed method's params alone are no notification, even where that method is the only one typed
    b'{"jsonrpc":"2.0","params":{"text":"m"}}',
    b'{"jsonrpc":"2.0","params":{"n":4}}',
]
TWO_ON_A_LINE = [text("a") + text("b"), text("a") + b" " + count(3), text("c") + b"\t\t" + text("d")]
JOINED_BY_A_COMMA = [text("e") + b"," + text("f"), count(4) + b" , " + text("g")]
OVER_TWO_LINES = [
    b'{"jsonrpc":"2.0",\n"method":"text","params":{"text":"s"}}',
    b'{"jsonrpc":"2.0","method":\n"count",\n"params":{"n":9}}',
]
TYPED = st.sampled_from([("text",), ("text", "count"), ("count", "plain"), ("text", "lax"), ()])


def stream_of(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


BREACHES = {
    "two messages on a line": TWO_ON_A_LINE,
    "messages over two lines": OVER_TWO_LINES,
    # blank lines, lines of two messages (side by side or joined by a comma), messages over two lines after a
    # comma or a colon: no mix of them offsets another in a block
    "every breach mixed": TWO_ON_A_LINE + JOINED_BY_A_COMMA + OVER_TWO_LINES,
}


@pytest.mark.parametrize("breaches", list(BREACHES.values()), ids=list(BREACHES))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_blocks_classify_as_the_exact_path(breaches: list[bytes], data: st.DataObject) -> None:
    """The same events as line by line, and every line counted, for any stream cut into reads anywhere."""
    lines = data.draw(st.lists(st.sampled_from(GOOD * 4 + BAD_SINGLE + breaches), max_size=40))
    points = data.draw(st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=4))
    typed = data.draw(TYPED)
    reads = cut(stream_of(lines), points)
    events, counted, _ = blocks(reads, typed)
    assert events == exact(reads, typed)
    assert counted == stream_of(lines).count(b"\n")


def test_a_blank_line_and_a_line_of_two_messages_in_one_block_take_the_exact_path() -> None:
    """The pair a count alone would miss (blank lines, which the exact path skips, and lines of two messages):
    found by the property test above."""
    lines = [text("a")] * 3 + [b"   ", text("b") + text("c"), b"", text("d") + b"\t" + text("e"), text("f")]
    reads = [stream_of(lines)]
    events = blocks(reads, ("text",))[0]
    assert events == exact(reads, ("text",))
    assert [e[0] for e in events] == ["note"] * 3 + ["violation"] * 2 + ["note"]


def test_a_long_read_of_typed_notifications_is_one_block_and_one_run() -> None:
    lines = [text(str(i)) for i in range(50)]
    core = core_with("text")
    frames = FrameReader().feed_block(stream_of(lines))
    assert len(frames) == 1 and type(frames[0]) is LineBlock and frames[0].count == 50
    (run,) = core.receive_block(frames)
    assert isinstance(run, TypedNotifications) and run.end == 50
    assert [p.text for p in run.params] == [str(i) for i in range(50)]


def test_a_read_completes_the_held_line_then_blocks_the_rest_and_holds_the_tail() -> None:
    reader = FrameReader()
    stream = stream_of([text(str(i)) for i in range(10)])
    assert reader.feed_block(stream[:7]) == []
    frames = reader.feed_block(stream[7:-5])
    assert frames[0] == text("0") and type(frames[1]) is LineBlock and frames[1].count == 8
    assert reader.buffered == len(text("9")) + 1 - 5
    assert reader.feed_block(stream[-5:]) == [text("9")]  # one line: no block


def test_invalid_utf8_in_a_skipped_field_is_reported_as_on_the_exact_path() -> None:
    """msgspec does not check the bytes of a field it skips, so ``feed_block`` checks the block's UTF-8 itself."""
    bad = b'{"jsonrpc":"2.0","method":"text","params":{"text":"a","x":"\xff"}}'
    reads = [stream_of([text("é")] * 4 + [bad] + [text("b")] * 4)]
    events, _, used = blocks(reads, ("text",))
    assert used == 0 and events == exact(reads, ("text",))
    assert [e for e in events if e[0] == "violation"] == [("violation", "invalid UTF-8", bad)]
    assert [e for e in events if e[0] == "note"] == [("note", "text", {"text": v}) for v in "éééébbbb"]


def test_few_lines_or_a_read_near_the_limit_take_the_exact_path() -> None:
    short = stream_of([text("a")] * (BLOCK_LINES - 1))
    assert all(type(f) is bytes for f in FrameReader().feed_block(short))
    line = text("x" * 40)
    reads = [stream_of([line] * 10), stream_of([line] * 3 + [text("y" * 600)] + [line] * 3)]
    limit = len(line) * 5  # the first read is over it as a whole, though no line is
    events, _, used = blocks(reads, ("text",), limit)
    assert used == 0 and events == exact(reads, ("text",), limit)
    assert ("too large", len(text("y" * 600))) in events


def test_the_documented_leniency_two_breaches_in_equal_number_in_one_block() -> None:
    """A line of two messages joined by a comma and a message broken where its comma is missing, in one block:
    each of those lines is -32700 on the exact path; the block delivers the four whole messages (what
    ``RpcCore._decode_block`` documents)."""
    broken = [b'{"jsonrpc":"2.0"', b'"method":"text","params":{"text":"e"}}']
    lines = [text("a")] * 3 + [text("b") + b"," + text("c"), *broken, text("d")]
    reads = [stream_of(lines)]
    assert [e[0] for e in exact(reads, ("text",))][-4:] == ["violation"] * 3 + ["note"]
    assert blocks(reads, ("text",))[0] == [("note", "text", {"text": v}) for v in "aaabced"]
    # Either breach alone, or a broken message whose comma is there, takes the exact path.
    for alone in ([text("a")] * 4 + [text("b") + b"," + text("c")], [text("a")] * 4 + broken):
        assert blocks([stream_of(alone)], ("text",))[0] == exact([stream_of(alone)], ("text",))
    comma_kept = [text("a")] * 3 + [text("b") + b"," + text("c"), b'{"jsonrpc":"2.0",', broken[1]]
    assert blocks([stream_of(comma_kept)], ("text",))[0] == exact([stream_of(comma_kept)], ("text",))


def test_each_decoder_group_takes_a_block_of_its_own_lines_and_a_mixed_block_is_split() -> None:
    """``lax`` decodes with ``strict=False``, so it has a decoder of its own: a block of one group's lines is one
    call of that group's decoder; a block mixing the two takes the exact path, with the same events."""
    for lines, run in (([text(v) for v in "abcd"], "text"), ([lax(1), lax("2"), lax(3), lax(4)], "lax")):
        frames = FrameReader().feed_block(stream_of(lines))
        assert type(frames[0]) is LineBlock
        (event,) = core_with("text", "lax").receive_block(frames)
        assert isinstance(event, TypedNotifications) and event.method == run and event.end == 4
    mixed = [stream_of([text("a"), lax(1), text("b"), lax("2"), text("c")])]
    events, _, used = blocks(mixed, ("text", "lax"))
    assert used == 1 and events == exact(mixed, ("text", "lax"))
    assert [e[:2] for e in events] == [("note", "text"), ("note", "lax")] * 2 + [("note", "text")]


def test_a_handler_table_change_mid_block_decodes_the_rest_with_the_new_table() -> None:
    core = core_with("text", "count")
    frames: list[Frame] = FrameReader().feed_block(stream_of([text("a"), count(1), count(2), text("b"), text("c")]))
    assert type(frames[0]) is LineBlock
    events = iter(core.receive_block(frames))
    assert summary(next(events)) == ("typed", "text", [{"text": "a"}], 1)
    core.set_notification_handlers(handlers("text"))
    assert [summary(e) for e in events] == [
        ("note", "count", {"n": 1}),
        ("note", "count", {"n": 2}),
        ("typed", "text", [{"text": "b"}, {"text": "c"}], 5),
    ]


pytestmark = pytest.mark.anyio


async def test_a_handler_registered_mid_block_by_the_driver_takes_the_rest() -> None:
    ours, theirs = memory_pair()
    log: list[tuple[str, Any]] = []
    async with Connection(ours) as conn:

        def first(p: Text) -> None:
            log.append(("first", p.text))
            conn.on_notification("text", lambda q: log.append(("second", q)))

        conn.on_notification("text", first, Text)
        await RawEnd(theirs).send(stream_of([text(v) for v in "abcdefgh"]))
        with anyio.fail_after(3):
            while len(log) < 8:
                await anyio.sleep(0.005)
        assert conn.frames_read == 8
    assert log == [("first", "a")] + [("second", {"text": v}) for v in "bcdefgh"]


CHILD = """
import sys, time
sys.stdout.buffer.write(open(sys.argv[1], "rb").read())
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
"""


async def test_bad_lines_in_long_reads_over_a_real_pipe_are_reported_and_the_rest_delivered(tmp_path: Any) -> None:
    """A child writes 3 000 lines at once: typed notifications with a malformed line, a line of two messages, a
    message over two lines, invalid UTF-8 and an oversized line among them, far apart."""
    good = [text(str(i)) for i in range(3000)]
    lines = list(good)
    lines[1200:1200] = [b"{not json"]
    lines[300:300] = [text("x") + text("y")]  # more than a read (64 KiB) away from the message over two lines
    lines[2200:2200] = [b'{"jsonrpc":"2.0",', b'"method":"text","params":{"text":"z"}}']
    lines[2500:2500] = [b'{"jsonrpc":"2.0","method":"text","params":{"text":"\xff"}}', text("w" * 300_000)]
    (tmp_path / "stream").write_bytes(stream_of(lines))
    received: list[str] = []
    errors: list[AcpError] = []
    async with (
        stdio_agent([sys.executable, "-c", CHILD, str(tmp_path / "stream")]) as agent,
        Connection(agent, max_frame_size=256 * 1024, on_frame_error=errors.append) as conn,
    ):
        conn.on_notification("text", lambda p: received.append(p.text), Text)
        with anyio.fail_after(10):
            while len(received) < 3000:
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        assert conn.frames_read == len(lines)
    assert received == [str(i) for i in range(3000)]
    kinds = [type(e) for e in errors]
    assert kinds.count(ParseError) == 5 and kinds.count(MessageTooLarge) == 1, errors
