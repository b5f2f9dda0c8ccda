"""The WebSocket frame reader of the receive path, against wsproto (the library it replaces there) as the oracle:
the same server frames (fragmented messages, control frames between fragments, every length form, broken
frames), cut into chunks anywhere, give the same messages, pings, close and protocol-error codes. Its limits:
an oversized message skipped as it arrives, never buffered."""

from __future__ import annotations

import os
import struct
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import CloseConnection, Ping, TextMessage

from acp_session.transport.framing import OversizedFrame
from acp_session.transport.remote.wsframes import WsClose, WsFrameReader, WsPing, WsProtocolError

Outcome = tuple[list[Any], int | None]  # (texts, pings and the close in order; the protocol error's code)


def frame(
    opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0, mask: bytes | None = None, long_form: bool = False
) -> bytes:
    size = len(payload)
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    mask_bit = 0x80 if mask is not None else 0
    if size < 126:
        head += bytes([mask_bit | size])
    elif size < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", size)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", size)
    if mask is not None:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload


def oracle(chunks: list[bytes]) -> Outcome:
    connection = Connection(ConnectionType.CLIENT)
    out: list[Any] = []
    pieces: list[str] = []
    for chunk in chunks:
        connection.receive_data(chunk)
        for event in connection.events():
            if isinstance(event, TextMessage):
                pieces.append(event.data)
                if event.message_finished:
                    out.append("".join(pieces).encode())
                    pieces = []
            elif isinstance(event, Ping):
                out.append(("ping", bytes(event.payload)))
            elif isinstance(event, CloseConnection):
                if connection.state is not ConnectionState.REMOTE_CLOSING:
                    return out, event.code  # wsproto reports a protocol error as a close event of its own
                out.append(("close", event.code, event.reason or ""))
                return out, None
    return out, None


def ours(chunks: list[bytes], max_message: int = 1 << 30) -> Outcome:
    reader = WsFrameReader(max_message)
    out: list[Any] = []
    for chunk in chunks:
        for item in reader.feed(chunk):
            if isinstance(item, WsProtocolError):
                return out, item.code
            if isinstance(item, WsPing):
                out.append(("ping", item.payload))
            elif isinstance(item, WsClose):
                out.append(("close", item.code, item.reason))
                return out, None
            else:
                out.append(item)
    return out, None


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if b > a] or [b""]


texts = st.text(max_size=300).map(lambda s: s.encode())


@st.composite
def message_frames(draw: st.DrawFn) -> bytes:
    """One message (text or binary, in 1-4 fragments at any byte cut), with control frames between fragments."""
    binary = draw(st.booleans())
    payload = draw(st.binary(max_size=300)) if binary else draw(texts)
    parts = cut(payload, draw(st.lists(st.integers(0, 400), max_size=3)))
    out = b""
    for index, part in enumerate(parts):
        opcode = (0x2 if binary else 0x1) if index == 0 else 0x0
        out += frame(opcode, part, fin=index == len(parts) - 1)
        if draw(st.integers(0, 4)) == 0:
            out += frame(draw(st.sampled_from([0x9, 0xA])), draw(st.binary(max_size=125)))
    return out


close_payloads = st.one_of(
    st.just(b""),
    st.tuples(st.sampled_from([1000, 1001, 1011, 3000, 4999]), st.text(max_size=20)).map(
        lambda p: struct.pack("!H", p[0]) + p[1].encode()[:123]
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(message_frames(), max_size=8),
    st.one_of(st.none(), close_payloads),
    st.lists(st.integers(0, 1 << 16), max_size=12),
)
def test_valid_streams_read_as_wsproto_reads_them(messages: list[bytes], close: bytes | None, cuts: list[int]) -> None:
    data = b"".join(messages) + (b"" if close is None else frame(0x8, close))
    expected = oracle(cut(data, cuts))
    assert expected[1] is None
    assert ours(cut(data, cuts)) == expected


@st.composite
def broken_frames(draw: st.DrawFn) -> bytes:
    """A frame that may break any rule: unknown opcodes, reserved bits, a mask, control frames fragmented or too
    long, non-shortest lengths, bad close codes and reasons, text that is not UTF-8."""
    opcode = draw(st.integers(0, 15))
    payload = draw(st.one_of(texts, st.binary(max_size=200)))
    if opcode == 0x8 and draw(st.booleans()):
        payload = struct.pack("!H", draw(st.integers(0, 5100))) + draw(st.one_of(texts, st.binary(max_size=10)))
    fin = draw(st.integers(0, 5)) > 0
    rsv = draw(st.sampled_from([0, 0, 0, 1, 2, 4]))
    mask = draw(st.one_of(st.none(), st.none(), st.none(), st.binary(min_size=4, max_size=4)))
    data = frame(opcode, payload, fin=fin, rsv=rsv, mask=mask)
    if draw(st.integers(0, 6)) == 0 and len(payload) < 126:  # a non-shortest length form
        data = bytes([data[0], (data[1] & 0x80) | 126]) + struct.pack("!H", len(payload)) + data[2:]
    return data


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(message_frames(), broken_frames()), max_size=6), st.lists(st.integers(0, 4096), max_size=6))
@example([b"\x01\x01\x80"], [])  # a first fragment that cannot start UTF-8: 1007 before the message ends
def test_broken_streams_fail_as_wsproto_fails(frames: list[bytes], cuts: list[int]) -> None:
    data = b"".join(frames)
    expected_out, expected_error = oracle(cut(data, cuts))
    out, error = ours(cut(data, cuts))
    assert error == expected_error
    # The messages agree; a ping between the fragments of a message that then proves broken may come out of
    # one reader and not the other (both check UTF-8 as fragments come, but where a read is cut differs).
    assert [item for item in out if type(item) is bytes] == [item for item in expected_out if type(item) is bytes]
    if error is None:
        assert out == expected_out


