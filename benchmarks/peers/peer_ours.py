"""Benchmark client built on acp-session: a bare ``on_session_update`` handler, or a Conversation.

The agent speaks v2 unless ``--wire v1``: the client then negotiates v1 at ``initialize`` and folds what the
v1 adapter maps (it synthesises the turn's states, so both modes wait the same way). Prints one JSON line:
rate, cold start (process start to first prompt accepted) and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import anyio
from rss import peak_rss_kib

from acp_session import ClientBuilder
from acp_session.schema.types import AgentMessageChunk, StateUpdate, TextContent, UpdateSessionNotification


def agent_argv(args: argparse.Namespace) -> list[str]:
    return [sys.executable, args.agent, "--wire", args.wire, "--n", str(args.n), "--warmup", str(args.warmup)]


async def bare(args: argparse.Namespace) -> dict[str, Any]:
    parts: list[str] = []
    idle = anyio.Event()

    def on_update(note: UpdateSessionNotification) -> None:
        update = note.update
        if type(update) is AgentMessageChunk and type(update.content) is TextContent:
            parts.append(update.content.text)
        elif isinstance(update, StateUpdate) and update.state == "idle":  # the Preview subclass too
            idle.set()

    async with ClientBuilder("bench", "1").on_session_update(on_update).spawn(agent_argv(args)) as client:
        session = await client.new_session("/tmp")
        if args.warmup:
            await session.send_prompt("warm up")
            await idle.wait()
            parts.clear()
            idle = anyio.Event()
        start = time.perf_counter()
        await session.send_prompt("go")
        accepted_at = time.time()
        await idle.wait()
        elapsed = time.perf_counter() - start
    text = "".join(parts)
    assert len(text) == args.expect_chars, (len(text), args.expect_chars)
    return {
        "updates_per_s": args.n / elapsed,
        "cold_start_s": accepted_at - args.t0,
        "peak_rss_kib": peak_rss_kib(),
    }


async def conversation(args: argparse.Namespace) -> dict[str, Any]:
    async with ClientBuilder("bench", "1").spawn(agent_argv(args)) as client:
        chat = await client.start_conversation("/tmp")
        if args.warmup:
            await chat.chat_to_completion("warm up")
        start = time.perf_counter()
        response = await chat.chat_to_completion("go")
        elapsed = time.perf_counter() - start
    assert len(response.text) == args.expect_chars, (len(response.text), args.expect_chars)
    return {
        "updates_per_s": args.n / elapsed,
        "peak_rss_kib": peak_rss_kib(),
    }


MODES = {"bare": bare, "conversation": conversation}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--agent", required=True)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=0, help="chunks of a first, unmeasured turn")
    parser.add_argument("--expect-chars", type=int, default=0)
    parser.add_argument("--t0", type=float, default=0.0)
    parser.add_argument("--backend", default="asyncio")
    parser.add_argument("--wire", choices=["v1", "v2"], default="v2", help="the protocol version the agent speaks")
    args = parser.parse_args()
    print(json.dumps(anyio.run(MODES[args.mode], args, backend=args.backend)))


if __name__ == "__main__":
    main()
