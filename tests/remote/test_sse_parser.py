"""The SSE parser of the HTTP profile: every line ending, chunks split anywhere (inside a CRLF, inside a UTF-8
character), and its bounds on one line and one event."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_session.transport.remote.sse import EventRun, SseEvent, SseLimitExceeded, SseParser


def feed_all(parser: SseParser, chunks: list[bytes]) -> list[SseEvent]:
    return [event for chunk in chunks for event in parser.feed(chunk)]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(ending: bytes) -> None:
    body = b'data: {"a":1}' + ending + ending + b": keep-alive" + ending + b"data:two" + ending + ending
    assert feed_all(SseParser(1024), [body]) == [SseEvent(b'{"a":1}'), SseEvent(b"two")]


def test_crlf_split_across_chunks_is_one_line_ending() -> None:
    parser = SseParser(1024)
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n") == []  # the LF completes the CR: one line ending, not the blank line
    assert parser.feed(b"\r\n") == [SseEvent(b"x")]
    events = feed_all(SseParser(1024), [b"data: x\r", b"\n\r", b"\ndata: y\r\n\r\n"])
    assert events == [SseEvent(b"x"), SseEvent(b"y")]


def test_utf8_split_across_chunks() -> None:
    text = '{"text":"héllo wörld ✓"}'.encode()
    body = b"data: " + text + b"\n\n"
    for cut in range(1, len(body)):
        assert feed_all(SseParser(1024), [body[:cut], body[cut:]]) == [SseEvent(text)], cut


def test_multi_line_data_event_type_bom_and_unknown_fields() -> None:
    body = b"\xef\xbb\xbfevent: message\nid: 7\nretry: 10\ndata: a\ndata: b\nfoo: bar\n\ndata\n\n"
    assert feed_all(SseParser(1024), [body[:1], body[1:2], body[2:]]) == [SseEvent(b"a\nb", "message"), SseEvent(b"")]


def test_event_without_data_is_not_dispatched_and_eof_drops_the_unfinished_one() -> None:
    parser = SseParser(1024)
    assert parser.feed(b"event: ping\n\n: comment\n\ndata: half") == []
    assert parser.feed_eof() == []


def test_a_line_over_the_limit_fails_before_it_is_held() -> None:
    parser = SseParser(100, max_line=120)
    parser.feed(b"data: " + b"x" * 100)
    with pytest.raises(SseLimitExceeded, match="a line"):
        parser.feed(b"x" * 100)


def test_an_event_over_the_limit_fails() -> None:
    parser = SseParser(100)
    with pytest.raises(SseLimitExceeded, match="an event"):
        for _ in range(20):
            parser.feed(b"data: " + b"y" * 10 + b"\n")


@given(st.lists(st.binary(min_size=0, max_size=40), max_size=8), st.sampled_from([b"\n", b"\r\n", b"\r"]), st.data())
def test_any_split_gives_the_same_events(payloads: list[bytes], ending: bytes, data: st.DataObject) -> None:
    clean = [p.replace(b"\r", b"").replace(b"\n", b"") for p in payloads]
    body = b"".join(b"data: " + p + ending + ending for p in clean)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=6)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert feed_all(SseParser(1024), chunks) == [SseEvent(p) for p in clean]


def test_leaving_the_fast_path_mid_event_keeps_its_bytes() -> None:
    parser = SseParser(1024)
    assert parser.feed(b"data: a\n\nevent: x\ndata: b") == [SseEvent(b"a")]  # LF only: the fast path
    assert parser.feed(b"\r\n\r\ndata: c\n\n") == [SseEvent(b"b", "x"), SseEvent(b"c")]  # a CR: the line parser
    assert parser.feed(b"data: d\n\n: keep-alive\n\ndata:e\n\n") == [SseEvent(b"d"), SseEvent(b"e")]


@given(
    st.lists(
        st.lists(st.sampled_from([b"data: a", b"data:bb", b": ping", b"event: x", b"data", b"id: 1", b""]), max_size=4),
        max_size=6,
    ),
    st.data(),
)
def test_lf_only_streams_cut_anywhere_give_the_same_events(blocks: list[list[bytes]], data: st.DataObject) -> None:
    """The fast path holds an unfinished event in a buffer and searches only the new bytes (and the byte before
    them): every cut, including one between the two LFs of a boundary, gives what the body in one piece gives."""
    body = b"".join(b"\n".join(lines) + b"\n\n" for lines in blocks)
    whole = SseParser(1024).feed(body)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert feed_all(SseParser(1024), chunks) == whole


@pytest.mark.parametrize("chunk_size", [1, 7, 4096])
@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_each_byte_is_scanned_a_bounded_number_of_times(chunk_size: int, ending: bytes) -> None:
    """Issue 51, 6: a 24 MiB event cost 7-8 s of CPU, the held bytes joined with each chunk and all of them split
    again. Now the bytes handed to the search and split primitives (``scanned``) stay a small multiple of the bytes
    fed, however finely the event is cut (a count, not a time)."""
    size = 4 * 2**20 if chunk_size == 4096 else 64 * 1024
    body = b'data: {"text":"' + b"x" * size + b'"}' + ending + ending + b"data: next" + ending + ending
    parser = SseParser(8 * 2**20)
    events = [e for i in range(0, len(body), chunk_size) for e in parser.feed_data(body[i : i + chunk_size])]
    assert [len(e) for e in events] == [size + 11, 4]
    scanned = getattr(parser, "scanned", None)
    assert scanned is not None and scanned <= 6 * len(body), (scanned, len(body))


def test_an_lf_event_of_many_lines_is_bounded_by_its_data_not_its_bytes() -> None:
    """Its data lines' prefixes do not count against ``max_event``: an event whose bytes exceed a line's limit but
    whose data fits is delivered; one whose data does not fit still fails."""
    lines = [b"data: " + b"z" * 90 for _ in range(10)]
    body = b"\n".join(lines) + b"\n\n"
    fits = len(b"\n".join(line[6:] for line in lines))
    assert SseParser(fits, max_line=200).feed(body) == [SseEvent(b"\n".join(line[6:] for line in lines))]
    with pytest.raises(SseLimitExceeded, match="an event"):
        SseParser(fits - 1, max_line=200).feed(body)


_LINES = [
    b'data: {"a":1}',
    b"data: ",
    b"data:  two spaces",
    b"data:no space",
    b"data",
    b"data: a: colon",
    b": keep-alive",
    b"event: message",
    b"id: 7",
    b"retry: 100",
    b"foo: bar",
    b"",
]


def _expanded(items: list[bytes | EventRun]) -> list[bytes]:
    return [data for item in items for data in (item.events() if isinstance(item, EventRun) else [item])]


@given(st.lists(st.lists(st.sampled_from(_LINES), max_size=4), max_size=12), st.data())
def test_bulk_reads_give_what_the_line_parser_gives(blocks: list[list[bytes]], data: st.DataObject) -> None:
    """The bulk path (a read's single-line events checked and taken at once, runs as ``EventRun``) against the line
    parser alone: the same body with CRLF endings (a CR keeps the parser off the fast path), fed in one piece. Any
    cut of the LF body, through ``feed``, ``feed_data`` and ``feed_runs``, gives the same events in order."""
    body = b"".join(b"\n".join(lines) + b"\n\n" for lines in blocks)
    oracle = SseParser(1024).feed(body.replace(b"\n", b"\r\n"))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert feed_all(SseParser(1024), chunks) == oracle
    parser = SseParser(1024)
    assert [d for chunk in chunks for d in parser.feed_data(chunk)] == [event.data for event in oracle]
    parser = SseParser(1024)
    assert _expanded([item for chunk in chunks for item in parser.feed_runs(chunk)]) == [e.data for e in oracle]


@given(st.lists(st.tuples(st.sampled_from(_LINES), st.sampled_from([b"\n", b"\r\n", b"\r"])), max_size=30), st.data())
def test_any_line_endings_cut_anywhere_give_what_one_piece_gives(
    lines: list[tuple[bytes, bytes]], data: st.DataObject
) -> None:
    body = b"".join(line + ending for line, ending in lines) + b"\n\n"
    whole = SseParser(1024).feed(body)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    parser = SseParser(1024)
    assert _expanded([item for chunk in chunks for item in parser.feed_runs(chunk)]) == [e.data for e in whole]


def test_a_read_of_single_line_events_is_one_run_and_the_bounds_still_hold() -> None:
    events = [b'{"n":%d}' % i for i in range(10)]
    body = b"".join(b"data: " + event + b"\n\n" for event in events)
    parser = SseParser(1024)
    first = parser.feed_runs(body[:-5])  # the tenth event unfinished: held
    assert len(first) == 1 and isinstance(first[0], EventRun) and first[0].count == 9
    assert first[0].events() == events[:9]
    assert parser.feed_runs(body[-5:]) == [events[9]]
    assert SseParser(1024).feed_runs(body[: 3 * 15]) == events[:3]  # fewer than RUN_EVENTS: each on its own
    with pytest.raises(SseLimitExceeded, match="an event"):  # an event over the limit in a bulk read
        SseParser(20).feed_runs(b"data: x\n\n" * 4 + b"data: " + b"y" * 21 + b"\n\n")
