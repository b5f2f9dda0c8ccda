"""A scripted ACP v2 agent for Conversation tests, speaking raw JSON lines (it does not use acp_session).

argv: STORE LOGFILE [OPTIONS_JSON]. STORE is a JSON-lines file of every update sent per session (notices
excluded), so a second process can resume a session with replay after the first one died. LOGFILE gets
every line the client sent. Work runs in one worker thread; a prompt that arrives while work runs is held
(answered only when it is inserted, after the current work ends). The prompt's first word picks a scenario:

  stream N            thought, N agent text chunks, usage_update, idle end_turn
  tools               plan (twice), a tool call with a content chunk, text, idle end_turn
  permission          a tool call needing permission (requires_action); the answer decides its status
  slow                two tool calls in progress, then waits for session/cancel: one gets a final
                      cancelled status, a late text chunk follows, then idle cancelled (ACP2-040/096)
  busy SECONDS        runs for a while, then idle end_turn
  background          a background tool call that finishes after the foreground idle
  userfirst           the user_message is sent before the prompt's answer
  notice              a notice in the middle of the turn
  die                 a few chunks, then the process exits

OPTIONS_JSON ``{"echo_chunks": true}``: the prompt is echoed as ``user_message_chunk``s (one per block, as
codex-acp does) instead of one ``user_message``.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, write
from agent_io import update as io_update

STORE_PATH, LOG_PATH = sys.argv[1], sys.argv[2]
OPTS = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
LOG = open(LOG_PATH, "a", buffering=1)  # noqa: SIM115
state_lock = threading.Condition()
busy = {}  # session id -> True while foreground work runs
held = {}  # session id -> [(request id, params)]
cancelled = set()  # session ids with a pending session/cancel
answers = {}  # our request id -> the client's answer
counter = {"msg": 0, "req": 0, "session": 0}


def update(sid, upd, store=True):
    if store and upd.get("sessionUpdate") != "notice":
        with open(STORE_PATH, "a") as f:
            f.write(json.dumps({"sid": sid, "update": upd}) + "\n")
    io_update(sid, upd)


def next_id(prefix):
    counter["msg"] += 1
    return f"{prefix}-{os.getpid()}-{counter['msg']}"


def text(value):
    return {"type": "text", "text": value}


def chunk(sid, mid, value, kind="agent_message_chunk"):
    update(sid, {"sessionUpdate": kind, "messageId": mid, "content": text(value)})


def tool(sid, tid, **fields):
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, **fields})


def state(sid, value, **fields):
    update(sid, {"sessionUpdate": "state_update", "state": value, **fields})


def ask(method, params):
    with state_lock:
        counter["req"] += 1
        rid = f"agent-{counter['req']}"
    write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    with state_lock:
        while rid not in answers:
            state_lock.wait()
        return answers.pop(rid)


def wait_cancel(sid, timeout):
    deadline = time.monotonic() + timeout
    with state_lock:
        while sid not in cancelled and time.monotonic() < deadline:
            state_lock.wait(deadline - time.monotonic())
        return sid in cancelled


def prompt_text(params):
    return "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")


def work(sid, rid, params):
    words = prompt_text(params).split()
    scenario = words[0] if words else "stream"
    mid = next_id("u")
    user = {"sessionUpdate": "user_message", "messageId": mid, "content": params["prompt"]}
    if scenario == "userfirst":
        update(sid, user)
        state(sid, "running")
        time.sleep(0.05)
        answer(rid, {"messageId": mid})
    elif OPTS.get("echo_chunks"):
        answer(rid, {"messageId": mid})
        for block in params["prompt"]:
            update(sid, {"sessionUpdate": "user_message_chunk", "messageId": mid, "content": block})
        state(sid, "running")
    else:
        answer(rid, {"messageId": mid})
        update(sid, user)
        state(sid, "running")
    reply = next_id("a")
    reason = "end_turn"
    if scenario in ("stream", "userfirst", "notice", "die"):
        count = int(words[1]) if len(words) > 1 else 3
        chunk(sid, next_id("t"), "thinking...", "agent_thought_chunk")
        for i in range(count):
            chunk(sid, reply, f"w{i} ")
            if scenario == "notice" and i == 0:
                update(sid, {"sessionUpdate": "notice", "severity": "info", "title": "heads up"})
            if scenario == "die" and i == 1:
                os._exit(3)
        update(sid, {"sessionUpdate": "usage_update", "used": 100 + count, "size": 1000})
    elif scenario == "tools":
        entry = {"content": "read", "priority": "high", "status": "pending"}
        plan = {"type": "items", "planId": "p1", "entries": [entry]}
        update(sid, {"sessionUpdate": "plan_update", "plan": plan})
        tid = next_id("tc")
        tool(sid, tid, title="Read file", kind="read", status="pending")
        tool(sid, tid, status="in_progress")
        update(
            sid,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": tid,
                "content": {"type": "content", "content": text("file body")},
            },
        )
        tool(sid, tid, status="completed")
        plan["entries"][0]["status"] = "completed"
        update(sid, {"sessionUpdate": "plan_update", "plan": plan})
        chunk(sid, reply, "done reading")
    elif scenario == "permission":
        tid = next_id("tc")
        tool(sid, tid, title="Edit file", kind="edit", status="pending")
        state(sid, "requires_action")
        result = ask(
            "session/request_permission",
            {
                "sessionId": sid,
                "title": "Edit file?",
                "options": [
                    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "no", "name": "No", "kind": "reject_once"},
                ],
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": tid}},
            },
        )
        state(sid, "running")
        outcome = (result or {}).get("outcome", {})
        approved = outcome.get("outcome") == "selected" and outcome.get("optionId") == "yes"
        tool(sid, tid, status="completed" if approved else "failed")
        chunk(sid, reply, "approved" if approved else "denied")
    elif scenario == "slow":
        first, second = next_id("tc"), next_id("tc")
        tool(sid, first, title="Long task", status="in_progress")
        tool(sid, second, title="Other task", status="in_progress")
        chunk(sid, reply, "working")
        if wait_cancel(sid, 10):
            time.sleep(0.3)  # the client marks its tool calls cancelled before anything arrives
            tool(sid, first, status="cancelled")  # after session/cancel, before the idle (ACP2-096)
            chunk(sid, reply, " late")
            reason = "cancelled"
    elif scenario == "busy":
        chunk(sid, reply, "busy")
        if wait_cancel(sid, float(words[1]) if len(words) > 1 else 0.3):
            reason = "cancelled"
    elif scenario == "background":
        tool(sid, "bg", title="Indexing", status="in_progress")
        state(sid, "running", background=[{"type": "tool_call", "toolCallId": "bg"}])
        chunk(sid, reply, "started indexing")
        state(sid, "idle", stopReason="end_turn", background=[{"type": "tool_call", "toolCallId": "bg"}])
        finish_work(sid)

        def later():
            time.sleep(0.2)
            tool(sid, "bg", status="completed")
            state(sid, "idle", stopReason="end_turn", background=[])

        threading.Thread(target=later, daemon=True).start()
        return
    state(sid, "idle", stopReason=reason)
    finish_work(sid)


def finish_work(sid):
    with state_lock:
        cancelled.discard(sid)
        queue = held.get(sid) or []
        if queue:
            rid, params = queue.pop(0)
        else:
            busy.pop(sid, None)
            return
    threading.Thread(target=work, args=(sid, rid, params), daemon=True).start()


def on_prompt(rid, params):
    sid = params["sessionId"]
    with state_lock:
        if busy.get(sid):
            held.setdefault(sid, []).append((rid, params))
            return
        busy[sid] = True
    threading.Thread(target=work, args=(sid, rid, params), daemon=True).start()


def stored(sid):
    if not os.path.exists(STORE_PATH):
        return []
    with open(STORE_PATH) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [row["update"] for row in rows if row["sid"] == sid]


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method is None:
        with state_lock:
            answers[rid] = msg.get("result")
            state_lock.notify_all()
        return
    if method == "session/cancel":
        with state_lock:
            if busy.get(params["sessionId"]):
                cancelled.add(params["sessionId"])
                state_lock.notify_all()
        return
    if method == "$/cancel_request":
        with state_lock:
            for queue in held.values():
                for item in list(queue):
                    if item[0] == params.get("requestId"):
                        queue.remove(item)
                        answer(item[0], error={"code": -32800, "message": "Request cancelled"})
        return
    if rid is None:
        return
    if method == "initialize":
        caps = {"session": {"prompt": {"image": {}, "embeddedContext": {}}}}
        return answer(rid, {"protocolVersion": 2, "info": {"name": "chat-agent", "version": "1"}, "capabilities": caps})
    if method == "session/new":
        counter["session"] += 1
        sid = f"s{os.getpid()}-{counter['session']}"
        state(sid, "idle")
        return answer(rid, {"sessionId": sid})
    if method == "session/prompt":
        return on_prompt(rid, params)
    if method == "session/resume":
        sid = params["sessionId"]
        history = stored(sid)
        if params.get("replayFrom"):
            for upd in history:
                update(sid, upd, store=False)
        # The current snapshot, carrying the last stop reason for context when the work ended normally.
        states = [upd for upd in history if upd.get("sessionUpdate") == "state_update"]
        snapshot = {"sessionUpdate": "state_update", "state": "idle"}
        if states and states[-1].get("state") == "idle" and states[-1].get("stopReason"):
            snapshot["stopReason"] = states[-1]["stopReason"]
        update(sid, snapshot, store=False)
        return answer(rid, {})
    if method == "session/close":
        return answer(rid, {})
    answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle, LOG.write)
