"""A scripted ACP v1 agent speaking raw JSON lines (deliberately not using acp_session).

argv: LOGFILE SCRIPT_JSON. Every line received is appended to LOGFILE. SCRIPT_JSON says how to answer:

* ``initialize``: the result (default: a plain v1 answer); ``reject_v2``: answer a v2-shaped offer
  (one with ``info``) with this error object instead; ``reject_repeat``: answer every ``initialize`` after
  the first with this error object (an agent that may be initialized only once);
* ``new``: extra fields of the ``session/new`` result (``modes``, ``models``, ``configOptions``);
* ``load``: updates replayed before the ``session/load`` result (the result itself is ``{}``);
* ``prompts``: a list, one per ``session/prompt`` in order: ``{"updates": [...], "result": {...}}`` or
  ``{"updates": [...], "error": {...}}``; ``"numbered": N`` adds N numbered agent chunks;
  ``"ask": {method, params}`` sends a request to the client after the updates and waits for its answer
  before finishing (the answer is logged); ``"others": N`` then sends N ``agent_message_chunk`` updates
  naming sessions it never opened (``other-0`` ... ``other-N-1``) after the answer;
  ``"hold": true`` leaves the prompt unanswered until the next ``session/prompt`` arrives, which answers it
  (``result``) before anything else (an agent that cancels a running prompt when a new one comes), or, with
  ``"held": "after"`` on that next step, right after the next prompt's own answer;
* ``answers``: method -> result for any other method (default: ``{}``); ``errors``: method -> error.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, messages, write

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
SCRIPT = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
DEFAULT_INIT = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "v1-script", "version": "1"}}
prompts = list(SCRIPT.get("prompts", []))
state = {"session": 0, "asked": 0}
held = []  # (prompt request id, step) of prompts answered only when the next prompt arrives
waiting = {}  # our request id -> (prompt request id, step)


def updates(sid, items):
    for item in items:
        write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": item}})


def finish(rid, step):
    if "error" in step:
        answer(rid, error=step["error"])
    else:
        answer(rid, step.get("result", {"stopReason": "end_turn"}))
    others = step.get("others", 0)
    for n in range(others):  # sessions nobody opened, one id each
        updates(f"other-{n}", [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}])


def release_held():
    while held:
        finish(*held.pop(0))


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method is None:  # the client's answer to our request
        pending = waiting.pop(json.dumps(rid), None)
        if pending is not None:
            prompt_id, sid, step = pending
            updates(sid, step.get("after", []))
            finish(prompt_id, step)
            release_held()
        return
    if rid is None:
        return  # notifications (session/cancel) are only logged
    if method in SCRIPT.get("errors", {}):
        answer(rid, error=SCRIPT["errors"][method])
    elif method == "initialize":
        state["initialized"] = state.get("initialized", 0) + 1
        if state["initialized"] > 1 and "reject_repeat" in SCRIPT:
            answer(rid, error=SCRIPT["reject_repeat"])
        elif "info" in params and "reject_v2" in SCRIPT:
            answer(rid, error=SCRIPT["reject_v2"])
        else:
            answer(rid, SCRIPT.get("initialize", DEFAULT_INIT))
    elif method == "session/new":
        state["session"] += 1
        answer(rid, {"sessionId": f"s{state['session']}", **SCRIPT.get("new", {})})
    elif method == "session/load":
        updates(params.get("sessionId"), SCRIPT.get("load", []))
        answer(rid, SCRIPT.get("load_result", {}))
    elif method == "session/prompt":
        step = prompts.pop(0) if prompts else {"updates": []}
        sid = params.get("sessionId")
        if step.get("held") != "after":
            release_held()
        updates(sid, step.get("updates", []))
        numbered = step.get("numbered", 0)  # that many agent_message_chunk updates: "0000", "0001", ...
        updates(
            sid,
            [
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"{n:04d}"}}
                for n in range(numbered)
            ],
        )
        if "ask" in step:
            state["asked"] += 1
            ours = f"q{state['asked']}"
            waiting[json.dumps(ours)] = (rid, sid, step)
            write({"jsonrpc": "2.0", "id": ours, "method": step["ask"]["method"], "params": step["ask"]["params"]})
        elif step.get("hold"):
            held.append((rid, step))
        else:
            finish(rid, step)
            release_held()
    else:
        answer(rid, SCRIPT.get("answers", {}).get(method, {}))


for message in messages(LOG.write):
    handle(message)
