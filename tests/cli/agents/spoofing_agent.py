"""A hostile ACP v2 agent for the terminal tests: every string it sends that the CLI may show carries escape
sequences and controls (``EVIL``), so a test can look for them in the bytes that reach the terminal.

argv: LOGFILE. Every line the client sends is appended to LOGFILE, so a test can see what the user answered.
Each string is ``<field name>[EVIL]``: the name shows the field was rendered, EVIL must not reach the terminal.
The session id, the slash commands and the session title are hostile too. Prompts (the first word):

  all   thought, Markdown text with a link, plan, a tool call (title, unknown kind and status, text), a diff of
        a hostile path, a notice, usage with a hostile currency, a finished tool call with hostile raw output,
        then a permission question whose first option (allow_always) is named to look like the reject key; the
        turn ends with stop reason ``error`` and a hostile error message; the reply says which option came back
  odd   a text chunk and an unknown, hostile stop reason

EVIL and SPOOFED_NAME are in ``tests/helpers/hostile_strings.py``, shared with the tests.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, update, write
from hostile_strings import EVIL, SPOOFED_NAME


def evil(name):
    return f"{name}[{EVIL}]"


SESSION = "sid-" + EVIL
LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
state = {"req": 0, "pending": {}}


def chunk(kind, mid, text):
    update(SESSION, {"sessionUpdate": kind, "messageId": mid, "content": {"type": "text", "text": text}})


def idle(reason, **fields):
    update(SESSION, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason, **fields})


def turn_all():
    chunk("agent_thought_chunk", "t1", evil("thought"))
    chunk("agent_message_chunk", "m1", evil("message") + " see [the docs](https://evil.example/steal) now\n\n")
    entries = [{"content": evil("plan-entry"), "priority": "high", "status": evil("plan-status")}]
    update(SESSION, {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": entries}})
    diff = {
        "type": "diff",
        "changes": [{"operation": "modify", "path": "/tmp/" + evil("diff-path")}],
        "patch": {"format": "unified", "text": "--- a\n+++ b\n@@ -1 +1 @@\n-" + evil("old") + "\n+" + evil("new")},
    }
    call = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tc1",
        "title": evil("tool-title"),
        "kind": evil("tool-kind"),
        "status": evil("tool-status"),
        "content": [{"type": "content", "content": {"type": "text", "text": evil("tool-text")}}],
    }
    update(SESSION, call)
    edit = {"sessionUpdate": "tool_call_update", "toolCallId": "tc3", "title": "edit", "kind": "edit"}
    update(SESSION, {**edit, "status": "completed", "content": [diff]})
    notice = {"sessionUpdate": "notice", "severity": evil("severity"), "title": evil("notice"), "description": "d"}
    update(SESSION, notice)
    cost = {"amount": 1.5, "currency": evil("currency")}
    update(SESSION, {"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": cost})
    done = {"title": "second", "status": "completed", "rawOutput": evil("raw-output")}
    update(SESSION, {"sessionUpdate": "tool_call_update", "toolCallId": "tc2", **done})
    chosen = ask(
        "session/request_permission",
        {
            "sessionId": SESSION,
            "title": evil("question"),
            "options": [
                {"optionId": "opt-allow-always", "name": SPOOFED_NAME, "kind": "allow_always"},
                {"optionId": "opt-reject", "name": evil("Reject"), "kind": "reject_once"},
            ],
        },
    )
    chunk("agent_message_chunk", "m2", f"answered {chosen}\n")
    idle("error", error={"code": -32603, "message": evil("stop-error")})


def turn_odd():
    chunk("agent_message_chunk", "m3", "odd turn\n")
    idle(evil("stop-reason"))


def ask(method, params):
    """Send a request and read messages until its answer (this agent does one thing at a time)."""
    state["req"] += 1
    rid = f"agent-{state['req']}"
    write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    for line in sys.stdin.buffer:
        LOG.write(line.decode("utf-8", "replace"))
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            outcome = (msg.get("result") or {}).get("outcome", {})
            return outcome.get("optionId", outcome.get("outcome"))
    sys.exit(0)


def handle(msg):
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None:
        return
    if method == "initialize":
        info = {"name": evil("agent-name"), "version": "1"}
        answer(rid, {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}})
    elif method == "session/new":
        update(SESSION, {"sessionUpdate": "state_update", "state": "idle"})
        answer(rid, {"sessionId": SESSION})
        commands = [{"type": "command", "name": evil("cmd"), "description": evil("cmd-description")}]
        update(SESSION, {"sessionUpdate": "available_commands_update", "availableCommands": commands})
        update(SESSION, {"sessionUpdate": "session_info_update", "title": evil("session-title")})
    elif method == "session/prompt":
        text = "".join(block.get("text", "") for block in params.get("prompt", []))
        answer(rid, {"messageId": "u1"})
        update(SESSION, {"sessionUpdate": "user_message", "messageId": "u1", "content": params["prompt"]})
        update(SESSION, {"sessionUpdate": "state_update", "state": "running"})
        turn_odd() if text.strip() == "odd" else turn_all()
    elif method == "session/close":
        answer(rid, {})
    else:
        answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle, LOG.write)
