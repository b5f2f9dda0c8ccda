"""An ACP v2 agent that writes files in its session's directory by itself, as coding agents do (no client
method): each line of a prompt ``PATH TEXT`` writes TEXT and a newline to PATH, relative to the session's
directory, following symbolic links as any program would; a line ``-PATH`` removes PATH (a link itself, not its
target). The reply names each file written or removed."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, update

sessions = {}


def handle(msg):
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None:
        return
    if method == "initialize":
        answer(
            rid,
            {"protocolVersion": 2, "info": {"name": "writing-agent", "version": "1"}, "capabilities": {"session": {}}},
        )
    elif method == "session/new":
        sid = f"s{len(sessions) + 1}"
        sessions[sid] = params["cwd"]
        answer(rid, {"sessionId": sid})
        update(sid, {"sessionUpdate": "state_update", "state": "idle"})
    elif method == "session/prompt":
        sid = params["sessionId"]
        text = "".join(block.get("text", "") for block in params.get("prompt", []))
        answer(rid, {"messageId": "u1"})
        update(sid, {"sessionUpdate": "state_update", "state": "running"})
        written = []
        for line in text.splitlines():
            path, _, content = line.strip().partition(" ")
            if path.startswith("-"):
                os.unlink(os.path.join(sessions[sid], path[1:]))
                written.append(path)
            elif path:
                with open(os.path.join(sessions[sid], path), "w") as file:
                    file.write(content + "\n")
                written.append(path)
        reply = {"type": "text", "text": "wrote " + ", ".join(written)}
        update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": reply})
        update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
    elif method == "session/close":
        answer(rid, {})
    else:
        answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle)
