"""A deliberately cheap ACP agent for benchmarks: it streams N pre-encoded chunk updates per prompt.

Usage: ``python cheap_agent.py --wire v2|v1 --n N [--warmup W]``. With ``--warmup``, the first prompt streams W
chunks (a warm-up turn for the client) and every later prompt N. Standard library only, so it costs the same whatever
client drives it. On the v2 wire a prompt is answered at once with its ``messageId``, then ``running``,
the chunks, and ``idle`` (``end_turn``). The v1 wire is plain ACP v1: ``initialize`` answers protocol version
1 with ``agentCapabilities`` and ``agentInfo``, ``session/new`` only the ``sessionId``, the chunks carry no
``messageId``, there are no state updates, and the ``session/prompt`` response after the chunks carries the
stop reason (``end_turn``). ``session/set_config_option`` is answered immediately (round-trip benchmark).
"""

from __future__ import annotations

import argparse
import json
import sys


def chunk_text(i: int) -> str:
    return f"chunk {i:07d} of the streamed reply ".ljust(40, ".")  # 40 bytes


def expected_text(n: int) -> str:
    return "".join(chunk_text(i) for i in range(n))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wire", choices=["v1", "v2"], default="v2")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=0, help="chunks of the first prompt's turn (0: N)")
    args = parser.parse_args()
    out = sys.stdout.buffer
    session = "sess-bench"

    def line(obj: object) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"

    def update(body: dict[str, object]) -> bytes:
        return line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": body}})

    def v2_turn(count: int, user_id: str, message_id: str) -> bytes:
        chunks = b"".join(
            update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": message_id,
                    "content": {"type": "text", "text": chunk_text(i)},
                }
            )
            for i in range(count)
        )
        return (
            update({"sessionUpdate": "user_message", "messageId": user_id, "content": [{"type": "text", "text": "go"}]})
            + update({"sessionUpdate": "state_update", "state": "running"})
            + chunks
            + update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        )

    def v1_turn(count: int) -> bytes:
        return b"".join(
            update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": chunk_text(i)}})
            for i in range(count)
        )

    if args.wire == "v2":
        turns = [v2_turn(args.warmup, "u0", "w0")] if args.warmup else []
        turns.append(v2_turn(args.n, "u1", "a1"))
    else:
        turns = [v1_turn(args.warmup)] if args.warmup else []
        turns.append(v1_turn(args.n))
    prompts = 0
    user_ids = [b"u0", b"u1"] if args.warmup else [b"u1"]

    config = [{"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": False}]
    # The round-trip benchmark compares against a bare echo that writes each line back, so this answer is
    # pre-encoded and the request is only split, not parsed: the agent's own work would otherwise count
    # against the client. No ``in``/``find``/regex here: right after a wake-up the C library's vectorised
    # search costs the agent microseconds (docs/performance.md). Requests whose id is not a plain number
    # among the first two fields take the general path below.
    reply_head, reply_tail = line({"jsonrpc": "2.0", "id": 0, "result": {"configOptions": config}}).split(b'"id":0')
    for raw in sys.stdin.buffer:
        if raw.count(b'"session/set_config_option"'):
            head = raw.split(b",", 3)
            field = head[1] if len(head) > 1 and head[1].startswith(b'"id":') else head[0]
            if field.startswith(b'"id":') and field[5:].isdigit():  # our client's ids; anything else: below
                out.write(reply_head + field + reply_tail)
                out.flush()
                continue
        message = json.loads(raw)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            info = {"name": "cheap-agent", "version": "1"}
            result: dict[str, object] = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info}
            if args.wire == "v2":
                result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
            out.write(line({"jsonrpc": "2.0", "id": ident, "result": result}))
        elif method == "session/new":
            opened: dict[str, object] = {"sessionId": session}
            if args.wire == "v2":
                opened["configOptions"] = config
            out.write(line({"jsonrpc": "2.0", "id": ident, "result": opened}))
        elif method == "session/set_config_option":
            out.write(line({"jsonrpc": "2.0", "id": ident, "result": {"configOptions": config}}))
        elif method == "session/prompt":
            turn = turns[min(prompts, len(turns) - 1)]
            user_id = user_ids[min(prompts, len(user_ids) - 1)].decode()
            prompts += 1
            # Written as two pieces, not concatenated: joining them copied the whole turn (23 MB at N = 100 000)
            # inside every client's measured time.
            if args.wire == "v2":
                out.write(line({"jsonrpc": "2.0", "id": ident, "result": {"messageId": user_id}}))
                out.write(turn)
            else:
                out.write(turn)
                out.write(line({"jsonrpc": "2.0", "id": ident, "result": {"stopReason": "end_turn"}}))
        else:
            out.write(line({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}))
        out.flush()


if __name__ == "__main__":
    main()
