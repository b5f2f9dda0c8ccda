"""A hostile protocol-v1 agent that calls into the client (raw JSON lines, deliberately not using acp_session).

argv: LOGFILE SCRIPT_JSON. It answers ``initialize`` with protocolVersion 1 and ``session/new`` with ``s1``. On
each ``session/prompt`` it takes the next step of ``SCRIPT["prompts"]`` (default: answer ``end_turn``):

* ``send``: a list of ``{"method", "params", "count"}``: that many requests to the client (ids ``h0``, ``h1``,
  ... across the whole run), written back to back without reading anything;
* ``raw``: lines written verbatim after those requests (a line may hold a request with its own id);
* ``pause``: seconds to sleep before reading again (the client's answers pile up meanwhile);
* ``wait``: how many of the client's answers to read before answering the prompt (default 0: answer at once);
* ``text``: an agent_message_chunk sent just before the prompt's answer.

A param value ``"$terminal"`` is replaced by the ``terminalId`` of the last ``terminal/create`` answer read.

Every line it reads is logged to LOGFILE as one JSON object: small lines as ``{"t": time, "msg": message}``,
large ones (answers to file reads) as ``{"t": time, "id": id, "size": bytes}`` without parsing their body.
"""

import json
import re
import sys
import time

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
SCRIPT = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
INIT = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "v1-requests", "version": "1"}}
ID = re.compile(rb'"id":("[^"]*"|-?\d+)')
BIG = 64 * 1024
OUT = sys.stdout.buffer
prompts = list(SCRIPT.get("prompts", []))
state = {"sent": 0, "answers": 0, "terminal": None}
held = []  # prompts waiting for answers: [prompt id, answers still to read, step]


def write(obj):
    OUT.write((obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n")
    OUT.flush()


def finish(rid, step):
    if "text" in step:
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": step["text"]}}
        write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": chunk}})
    write({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def prompt(rid):
    step = prompts.pop(0) if prompts else {}
    lines = []
    for spec in step.get("send", []):
        for _ in range(spec.get("count", 1)):
            rid_out = f"h{state['sent']}"
            state["sent"] += 1
            params = {k: state["terminal"] if v == "$terminal" else v for k, v in spec["params"].items()}
            message = {"jsonrpc": "2.0", "id": rid_out, "method": spec["method"], "params": params}
            lines.append(json.dumps(message).encode() + b"\n")
    lines.extend(line.encode() + b"\n" for line in step.get("raw", []))
    OUT.write(b"".join(lines))
    OUT.flush()
    time.sleep(step.get("pause", 0))
    if step.get("wait", 0) > 0:
        held.append([rid, step["wait"], step])
    else:
        finish(rid, step)


def answered():
    state["answers"] += 1
    for entry in list(held):
        entry[1] -= 1
        if entry[1] <= 0:
            held.remove(entry)
            finish(entry[0], entry[2])


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    if method is None:
        result = msg.get("result")
        if isinstance(result, dict) and "terminalId" in result:
            state["terminal"] = result["terminalId"]
        answered()
    elif rid is None:
        pass
    elif method == "initialize":
        write({"jsonrpc": "2.0", "id": rid, "result": SCRIPT.get("initialize", INIT)})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        prompt(rid)
    else:
        write({"jsonrpc": "2.0", "id": rid, "result": {}})


for line in sys.stdin.buffer:
    now = time.monotonic()
    if len(line) > BIG:  # an answer carrying a file or output: only its id and size are of interest
        found = ID.search(line, 0, 200)
        LOG.write(json.dumps({"t": now, "id": json.loads(found.group(1)) if found else None, "size": len(line)}) + "\n")
        answered()
        continue
    LOG.write(json.dumps({"t": now, "msg": json.loads(line)}) + "\n")
    handle(json.loads(line))
