"""A v2 agent that floods the client with permission requests (raw JSON lines, no acp_session).

argv: LOGFILE [--withdraw]. Every line read is appended to LOGFILE. A prompt ``storm K`` is accepted at once
(answer, then ``running``) and followed by K ``session/request_permission`` requests for its session, written
in one go. When every one of them is answered the turn ends (idle, ``cancelled`` if ``session/cancel`` came,
else ``end_turn``). With ``--withdraw``, ``session/cancel`` also makes the agent withdraw (``$/cancel_request``)
every request of that session it has no answer for yet.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import messages

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
WITHDRAW = "--withdraw" in sys.argv
pending = {}  # request id -> session id
sessions = {}  # session id -> {"left": int, "cancelled": bool}
counter = {"session": 0, "request": 0}


def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")


def idle(sid, reason):
    update = {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason}
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


for msg in messages(LOG.write):
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None and rid in pending:  # the client's answer
        sid = pending.pop(rid)
        state = sessions[sid]
        state["left"] -= 1
        if state["left"] == 0:
            idle(sid, "cancelled" if state["cancelled"] else "end_turn")
    elif method == "initialize":
        info = {"name": "permission-storm", "version": "1"}
        write(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}},
            }
        )
    elif method == "session/new":
        counter["session"] += 1
        sid = f"s{counter['session']}"
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
    elif method == "session/prompt":
        sid = params["sessionId"]
        count = int(params["prompt"][0]["text"].split()[1])
        sessions[sid] = {"left": count, "cancelled": False}
        write({"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"u-{sid}"}})
        running = {"sessionUpdate": "state_update", "state": "running"}
        write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": running}})
        options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]
        for _ in range(count):
            counter["request"] += 1
            ours = f"r{counter['request']}"
            pending[ours] = sid
            subject = {"type": "tool_call", "toolCall": {"toolCallId": ours}}
            request = {"sessionId": sid, "title": "run it?", "subject": subject, "options": options}
            write({"jsonrpc": "2.0", "id": ours, "method": "session/request_permission", "params": request})
    elif method == "session/cancel":
        sid = params["sessionId"]
        sessions[sid]["cancelled"] = True
        if WITHDRAW:
            for ours, owner in list(pending.items()):
                if owner == sid:
                    write({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": ours}})
    elif rid is not None:
        write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    sys.stdout.flush()
