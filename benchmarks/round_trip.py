"""Request round trip (p50, p99): acp-session beside a bare pipe echo, measured in turns.

Run: ``.venv/bin/python benchmarks/round_trip.py [--rounds 4000] [--block 100] [--json]``

Clients, each in a fresh process of its own (``--worker NAME``) that talks to its own child over real pipes:

* ``echo``: the floor. A bare line echo child, read and written with the same direct non-blocking pipe
  I/O the library uses; no protocol work at all.
* ``stream echo``: the same echo through anyio's process streams, the usual way to talk to a child
  (context only).
* ``minimal``: the least a typed JSON-RPC client in Python can do, written by hand against
  ``peers/cheap_agent.py`` on asyncio: encode a generated request struct, write it, wait on one future,
  decode the envelope in the pipe's readiness callback, decode the typed result. No checks, no
  cancellation, no timeouts, no framing across reads: a yardstick for the protocol work, not a client.
* ``acp-session``: ``await session.set_config_option(...)`` against ``peers/cheap_agent.py``.

The coordinator lets the workers take turns, ``--block`` round trips at a time. The machine's speed drifts
over seconds (on a shared VM one run can be 1.5x slower than the next), so measuring the clients in turn
rather than one after the other lets each see the same moments, while each still runs alone in a small
process of its own, as the library's users would. Each worker's first block is its warm-up, and the first
``SETTLE`` calls of every block are dropped: a worker that has just been woken up by the coordinator pays
for that wake-up (10x the steady round trip in the first call, 3x in the second), which is the
benchmark's doing, not the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from acp_session import ClientBuilder
from acp_session.codec import decoder
from acp_session.rpc.messages import RequestOut, encoder, envelope_decoder
from acp_session.schema.types import SetSessionConfigOptionBooleanRequest, SetSessionConfigOptionResponse
from acp_session.transport.pipe import open_pipe, open_stdin_pipe

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "peers" / "cheap_agent.py"), "--wire", "v2", "--n", "1"]
ECHO = r"""
import sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
for line in inp:
    out.write(line.replace(b'"method":', b'"result":', 1) if len(sys.argv) > 1 else line)
    out.flush()
"""
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
SETTLE = 5


class StreamEcho:
    """The same echo through anyio's process streams (context: the usual way to talk to a child)."""

    def __init__(self) -> None:
        self.process: Process | None = None
        self.stdin: ByteSendStream | None = None
        self.stdout: ByteReceiveStream | None = None

    async def start(self) -> None:
        self.process = await anyio.open_process([sys.executable, "-c", ECHO], stdin=PIPE, stdout=PIPE)
        self.stdin, self.stdout = self.process.stdin, self.process.stdout

    async def one(self, _: int = 0) -> bytes:
        assert self.stdin is not None and self.stdout is not None
        await self.stdin.send(PING)
        buf = b""
        while not buf.endswith(b"\n"):
            buf += await self.stdout.receive()
        return buf

    async def close(self) -> None:
        assert self.process is not None and self.stdin is not None and self.stdout is not None
        await self.stdin.aclose()
        await self.process.wait()
        await self.stdout.aclose()


class BareEcho(StreamEcho):
    """The round-trip floor: the same echo child over direct non-blocking pipes (``transport.pipe``)."""

    async def start(self) -> None:
        stdout, child_stdout = open_pipe()
        stdin, child_stdin = open_stdin_pipe()
        self.stdin, self.stdout = stdin, stdout
        try:
            argv = [sys.executable, "-c", ECHO]
            self.process = await anyio.open_process(argv, stdin=child_stdin, stdout=child_stdout)
        finally:
            os.close(child_stdout)
            os.close(child_stdin)