def test_the_usual_frames_come_out_as_the_same_bytes() -> None:
    messages = [b'{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}' % i for i in range(1000)]
    data = b"".join(frame(0x1, m) for m in messages)
    reader = WsFrameReader(1 << 20)
    out = []
    for start in range(0, len(data), 4096):
        out += reader.feed(data[start : start + 4096])
        assert reader.only_messages
    assert out == messages


@pytest.mark.parametrize("fragments", [1, 3])
def test_an_oversized_message_is_skipped_as_it_arrives(fragments: int) -> None:
    reader = WsFrameReader(1000)
    big = os.urandom(3000).hex().encode()  # 6000 bytes of text
    parts = [big[i * len(big) // fragments : (i + 1) * len(big) // fragments] for i in range(fragments)]
    data = b"".join(
        frame(0x1 if i == 0 else 0x0, part, fin=i == fragments - 1) for i, part in enumerate(parts)
    ) + frame(0x1, b"after")
    out: list[Any] = []
    for start in range(0, len(data), 512):
        out += reader.feed(data[start : start + 512])
        assert len(reader._buf) <= 14 and sum(map(len, reader._pieces)) <= 1000  # never more than the limit
    assert [type(item) for item in out] == [OversizedFrame, bytes]
    assert out[0].size == len(big) and out[1] == b"after"


def test_a_message_at_the_limit_is_kept_and_binary_messages_are_dropped() -> None:
    reader = WsFrameReader(10)
    assert reader.feed(frame(0x2, b"bin") + frame(0x1, b"x" * 10) + frame(0x1, b"x" * 11)) == [
        b"x" * 10,
        OversizedFrame(11),
    ]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (frame(0x1, b"masked", mask=b"abcd"), 1002),
        (frame(0x1, b"rsv", rsv=4), 1002),
        (frame(0x3, b""), 1002),
        (frame(0x9, b"", fin=False), 1002),
        (frame(0x9, b"x" * 126), 1002),
        (frame(0x0, b"lost continuation"), 1002),
        (frame(0x1, b"a", fin=False) + frame(0x1, b"b"), 1002),
        (frame(0x1, b"\xff\xfe"), 1007),
        (frame(0x8, b"\x03"), 1002),
        (frame(0x8, struct.pack("!H", 1005)), 1002),
        (frame(0x8, struct.pack("!H", 1000) + b"\xff"), 1007),
        (bytes([0x81, 127]) + struct.pack("!Q", 1 << 63), 1002),
    ],
)
def test_each_broken_rule_has_its_close_code(data: bytes, code: int) -> None:
    reader = WsFrameReader(1 << 20)
    (*before, error) = reader.feed(frame(0x1, b"before") + data)
    assert before == [b"before"]  # what came before the broken frame is still read
    assert isinstance(error, WsProtocolError) and error.code == code
    assert oracle([data])[1] == code
    assert reader.feed(frame(0x1, b"after")) == []  # the reader stops at the error


def test_the_long_length_forms_read_as_wsproto_reads_them() -> None:
    messages = [b"y" * 70_000, b"z" * 300, "é".encode() * 40_000]
    data = b"".join(frame(0x1, m) for m in messages)
    chunks = cut(data, list(range(0, len(data), 7919)))
    assert ours(chunks) == oracle(chunks) == (messages, None)


def test_nothing_after_the_close_frame_counts() -> None:
    reader = WsFrameReader(1 << 20)
    out = reader.feed(frame(0x1, b"a") + frame(0x8, struct.pack("!H", 1001) + b"bye") + frame(0x1, b"late"))
    assert out[0] == b"a" and isinstance(out[1], WsClose) and (out[1].code, out[1].reason) == (1001, "bye")
    assert not reader.only_messages  # the session looks at each item only then
    assert len(out) == 2 and reader.feed(frame(0x1, b"later")) == []
