"""Benchmark client built on the official Python SDK (``agent-client-protocol``, v1 wire).

Runs only inside the benchmark's own environment (see ``benchmarks/compare.py``); the SDK is never a
dependency of acp-session. Prints one JSON line: rate, cold start and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import acp
from acp import PROTOCOL_VERSION, text_block
from acp.stdio import spawn_agent_process
from rss import peak_rss_kib


class FoldingClient:
    """Folds agent message chunks into the reply text, as an editor would."""

    def __init__(self, expected: int) -> None:
        self.parts: list[str] = []
        self.first_update_at: float | None = None
        self.expected = expected
        self.complete = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.first_update_at is None:
            self.first_update_at = time.time()
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.parts.append(update.content.text)
            if len(self.parts) == self.expected:
                self.complete.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")

    def on_connect(self, conn: Any) -> None:
        pass


async def run(args: argparse.Namespace) -> dict[str, Any]:
    client = FoldingClient(args.warmup or args.n)
    agent = [sys.executable, args.agent, "--wire", "v1", "--n", str(args.n), "--warmup", str(args.warmup)]
    async with spawn_agent_process(client, *agent) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        if args.warmup:
            await conn.prompt(session_id=session.session_id, prompt=[text_block("warm up")])
            await client.complete.wait()
            client.parts.clear()
            client.expected = args.n
            client.complete = asyncio.Event()
        start = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        await client.complete.wait()  # the SDK runs each notification in its own task: some finish later
        elapsed = time.perf_counter() - start
    text = "".join(client.parts)
    assert len(text) == args.expect_chars, (len(text), args.expect_chars)
    assert client.first_update_at is not None
    return {
        "updates_per_s": args.n / elapsed,
        "cold_start_s": client.first_update_at - args.t0,
        "peak_rss_kib": peak_rss_kib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=0, help="chunks of a first, unmeasured turn")
    parser.add_argument("--expect-chars", type=int, required=True)
    parser.add_argument("--t0", type=float, required=True)
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
