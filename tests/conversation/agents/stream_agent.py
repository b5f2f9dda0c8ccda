"""A scripted ACP v2 agent for the session-level stream tests, speaking raw JSON lines (not using acp_session).

argv: LOGFILE. LOGFILE gets every line the client sent. One worker thread per prompt; a prompt that arrives
while work runs is held (answered when inserted). The prompt's first word picks a scenario:

  messages N MS   N agent messages of one chunk each ("m0" .. "m<N-1>", ids msg-0 ..), MS milliseconds apart,
                  then idle end_turn
  later           replies "ok" and ends (idle end_turn); 0.2 s later, between turns: a new background tool
                  call (id bg-1, a state snapshot listing it), a message the agent sends on its own
                  ("index ready", id note-1), the tool call completed, a snapshot with no background work
  compact         a compaction with a two-chunk summary, then "compacted", idle end_turn
  busy            "working", then waits for session/cancel or session/close: idle cancelled
  anything else   replies "ok"

session/close cancels running work (its idle cancelled is sent first), answers held prompts -32800, then
answers; later prompts for the session get -32002.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, update

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
lock = threading.Condition()
busy = {}  # session id -> True while foreground work runs
held = {}  # session id -> [(request id, params)]
cancelled = set()
closed = set()
counter = {"session": 0, "msg": 0}


def chunk(sid, mid, value, kind="agent_message_chunk"):
    update(sid, {"sessionUpdate": kind, "messageId": mid, "content": {"type": "text", "text": value}})


def state(sid, value, **fields):
    update(sid, {"sessionUpdate": "state_update", "state": value, **fields})


def work(sid, rid, params):
    words = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text").split()
    scenario = words[0] if words else ""
    with lock:
        counter["msg"] += 1
        n = counter["msg"]
    user = f"u{n}"
    answer(rid, {"messageId": user})
    update(sid, {"sessionUpdate": "user_message", "messageId": user, "content": params["prompt"]})
    state(sid, "running")
    reason = "end_turn"
    if scenario == "messages":
        count, pause = int(words[1]), int(words[2]) / 1000
        for index in range(count):
            chunk(sid, f"msg-{index}", f"m{index}")
            time.sleep(pause)
    elif scenario == "compact":
        cid = f"cmp-{n}"
        update(sid, {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "in_progress"})
        for piece in ("Earlier: a greeting. ", "Nothing else."):
            update(
                sid,
                {
                    "sessionUpdate": "compaction_summary_chunk",
                    "compactionId": cid,
                    "content": {"type": "text", "text": piece},
                },
            )
        update(sid, {"sessionUpdate": "compaction_update", "compactionId": cid, "status": "completed"})
        chunk(sid, f"a{n}", "compacted")
    elif scenario == "busy":
        chunk(sid, f"a{n}", "working")
        with lock:
            while sid not in cancelled:
                lock.wait()
        reason = "cancelled"
    else:
        chunk(sid, f"a{n}", "ok")
    state(sid, "idle", stopReason=reason)
    if scenario == "later":
        threading.Thread(target=later, args=(sid,), daemon=True).start()
    finish(sid)


def later(sid):
    time.sleep(0.2)
    bg = [{"type": "tool_call", "toolCallId": "bg-1"}]
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "bg-1", "title": "Index", "status": "in_progress"})
    state(sid, "idle", background=bg)
    chunk(sid, "note-1", "index ready")
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "bg-1", "status": "completed"})
    state(sid, "idle", background=[])


def finish(sid):
    with lock:
        cancelled.discard(sid)
        queue = held.get(sid) or []
        if queue and sid not in closed:
            rid, params = queue.pop(0)
        else:
            busy.pop(sid, None)
            lock.notify_all()
            return
    threading.Thread(target=work, args=(sid, rid, params), daemon=True).start()


def close(rid, sid):
    with lock:
        closed.add(sid)
        for held_rid, _ in held.pop(sid, []):
            answer(held_rid, error={"code": -32800, "message": "Request cancelled"})
        if busy.get(sid):
            cancelled.add(sid)
            lock.notify_all()
            while busy.get(sid):
                lock.wait()
    answer(rid, {})


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method == "session/cancel":
        with lock:
            if busy.get(params["sessionId"]):
                cancelled.add(params["sessionId"])
                lock.notify_all()
        return
    if rid is None or method is None:
        return
    if method == "initialize":
        return answer(
            rid,
            {"protocolVersion": 2, "info": {"name": "stream-agent", "version": "1"}, "capabilities": {"session": {}}},
        )
    if method == "session/new":
        counter["session"] += 1
        sid = f"s{counter['session']}"
        state(sid, "idle")
        return answer(rid, {"sessionId": sid})
    if method == "session/prompt":
        sid = params["sessionId"]
        with lock:
            if sid in closed:
                return answer(rid, error={"code": -32002, "message": "Resource not found"})
            if busy.get(sid):
                held.setdefault(sid, []).append((rid, params))
                return
            busy[sid] = True
        threading.Thread(target=work, args=(sid, rid, params), daemon=True).start()
        return
    if method == "session/close":
        threading.Thread(target=close, args=(rid, params["sessionId"]), daemon=True).start()
        return
    answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle, LOG.write)
