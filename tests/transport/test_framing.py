"""Newline framing: chunk boundaries, size limit with skip-and-continue, bounded buffering."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_session.transport import FrameReader, OversizedFrame, encode_frame
from acp_session.transport.framing import SHORT_FRAME, has_line_break


def test_frames_split_across_chunks() -> None:
    reader = FrameReader()
    assert reader.feed(b'{"a":') == []
    assert reader.feed(b'1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert reader.feed(b":3}\n") == [b'{"c":3}']
    assert reader.buffered == 0


def test_oversized_frame_is_skipped_and_reported_then_reading_continues() -> None:
    reader = FrameReader(max_frame_size=10)
    out = reader.feed(b"x" * 25 + b"\nok\n")
    assert out == [OversizedFrame(25), b"ok"]


def test_oversized_frame_across_many_chunks_keeps_memory_bounded() -> None:
    reader = FrameReader(max_frame_size=100)
    out: list[object] = []
    for _ in range(1000):
        out += reader.feed(b"y" * 64)
        assert reader.buffered <= 100 + 64
    out += reader.feed(b"tail\nnext\n")
    assert out == [OversizedFrame(64000 + 4), b"next"]


def test_frame_exactly_at_limit_is_kept() -> None:
    reader = FrameReader(max_frame_size=4)
    assert reader.feed(b"abcd\nabcde\n") == [b"abcd", OversizedFrame(5)]


def test_final_frame_without_newline_is_delivered_at_eof() -> None:
    reader = FrameReader()
    assert reader.feed(b"one\ntwo") == [b"one"]
    assert reader.feed_eof() == [b"two"]
    assert reader.feed_eof() == []


def test_encode_frame_never_embeds_newlines() -> None:
    assert encode_frame(b'{"a":\n1}') == b'{"a": 1}\n'
    assert encode_frame(b"{}") == b"{}\n"


def test_line_breaks_are_found_in_short_and_long_bodies() -> None:
    for size in (0, SHORT_FRAME - 2, SHORT_FRAME, 3 * SHORT_FRAME):
        body = b"x" * size
        assert not has_line_break(body)
        for brk in (b"\n", b"\r", b"\r\n"):
            assert has_line_break(body + brk) and has_line_break(brk + body) and has_line_break(body + brk + body)
            assert encode_frame(body + brk + b"y") == body + b" " * len(brk) + b"y\n"


def test_at_frame_start_follows_the_stream() -> None:
    reader = FrameReader(max_frame_size=8)
    assert reader.at_frame_start
    reader.feed(b'{"a"')
    assert not reader.at_frame_start
    reader.feed(b":1}\n")
    assert reader.at_frame_start
    reader.feed(b"x" * 20)  # oversized: being skipped
    assert not reader.at_frame_start
    assert reader.feed(b"x\nok\n") == [OversizedFrame(21), b"ok"]
    assert reader.at_frame_start
    reader.feed(b"tail")
    assert reader.feed_eof() == [b"tail"] and reader.at_frame_start


@given(st.lists(st.binary(max_size=30), max_size=20), st.data())
def test_any_chunking_gives_the_same_frames(pieces: list[bytes], data: st.DataObject) -> None:
    stream = b"\n".join(pieces) + b"\n"
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = FrameReader(max_frame_size=16)
    got: list[object] = []
    last = 0
    for cut in [*cuts, len(stream)]:
        got += reader.feed(stream[last:cut])
        assert reader.at_frame_start == (cut == 0 or stream[cut - 1 : cut] == b"\n")
        last = cut
        assert reader.buffered <= 16 + len(stream)
    expected = [p if len(p) <= 16 else OversizedFrame(len(p)) for p in stream.split(b"\n")[:-1]]
    assert got == expected
