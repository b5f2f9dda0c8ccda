"""A v2 agent that reports a turn's work before it answers the prompt (raw JSON lines, no acp_session).

For each ``session/prompt`` it writes ``state_update`` running, the ``user_message`` (``u<k>``), a pending tool
call (``tc-<k>``) and, when the prompt's text is ``ask``, a ``session/request_permission`` for it; it answers the
prompt only when the session is cancelled (``session/cancel``): the answer, then the idle with stop reason
``cancelled``. The schema lets the answer come after the turn's updates; the SDK 1.0 agents' turns often do.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, update, write

unanswered = []  # (prompt id, message id) of the prompts not answered yet
count = [0]


def handle(msg):
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        answer(
            rid,
            {
                "protocolVersion": 2,
                "info": {"name": "early-work-agent", "version": "1"},
                "capabilities": {"session": {}},
            },
        )
    elif method == "session/new":
        answer(rid, {"sessionId": "s"})
    elif method == "session/prompt":
        count[0] += 1
        k = count[0]
        update("s", {"sessionUpdate": "state_update", "state": "running"})
        update("s", {"sessionUpdate": "user_message", "messageId": f"u{k}", "content": params["prompt"]})
        tool = {"sessionUpdate": "tool_call_update", "toolCallId": f"tc-{k}", "title": "work", "status": "pending"}
        update("s", tool)
        if params["prompt"][0].get("text") == "ask":
            options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}]
            question = {
                "sessionId": "s",
                "title": "Go on?",
                "options": options,
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": f"tc-{k}"}},
            }
            write({"jsonrpc": "2.0", "id": f"ask-{k}", "method": "session/request_permission", "params": question})
        unanswered.append((rid, f"u{k}"))
    elif method == "session/cancel":
        while unanswered:
            prompt_id, message_id = unanswered.pop(0)
            answer(prompt_id, {"messageId": message_id})
        update("s", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    elif rid is not None and method is not None:
        answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle)
