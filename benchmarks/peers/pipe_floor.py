"""A lower bound with the pipe in it: the cheap agent's turn read through a pipe and decoded by msgspec into the
generated types (as ``compare.py``'s in-memory lower bound), with no library and no event loop.

The in-memory raw decode pays none of a real client's reading: the kernel's copy out of the pipe, the split into
lines, the read loop. This client pays those and nothing else, so the fold's ratio to it tells the library's own
cost apart from the transport's. It reads as the library does, with its sizes (the pipe's buffer enlarged to
``PIPE_BUFFER_SIZE``, non-blocking reads of ``DEFAULT_RECEIVE_SIZE``, ``select`` when the pipe is empty), and
decodes each read's whole lines at once. Arguments as ``peer_ours.py``'s; prints one JSON line with
``updates_per_s``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import select
import subprocess
import sys
import time

import msgspec

from acp_session.schema.types import AgentMessageChunk, StateUpdate, UpdateSessionNotification
from acp_session.transport.base import DEFAULT_RECEIVE_SIZE as READ_SIZE
from acp_session.transport.pipe import PIPE_BUFFER_SIZE


class _Line(msgspec.Struct, gc=False):
    """Any line of the turn: the in-memory bound's envelope, with the fields a response has as well."""

    jsonrpc: str
    method: str = ""
    params: UpdateSessionNotification | None = None
    id: int | None = None
    result: object = None


def turn(fd: int, decoder: msgspec.json.Decoder[_Line]) -> str:
    """Read and decode one turn's lines until its ``idle``; the text of its chunks. Each read's whole lines go to
    one ``decode_lines`` (the cheapest typed decode of many lines msgspec has, lenient where the library's framing
    is not), the rest is held for the next read."""
    decode_lines = decoder.decode_lines
    parts: list[str] = []
    held = b""
    while True:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        if not data:
            raise EOFError("the agent closed its output mid-turn")
        if held:
            data = held + data
        end = data.rfind(b"\n") + 1
        held = data[end:]
        for line in decode_lines(data[:end] if held else data):
            params = line.params
            if params is None:
                continue  # the prompt's response
            update = params.update
            if type(update) is AgentMessageChunk:
                parts.append(update.content.text)  # type: ignore[union-attr]
            elif type(update) is StateUpdate and update.state == "idle":
                return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", required=True)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--expect-chars", type=int, default=0)
    parser.add_argument("--t0", type=float, default=0.0)
    args = parser.parse_args()
    argv = [sys.executable, args.agent, "--wire", "v2", "--n", str(args.n), "--warmup", str(args.warmup)]
    agent = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert agent.stdin is not None and agent.stdout is not None
    fd = agent.stdout.fileno()
    with contextlib.suppress(OSError):  # the system's limit is lower: the default buffer, as the library then gets
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BUFFER_SIZE)
    os.set_blocking(fd, False)
    decoder = msgspec.json.Decoder(_Line)
    replies = msgspec.json.Decoder()

    def request(ident: int, method: str) -> None:
        agent.stdin.write(msgspec.json.encode({"jsonrpc": "2.0", "id": ident, "method": method, "params": {}}) + b"\n")

    def answer() -> None:
        held = b""
        while not held.endswith(b"\n"):
            try:
                held += os.read(fd, READ_SIZE)
            except BlockingIOError:
                select.select([fd], [], [])
        replies.decode(held)

    request(1, "initialize")
    answer()
    request(2, "session/new")
    answer()
    if args.warmup:
        request(3, "session/prompt")
        turn(fd, decoder)
    start = time.perf_counter()
    request(4, "session/prompt")
    text = turn(fd, decoder)
    elapsed = time.perf_counter() - start
    agent.stdin.close()
    agent.wait()
    assert len(text) == args.expect_chars, (len(text), args.expect_chars)
    print(json.dumps({"updates_per_s": args.n / elapsed}))


if __name__ == "__main__":
    main()
