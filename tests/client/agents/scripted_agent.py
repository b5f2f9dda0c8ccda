"""A scripted ACP v2 agent speaking raw JSON lines (deliberately not using acp_session).

argv: LOGFILE [OPTIONS_JSON]. Every line received is appended to LOGFILE so tests can validate what the
client sent. The prompt text picks a scenario (see ``prompt``); OPTIONS_JSON tweaks initialize and a few
answers (version, init_error, capabilities, authMethods, close_error, fail_repeat_init).
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import answer, serve, update, write

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
OPTS = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
held = {}  # json(request id) -> True: prompts held until $/cancel_request
asked = {}  # our request id -> description
counter = {"init": 0, "session": 0, "msg": 0, "req": 0}
DEFAULT_CAPS = {"session": {"prompt": {"image": {}}, "delete": {}}}


def ask(method, params):
    counter["req"] += 1
    rid = f"agent-{counter['req']}"
    write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    return rid


def later(seconds, fn, *args):
    timer = threading.Timer(seconds, fn, args)
    timer.daemon = True
    timer.start()


def permission(sid, tool_call_id, title="run it?"):
    return ask(
        "session/request_permission",
        {
            "sessionId": sid,
            "title": title,
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": tool_call_id}},
        },
    )


def text_of(params):
    return "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")


def prompt(rid, params):
    sid = params["sessionId"]
    text = text_of(params)
    if text == "hold":
        held[json.dumps(rid)] = True
        return
    counter["msg"] += 1
    mid = f"m{counter['msg']}"
    user = {"sessionUpdate": "user_message", "messageId": mid, "content": params["prompt"]}
    if text == "response_first":
        answer(rid, {"messageId": mid})
        time.sleep(0.05)
        update(sid, user)
        return
    update(sid, user)
    if text == "permission":
        update(sid, {"sessionUpdate": "state_update", "state": "requires_action"})
        permission(sid, "tc1")
    elif text == "peer_cancels_permission":
        perm = permission(sid, "tc1")
        later(0.3, write, {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": perm}})
    elif text == "slow_permission":
        permission(sid, "tc1")
        for i in range(5):
            update(
                sid,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": "a1",
                    "content": {"type": "text", "text": str(i)},
                },
            )
    elif text == "background":
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "bg", "status": "in_progress"})
        update(
            sid,
            {
                "sessionUpdate": "state_update",
                "state": "running",
                "background": [{"type": "tool_call", "toolCallId": "bg"}],
            },
        )
        permission(sid, "bg", "background")
        permission(sid, "fg", "foreground")
    elif text == "tools":
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "tc1", "capabilities": {"cancel": {}}})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "tc2", "capabilities": {"cancel": {}}})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "tc2", "capabilities": None})
        update(sid, {"sessionUpdate": "terminal_update", "terminalId": "t1", "capabilities": {"cancel": {}}})
    elif text == "elicit":
        ask(
            "elicitation/create",
            {
                "mode": "form",
                "sessionId": sid,
                "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        )
        write({"jsonrpc": "2.0", "method": "elicitation/complete", "params": {"elicitationId": "e1"}})
    elif text == "ext":
        ask("_acme/ping", {"n": 1})
        write({"jsonrpc": "2.0", "method": "_acme/note", "params": {"n": 2}})
    elif text == "foreign":
        update("nobody", {"sessionUpdate": "session_info_update", "title": "not yours"})
    answer(rid, {"messageId": mid})


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method is None:
        return  # a response from the client: the log file is the record
    if method == "$/cancel_request":
        key = json.dumps(params.get("requestId"))
        if held.pop(key, None):
            answer(params["requestId"], error={"code": -32800, "message": "cancelled"})
        return
    if rid is None:
        return
    if method == "initialize":
        counter["init"] += 1
        if OPTS.get("init_error"):
            return answer(rid, error=OPTS["init_error"])
        if counter["init"] > 1 and OPTS.get("fail_repeat_init"):
            return answer(rid, error={"code": -32603, "message": "no"})
        result = {
            "protocolVersion": OPTS.get("version", 2),
            "info": {"name": "scripted", "version": f"0.{counter['init']}"},
            "capabilities": OPTS.get("capabilities", DEFAULT_CAPS),
        }
        if "authMethods" in OPTS:
            result["authMethods"] = OPTS["authMethods"]
        return answer(rid, result)
    if method == "session/new":
        counter["session"] += 1
        sid = f"s{counter['session']}"
        update(sid, {"sessionUpdate": "state_update", "state": "idle"})
        return answer(rid, {"sessionId": sid})
    if method == "session/prompt":
        return prompt(rid, params)
    if method == "session/resume":
        sid = params["sessionId"]
        if params.get("replayFrom"):
            update(
                sid, {"sessionUpdate": "user_message", "messageId": "old1", "content": [{"type": "text", "text": "hi"}]}
            )
            update(
                sid,
                {"sessionUpdate": "agent_message", "messageId": "old2", "content": [{"type": "text", "text": "yo"}]},
            )
        update(sid, {"sessionUpdate": "state_update", "state": "idle"})
        return answer(rid, {})
    if method == "session/close":
        if OPTS.get("close_error"):
            return answer(rid, error=OPTS["close_error"])
        return answer(rid, {})
    if method == "session/set_config_option":
        if params.get("configId") == "mode" and params.get("value") in ("ask", "code"):
            return answer(
                rid,
                {
                    "configOptions": [
                        {
                            "type": "select",
                            "configId": "mode",
                            "name": "Mode",
                            "currentValue": params["value"],
                            "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
                        },
                        {"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": False},
                    ]
                },
            )
        if params.get("configId") == "fast" and isinstance(params.get("value"), bool):
            return answer(
                rid,
                {
                    "configOptions": [
                        {"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": params["value"]}
                    ]
                },
            )
        return answer(rid, error={"code": -32602, "message": "Invalid params"})
    if method == "session/list":
        pages = {None: (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": (["d"], None)}
        ids, nxt = pages[params.get("cursor")]
        result = {"sessions": [{"sessionId": i, "cwd": "/w"} for i in ids]}
        if nxt:
            result["nextCursor"] = nxt
        return answer(rid, result)
    if method == "session/delete":
        if params["sessionId"] == "gone":
            return answer(rid, error={"code": -32002, "message": "Resource not found"})
        return answer(rid, {})
    if method in ("tool_call/cancel", "terminal/cancel", "auth/login", "auth/logout"):
        return answer(rid, {})
    if method == "_acme/echo":
        return answer(rid, params)
    answer(rid, error={"code": -32601, "message": "Method not found"})


serve(handle, LOG.write)
