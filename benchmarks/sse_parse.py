"""The SSE parser of the HTTP profile (``acp_session.transport.remote.sse``) on one large event, beside the least a
parser can do with the same chunks: split each at the event boundaries once and join all the bytes once.

Rows: one event of ``--size-mib`` MiB (default 16; the largest message the client takes by default is 32 MiB) cut
into 64 KiB and into 4 KiB chunks (what a socket read gives), and 100 000 small events of one ``data:`` line in
64 KiB chunks (a streamed turn), through ``feed_data`` (each event's data) and through ``feed_runs`` (a read's run
of single-line events as one ``EventRun``, what the HTTP transport takes). Each row prints the parser's time, the
baseline's, measured in the same run, and their ratio. Before issue 51 the parser joined the held bytes with each
chunk and split all of them again: a 24 MiB event took 7-8 s, quadratic in its size; linear, the ratio stays a
small constant at any size.

Run: ``.venv/bin/python benchmarks/sse_parse.py [--size-mib 16] [--repeats 3] [--json]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from acp_session.transport.remote.sse import EventRun, SseParser

MIB = 2**20


def one_event(size: int) -> bytes:
    """One ``session/update`` whose text is ``size`` bytes, as an SSE event."""
    head = b'data: {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    update = b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"'
    return head + update + b"x" * size + b'"}}}}\n\n'


def small_events(count: int) -> bytes:
    line = b'data: {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"n":%d}}}\n\n'
    return b"".join(line % i for i in range(count))


def cut(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def parse(chunks: list[bytes]) -> int:
    parser = SseParser(64 * MIB)
    events = 0
    for chunk in chunks:
        events += len(parser.feed_data(chunk))
    return events


def parse_runs(chunks: list[bytes]) -> int:
    """What the HTTP transport calls: a run of single-line events kept as one ``EventRun``."""
    parser = SseParser(64 * MIB)
    events = 0
    for chunk in chunks:
        for item in parser.feed_runs(chunk):
            events += item.count if isinstance(item, EventRun) else 1
    return events


def raw_scan(chunks: list[bytes]) -> int:
    """The floor: each chunk split once at the event boundaries, and all the bytes joined once."""
    found = 0
    for chunk in chunks:
        found += len(chunk.split(b"\n\n")) - 1
    return len(b"".join(chunks)) and found


def best(run: Callable[[list[bytes]], int], chunks: list[bytes], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(chunks)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(size_mib: float, repeats: int) -> list[dict[str, float | str]]:
    big = one_event(int(size_mib * MIB))
    cases = [
        (f"one {size_mib:g} MiB event, 64 KiB chunks", cut(big, 64 * 1024), 1),
        (f"one {size_mib:g} MiB event, 4 KiB chunks", cut(big, 4096), 1),
        ("100 000 small events, 64 KiB chunks", cut(small_events(100_000), 64 * 1024), 100_000),
    ]
    rows: list[dict[str, float | str]] = []
    small = cut(small_events(100_000), 64 * 1024)
    cases.append(("100 000 small events, feed_runs", small, 100_000))
    for name, chunks, expected in cases:
        run = parse_runs if name.endswith("feed_runs") else parse
        assert run(chunks) == expected, name
        parser_s = best(run, chunks, repeats)
        baseline_s = best(raw_scan, chunks, repeats)
        size = sum(len(chunk) for chunk in chunks)
        rows.append(
            {
                "row": name,
                "bytes": size,
                "parser_s": parser_s,
                "raw_scan_s": baseline_s,
                "parser_mb_per_s": size / parser_s / 1e6,
                "ratio": parser_s / baseline_s,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=16.0, help="the large event's text, in MiB (default 16)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    rows = measure(args.size_mib, args.repeats)
    if args.json:
        print(json.dumps({"rows": rows}))
        return
    print(f"SSE parser beside a raw scan of the same chunks (best of {args.repeats})")
    print(f"  {'row':<40} {'parser':>10} {'raw scan':>10} {'ratio':>7} {'parser MB/s':>12}")
    for row in rows:
        print(
            f"  {row['row']:<40} {row['parser_s'] * 1e3:>8.1f}ms {row['raw_scan_s'] * 1e3:>8.1f}ms"
            f" {row['ratio']:>6.1f}x {row['parser_mb_per_s']:>12,.0f}"
        )


if __name__ == "__main__":
    main()
