"""A v2 agent that, after a resume, names a terminal the client never heard of (zed #64538: Kimi Code kept
sending tool call updates for terminals of the process before the resume, and Zed dropped those updates whole,
replies, tool statuses and plan included). Raw JSON lines, no acp_session.

``session/resume`` replays a user message and a running tool call showing terminal ``t-old`` (never reported by
a ``terminal_update``). Each prompt then completes that tool call (still showing ``t-old``, plus text), writes a
reply, updates a plan, with ``--chunk`` names ``t-old`` in a ``terminal_output_chunk`` of its own, and ends the turn.
Any other request is answered -32601.
"""

import json
import sys

OLD_TERMINAL = [{"type": "terminal", "terminalId": "t-old"}]


def write(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")


def update(upd):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": upd}})


for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        caps = {"session": {"prompt": {}, "resume": {}}}
        info = {"name": "stale-terminal", "version": "1"}
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 2, "info": info, "capabilities": caps}})
    elif method == "session/resume":
        update({"sessionUpdate": "user_message", "messageId": "u0", "content": [{"type": "text", "text": "earlier"}]})
        running = {"toolCallId": "t0", "title": "make test", "kind": "execute", "status": "in_progress"}
        update({"sessionUpdate": "tool_call_update", **running, "content": OLD_TERMINAL})
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    elif method == "session/prompt":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"messageId": "u1"}})
        update({"sessionUpdate": "state_update", "state": "running"})
        passed = {"type": "content", "content": {"type": "text", "text": "tests passed"}}
        update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "t0",
                "status": "completed",
                "content": [*OLD_TERMINAL, passed],
            }
        )
        reply = {"type": "text", "text": "reply after resume"}
        update({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": reply})
        entries = [{"content": "run the tests", "priority": "high", "status": "completed"}]
        update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": entries}})
        if "--chunk" in sys.argv:
            update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t-old", "data": "b2sK"})
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    elif method is not None and "id" in msg:
        write({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"not here: {method}"}})
    sys.stdout.flush()
