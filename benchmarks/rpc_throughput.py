"""rpc layer benchmarks over a real pipe, each printed beside a baseline measured in the same run.

1. Notification throughput (messages/s): a started subprocess (it says "ready") writes N
   session/update-like notifications; the Connection decodes each into a typed msgspec Struct in a sync
   handler (and, on a second line, hands runs of them to a batch handler). Baseline: a plain loop of
   typed msgspec decodes of the very same lines. Target: >= 40% of the baseline.
2. Request round trip (p50, p99): ``await conn.request(...)`` against a peer that turns each request line
   into a response line with one bytes.replace. Baseline: a bare line echo over the same kind of pipe.
   Target: p50 < 3x the bare echo.

Run: .venv/bin/python benchmarks/rpc_throughput.py [--backend asyncio|trio] [--count N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Any

import anyio
import msgspec
from round_trip import ECHO, BareEcho, StreamEcho

from acp_session.rpc import Connection
from acp_session.transport import stdio_agent


# Untracked by the garbage collector (gc=False), like every generated ACP struct (acp_session.schema).
class TextContent(msgspec.Struct, tag_field="type", tag="text", gc=False):
    text: str


class AgentMessageChunk(msgspec.Struct, tag_field="sessionUpdate", tag="agent_message_chunk", gc=False):
    content: TextContent
    messageId: str


class SessionNotification(msgspec.Struct, gc=False):
    sessionId: str
    update: AgentMessageChunk


class NotificationEnvelope(msgspec.Struct, gc=False):
    jsonrpc: str
    method: str
    params: SessionNotification


DUMP_FILE = r"""
import sys
with open(sys.argv[1], "rb") as f:
    data = f.read()  # before "ready": reading the file is not the client's time
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"ready"}\n')
sys.stdout.buffer.flush()
sys.stdin.buffer.readline()
sys.stdout.buffer.write(data)
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
"""


def make_lines(count: int) -> list[bytes]:
    encoder = msgspec.json.Encoder()
    return [
        encoder.encode(
            NotificationEnvelope(
                "2.0",
                "session/update",
                SessionNotification(
                    "sess_abc123",
                    AgentMessageChunk(TextContent(f"token {i} of a streamed agent reply, with some text"), "m1"),
                ),
            )
        )
        for i in range(count)
    ]


def raw_decode_rate(lines: list[bytes]) -> float:
    decoder = msgspec.json.Decoder(NotificationEnvelope)
    start = time.perf_counter()
    for line in lines:
        decoder.decode(line)
    return len(lines) / (time.perf_counter() - start)


async def notification_rate(lines: list[bytes], batch: bool = False) -> float:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(b"\n".join(lines) + b"\n")
        f.flush()
        async with stdio_agent([sys.executable, "-c", DUMP_FILE, f.name]) as agent, Connection(agent) as conn:
            count = 0
            done = anyio.Event()
            target = len(lines)

            def on_update(_: SessionNotification) -> None:
                nonlocal count
                count += 1
                if count == target:
                    done.set()

            def on_updates(notes: list[SessionNotification]) -> None:
                nonlocal count
                count += len(notes)
                if count == target:
                    done.set()

            conn.on_notification(
                "session/update",
                on_update,
                msgspec.json.Decoder(SessionNotification).decode,
                batch=on_updates if batch else None,
            )
            ready = anyio.Event()
            conn.on_notification("ready", lambda _: ready.set())
            await ready.wait()  # the clock starts once the child runs: process start-up is not decoding
            start = time.perf_counter()
            await conn.notify("go", {})
            await done.wait()
            return target / (time.perf_counter() - start)


async def echo_latencies(echo: BareEcho | StreamEcho, n: int) -> list[float]:
    """The floor for a round trip (``round_trip.BareEcho``: the same kind of pipes and direct I/O the library
    uses, no protocol work), or for context the same echo through anyio's process streams."""
    await echo.start()
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        await echo.one()
        out.append(time.perf_counter() - start)
    await echo.close()
    return out


async def rpc_latencies(n: int) -> list[float]:
    async with stdio_agent([sys.executable, "-c", ECHO, "respond"]) as agent, Connection(agent) as conn:
        out: list[float] = []
        for _ in range(n):
            start = time.perf_counter()
            await conn.request("ping")
            out.append(time.perf_counter() - start)
        return out


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1e6


async def main(args: Any) -> None:
    lines = make_lines(args.count)
    # Baseline and ours alternate, best of each: the machine's speed drifts between moments, not within one.
    baseline = ours = batched = 0.0
    for _ in range(args.pairs):
        baseline = max(baseline, raw_decode_rate(lines))
        ours = max(ours, await notification_rate(lines))
        batched = max(batched, await notification_rate(lines, batch=True))
    ratio = ours / baseline
    print(f"notifications ({args.backend}, {args.count} msgs, {len(lines[0])} bytes each)")
    print(f"  raw typed msgspec decode loop: {baseline:12,.0f} msg/s")
    print(f"  Connection over a real pipe:   {ours:12,.0f} msg/s  ({ratio:.0%} of raw; target >= 40%)")
    print(f"  ... with a batch handler:      {batched:12,.0f} msg/s  ({batched / baseline:.0%} of raw)")
    await echo_latencies(BareEcho(), 200)  # warm up
    echo: list[float] = []
    rpc: list[float] = []
    streams: list[float] = []
    for _ in range(args.pairs):
        echo += await echo_latencies(BareEcho(), args.rounds // args.pairs)
        rpc += await rpc_latencies(args.rounds // args.pairs)
        streams += await echo_latencies(StreamEcho(), args.rounds // args.pairs)
    print(f"round trip ({len(rpc)} calls, alternating with the echo)")
    print(f"  bare pipe echo:  p50 {pct(echo, 50):7.1f} us  p99 {pct(echo, 99):7.1f} us")
    print(f"  (echo via anyio process streams, for context: p50 {pct(streams, 50):.1f} us)")
    print(
        f"  conn.request():  p50 {pct(rpc, 50):7.1f} us  p99 {pct(rpc, 99):7.1f} us"
        f"  ({pct(rpc, 50) / pct(echo, 50):.2f}x bare p50; target < 3x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=3, help="alternating baseline/ours measurement pairs")
    ns = parser.parse_args()
    anyio.run(main, ns, backend=ns.backend)
