"""A misbehaving ACP v2 agent for the robustness tests, speaking raw bytes (deliberately not using acp_session).

argv: LOGFILE CONFIG_JSON. Every line the client sends is appended to LOGFILE (one JSON message per line), so a
test can assert exactly what the client answered.

It answers ``initialize``, ``session/new`` (sessions ``s1``, ``s2``, ...), ``session/prompt``, ``session/close``
and ``session/set_config_option`` with plain results, unless CONFIG names a script for that moment. A script is
a list of steps, run in order:

- ``{"raw": TEXT}``: write TEXT and a newline, verbatim; ``{"raw_hex": HEX}``: write those bytes verbatim;
  ``{"raw_file": PATH}``: write the file's bytes verbatim;
- ``{"update": UPDATE, "session": SID}``: a ``session/update`` notification (session defaults to the current one);
- ``{"chunks": N, "session": SID, "message": MID}``: N ``agent_message_chunk`` updates with texts ``c0``, ``c1``, ...;
- ``{"answer": RESULT}`` / ``{"error": ERROR}``: answer the request that triggered the script;
- ``{"request": METHOD, "params": PARAMS, "id": ID}``: send a request to the client;
- ``{"permissions": N}``: N ``session/request_permission`` requests at once (ids ``p0`` ... ``pN-1``);
- ``{"spread": N}``: N rounds of one chunk to every session opened so far (text ``s3-c7``), interleaved;
- ``{"marker": NAME}``: the update ``agent_message_chunk`` with text NAME in message ``marker`` (tests wait for it);
- ``{"block": true}``: stop reading and writing for good (the test kills the process);
- ``{"stderr": TEXT, "width": W, "repeat": N}``: write TEXT * W to stderr N times; ``{"exit": CODE}``: exit at once.

Script keys in CONFIG: ``after_new`` (after answering the first session/new), ``on_prompt``, ``on_close``,
``on_set_config``. CONFIG ``capabilities`` replaces the advertised agent capabilities; with ``report_environ`` the
initialize result's ``_meta.environ`` lists the names in this process's initial environment.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
import agent_io
from agent_io import answer, messages, update, write

agent_io.COMPACT = True  # no spaces, as this agent has always written its messages

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
CONFIG = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
state = {"sessions": 0, "messages": 0, "current": "s1", "after_new_done": False}
CAPS = {"session": {"prompt": {}}}


def chunk(sid, mid, text):
    return {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": {"type": "text", "text": text}}


def run(script, rid=None):
    for step in script:
        sid = step.get("session", state["current"])
        if "raw" in step:
            write(step["raw"].encode() + b"\n")
        elif "raw_hex" in step:
            write(bytes.fromhex(step["raw_hex"]))
        elif "raw_file" in step:
            with open(step["raw_file"], "rb") as f:
                write(f.read())
        elif "update" in step:
            update(sid, step["update"])
        elif "chunks" in step:
            mid = step.get("message", "a1")
            lines = [
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": sid, "update": chunk(sid, mid, f"c{i}")},
                    },
                    separators=(",", ":"),
                )
                for i in range(step["chunks"])
            ]
            write(("\n".join(lines) + "\n").encode())
        elif "answer" in step:
            answer(rid, step["answer"])
        elif "error" in step:
            answer(rid, error=step["error"])
        elif "request" in step:
            write({"jsonrpc": "2.0", "id": step["id"], "method": step["request"], "params": step.get("params", {})})
        elif "permissions" in step:
            params = {
                "sessionId": sid,
                "title": "?",
                "options": [{"optionId": "yes", "name": "Y", "kind": "allow_once"}],
            }
            write(
                b"".join(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": f"p{i}", "method": "session/request_permission", "params": params}
                    ).encode()
                    + b"\n"
                    for i in range(step["permissions"])
                )
            )
        elif "spread" in step:
            for i in range(step["spread"]):
                for n in range(1, state["sessions"] + 1):
                    update(f"s{n}", chunk(f"s{n}", "a1", f"s{n}-c{i}"))
        elif "marker" in step:
            update(sid, chunk(sid, "marker", step["marker"]))
        elif "block" in step:
            while True:
                time.sleep(3600)
        elif "stderr" in step:
            text = step["stderr"] * step.get("width", 1)
            for _ in range(step.get("repeat", 1)):
                sys.stderr.write(text)
            sys.stderr.flush()
        elif "exit" in step:
            os._exit(step["exit"])


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method is None or rid is None:
        return  # the client's answers and notifications are only logged
    if method == "initialize":
        caps = CONFIG.get("capabilities", CAPS)
        result = {"protocolVersion": 2, "info": {"name": "hostile", "version": "0"}, "capabilities": caps}
        if CONFIG.get("report_environ"):  # the environment this process was started with, as the kernel saw it
            with open("/proc/self/environ", "rb") as f:
                names = sorted(item.split(b"=", 1)[0].decode() for item in f.read().split(b"\0") if item)
            result["_meta"] = {"environ": names}
        answer(rid, result)
    elif method == "session/new":
        state["sessions"] += 1
        sid = f"s{state['sessions']}"
        state["current"] = sid
        answer(rid, {"sessionId": sid})
        if not state["after_new_done"]:
            state["after_new_done"] = True
            run(CONFIG.get("after_new", []))
    elif method == "session/prompt":
        state["current"] = params.get("sessionId", state["current"])
        if "on_prompt" in CONFIG:
            run(CONFIG["on_prompt"], rid)
        else:
            state["messages"] += 1
            answer(rid, {"messageId": f"u{state['messages']}"})
    elif method == "session/close":
        if "on_close" in CONFIG:
            run(CONFIG["on_close"], rid)
        else:
            answer(rid, {})
    elif method == "session/set_config_option":
        if "on_set_config" in CONFIG:
            run(CONFIG["on_set_config"], rid)
        else:
            answer(rid, {"configOptions": []})
    else:
        answer(rid, error={"code": -32601, "message": "Method not found"})


def main():
    for msg in messages(LOG.write):
        handle(msg)


if __name__ == "__main__":
    main()
