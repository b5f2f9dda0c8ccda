"""Typed decoding of `session/update` params versus plain msgspec dict decoding of the same bytes.

Run: ``python benchmarks/decode_speed.py [--n 100000]``. Prints both rates from one run and their
ratio; the typed path must be at least as fast as decoding into plain dicts (issue: Foundation).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import msgspec

from acp_session import codec
from acp_session.schema import types as t


def sample_updates(n: int) -> list[bytes]:
    """A realistic stream: mostly text chunks, with thoughts, tool calls, plans and state updates mixed in."""
    out: list[bytes] = []
    for i in range(n):
        kind = i % 20
        if kind == 0:
            update = t.ToolCallUpdated(tool_call_id=f"call-{i}", title="Read file", kind="read", status="in_progress")
        elif kind == 1:
            update = t.AgentThoughtChunk(message_id="m-think", content=t.TextContent(text="considering the options.."))
        elif kind == 2:
            update = t.StateUpdate(state="running")
        else:
            update = t.AgentMessageChunk(
                message_id="m-1", content=t.TextContent(text=f"chunk {i:08d} of the reply text..")
            )
        out.append(codec.encode(t.UpdateSessionNotification(session_id="sess-1", update=update)))
    return out


def rate(decode: Callable[[bytes], Any], messages: list[bytes], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for message in messages:
            decode(message)
        best = min(best, time.perf_counter() - start)
    return len(messages) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    messages = sample_updates(args.n)
    typed = codec.decoder(t.UpdateSessionNotification)
    assert isinstance(typed(messages[3]).update, t.AgentMessageChunk)
    plain = msgspec.json.Decoder().decode
    results = {
        "typed_structs_per_s": rate(typed, messages, args.repeats),
        "plain_dicts_per_s": rate(plain, messages, args.repeats),
        "stdlib_json_per_s": rate(json.loads, messages, 1),
    }
    results["typed_over_plain"] = results["typed_structs_per_s"] / results["plain_dicts_per_s"]
    if args.json:
        print(json.dumps(results))
        return
    print(f"session/update params decode, n={args.n}, best of {args.repeats}")
    print(f"  typed structs (acp_session.codec) : {results['typed_structs_per_s']:>12,.0f} msg/s")
    print(f"  plain dicts (msgspec.json.decode) : {results['plain_dicts_per_s']:>12,.0f} msg/s")
    print(f"  stdlib json.loads                 : {results['stdlib_json_per_s']:>12,.0f} msg/s")
    print(f"  ratio typed / plain dicts         : {results['typed_over_plain']:.2f}x (target >= 1.00)")


if __name__ == "__main__":
    main()