class MinimalClient:
    """A hand-written typed JSON-RPC client with nothing but the protocol work (asyncio only)."""

    def __init__(self) -> None:
        self.decode = decoder(SetSessionConfigOptionResponse)
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.process: Process | None = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.read_fd, child_stdout = os.pipe()
        child_stdin, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        try:
            self.process = await anyio.open_process(AGENT, stdin=child_stdin, stdout=child_stdout)
        finally:
            os.close(child_stdout)
            os.close(child_stdin)
        self.loop.add_reader(self.read_fd, self._readable)

    def _readable(self) -> None:
        data = os.read(self.read_fd, 65536)
        if data:  # one answer per read: the client waits for each before sending the next
            envelope = envelope_decoder.decode(data)
            self.pending.pop(envelope.id).set_result(envelope.result)

    async def one(self, i: int) -> Any:
        ident = self.next_id = self.next_id + 1
        params = SetSessionConfigOptionBooleanRequest(session_id="sess-bench", config_id="fast", value=i % 2 == 0)
        os.write(self.write_fd, encoder.encode(RequestOut("2.0", ident, "session/set_config_option", params)) + b"\n")
        answer = self.pending[ident] = self.loop.create_future()
        return self.decode(await answer).config_options

    async def close(self) -> None:
        assert self.process is not None
        self.loop.remove_reader(self.read_fd)
        os.close(self.write_fd)
        await self.process.wait()
        os.close(self.read_fd)


class AcpSessionClient:
    """``set_config_option`` through the whole stack: ClientBuilder, ActiveSession, Connection, pipes."""

    async def start(self) -> None:
        self._stack = contextlib.AsyncExitStack()
        client = await self._stack.enter_async_context(ClientBuilder("round-trip-bench", "1").spawn(AGENT))
        self.session = await client.new_session("/tmp")

    async def one(self, i: int) -> Any:
        return await self.session.set_config_option("fast", i % 2 == 0)

    async def close(self) -> None:
        await self._stack.aclose()


WORKERS: dict[str, Callable[[], Any]] = {
    "echo": BareEcho,
    "stream echo": StreamEcho,
    "minimal": MinimalClient,
    "acp-session": AcpSessionClient,
}


async def worker(name: str) -> None:
    """Serve blocks: read a count on stdin, run that many round trips, print their durations (JSON)."""
    client = WORKERS[name]()
    await client.start()
    call = client.one
    clock = time.perf_counter
    print("ready", flush=True)
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line.strip():
            break
        samples = []
        for i in range(int(line)):
            start = clock()
            await call(i)
            samples.append(clock() - start)
        print(json.dumps(samples), flush=True)
    await client.close()


def measure(rounds: int, block: int = 100) -> dict[str, dict[str, float]]:
    """p50 and p99 in microseconds per client, the workers taking turns ``block`` calls at a time
    (``rounds`` calls each are run, of which the settling ones are dropped)."""
    block = max(block, SETTLE + 1)
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--worker", name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for name in WORKERS
    }
    try:
        for name, proc in procs.items():
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"round-trip worker {name!r} did not start")
        samples: dict[str, list[float]] = {name: [] for name in procs}
        for turn in range(max(1, rounds // block) + 1):
            for name, proc in procs.items():
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{block}\n")
                proc.stdin.flush()
                taken = json.loads(proc.stdout.readline())
                if turn:  # each worker's first block is its warm-up
                    samples[name] += taken[SETTLE:]
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in procs.values():
            proc.wait(timeout=30)
    out = {}
    for name, values in samples.items():
        values.sort()
        out[name] = {"p50_us": values[len(values) // 2] * 1e6, "p99_us": values[int(len(values) * 0.99)] * 1e6}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4000, help="measured calls per client")
    parser.add_argument("--block", type=int, default=100, help="calls per turn")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        anyio.run(worker, args.worker)
        return
    result = measure(args.rounds, args.block)
    if args.json:
        print(json.dumps(result))
        return
    floor = result["echo"]["p50_us"]
    print(f"request round trip, {args.rounds} calls each, in turns of {args.block}")
    for name, row in result.items():
        p50, p99 = row["p50_us"], row["p99_us"]
        print(f"  {name:<12} p50 {p50:7.1f} us  p99 {p99:7.1f} us  ({p50 / floor:.2f}x echo)")
    ours = result["acp-session"]["p50_us"]
    print(f"  acp-session p50 is {ours / result['minimal']['p50_us']:.2f}x the minimal client's")
    print(f"  target: acp-session p50 < 3x the echo's -> {'met' if ours < 3 * floor else 'NOT met'}")


if __name__ == "__main__":
    main()
