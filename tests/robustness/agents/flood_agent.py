"""A fast producer for the load tests (raw bytes, deliberately not using acp_session).

argv: REPORT_FILE COUNT. Answers initialize and session/new; on session/prompt it answers, then writes COUNT
``agent_message_chunk`` updates (texts ``c0``, ``c1``, ...) as fast as the pipe takes them, then a marker update
with text ``end``. Before that it times writing the same lines to /dev/null (its unthrottled speed). Both times
go to REPORT_FILE as JSON: ``{"raw_seconds": ..., "pipe_seconds": ...}``.
"""

import json
import os
import sys
import time

REPORT = sys.argv[1]
COUNT = int(sys.argv[2])
OUT = sys.stdout.buffer
PREFIX = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":'
PREFIX += b'"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"'
SUFFIX = b'"}}}}\n'
BATCH = 2000


def batches():
    for start in range(0, COUNT, BATCH):
        yield b"".join(PREFIX + b"c%d" % i + SUFFIX for i in range(start, min(start + BATCH, COUNT)))


def answer(rid, result):
    OUT.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
    OUT.flush()


def flood():
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        for block in batches():
            null.write(block)
        raw = time.perf_counter() - t0
    t0 = time.perf_counter()
    for block in batches():
        OUT.write(block)
    OUT.flush()
    pipe = time.perf_counter() - t0
    OUT.write(PREFIX.replace(b'"a1"', b'"marker"') + b"end" + SUFFIX)
    OUT.flush()
    with open(REPORT, "w") as f:
        json.dump({"raw_seconds": raw, "pipe_seconds": pipe}, f)


def main():
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None or method is None:
            continue
        if method == "initialize":
            answer(
                rid, {"protocolVersion": 2, "info": {"name": "flood", "version": "0"}, "capabilities": {"session": {}}}
            )
        elif method == "session/new":
            answer(rid, {"sessionId": "s1"})
        elif method == "session/prompt":
            answer(rid, {"messageId": "u1"})
            flood()


if __name__ == "__main__":
    main()
