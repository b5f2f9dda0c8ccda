"""A v2 agent that answers each prompt with its messages in a scripted order (raw JSON lines, no acp_session).

argv: ORDERS_FILE. The file holds a JSON list; prompt number k (from 0) gets ``orders[k]``, a list of tokens
written in that order, all in one write:

* ``answer``: the ``session/prompt`` result ``{"messageId": "u<k>"}``;
* ``error`` / ``cancelled``: an error answer (-32603 / -32800) instead;
* ``user``: the ``user_message`` update of ``u<k>``;
* ``chunks``: ``state_update`` running, then three ``agent_message_chunk`` of ``a<k>`` ("w0 ", "w1 ", "w2 ");
* ``idle``: ``state_update`` idle with stop reason ``end_turn``.
"""

import json
import sys

ORDERS = json.loads(open(sys.argv[1]).read())  # noqa: SIM115
state = {"prompt": 0}


def frame(obj):
    return json.dumps(obj) + "\n"


def update(sid, body):
    return frame({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": body}})


def turn(rid, sid, prompt, k, tokens):
    out = []
    for token in tokens:
        if token == "answer":
            out.append(frame({"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"u{k}"}}))
        elif token == "error":
            out.append(frame({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "broken"}}))
        elif token == "cancelled":
            out.append(frame({"jsonrpc": "2.0", "id": rid, "error": {"code": -32800, "message": "cancelled"}}))
        elif token == "user":
            out.append(update(sid, {"sessionUpdate": "user_message", "messageId": f"u{k}", "content": prompt}))
        elif token == "chunks":
            out.append(update(sid, {"sessionUpdate": "state_update", "state": "running"}))
            for i in range(3):
                chunk = {"sessionUpdate": "agent_message_chunk", "messageId": f"a{k}"}
                out.append(update(sid, {**chunk, "content": {"type": "text", "text": f"w{i} "}}))
        elif token == "idle":
            out.append(update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
    return "".join(out)


for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        info = {"name": "order-agent", "version": "1"}
        result = {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        sys.stdout.write(frame({"jsonrpc": "2.0", "id": rid, "result": result}))
    elif method == "session/new":
        sys.stdout.write(frame({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s"}}))
    elif method == "session/prompt":
        k = state["prompt"]
        state["prompt"] += 1
        sys.stdout.write(turn(rid, params["sessionId"], params["prompt"], k, ORDERS[k % len(ORDERS)]))
    else:
        sys.stdout.write(frame({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}))
    sys.stdout.flush()
