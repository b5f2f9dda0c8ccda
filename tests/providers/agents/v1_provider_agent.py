"""A hostile ACP v1 agent (raw JSON lines, deliberately not using acp_session) that drives the client's providers.

argv: LOGFILE. Every line the client sends is appended to LOGFILE, so a test reads back exactly what the client
answered. It answers ``initialize`` (protocolVersion 1) and ``session/new`` (session ``s1``). The text of each
``session/prompt`` is a JSON list of steps, run in order, and the prompt is answered ``end_turn`` after the last:

- ``{"call": METHOD, "params": {...}}``: send that request to the client and wait for its answer. In params the
  text ``$terminal`` becomes the terminal id of the last ``terminal/create`` answer and ``$zombie`` the pid
  of the zombie made by the last ``zombie`` step.
- ``{"zombie": true}``: start a child that exits and is never reaped (its ``/proc/PID/exe`` cannot be read).
- ``{"escape": TECHNIQUE, "pidfile": PATH}``: start a descendant of this agent that detaches by TECHNIQUE
  (``tests/providers/agents/escape.py``) and writes its pid to PATH.
- ``{"exit": CODE}``: exit at once, answering nothing.
"""

import json
import os
import subprocess
import sys
import time

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
ESCAPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "escape.py")
INIT = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "v1-provider", "version": "1"}}
state = {"terminal": None, "zombie": None, "next": 0}
children = []  # kept so the zombie is never reaped


def stat_state(pid):
    with open(f"/proc/{pid}/stat", "rb") as file:
        return file.read().rsplit(b")", 1)[1].split()[0]


def write(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    LOG.write(line)
    return json.loads(line)


def fill(value):
    if isinstance(value, str):
        return value.replace("$terminal", str(state["terminal"])).replace("$zombie", str(state["zombie"]))
    if isinstance(value, dict):
        return {key: fill(item) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item) for item in value]
    return value


def call(method, params):
    state["next"] += 1
    ours = f"agent-{state['next']}"
    write({"jsonrpc": "2.0", "id": ours, "method": method, "params": fill(params)})
    while True:
        message = read()
        if message.get("id") == ours and "method" not in message:
            result = message.get("result")
            if method == "terminal/create" and isinstance(result, dict):
                state["terminal"] = result.get("terminalId")
            return
        handle(message)  # anything else the client sends meanwhile


def run(rid, steps):
    for step in steps:
        if "call" in step:
            call(step["call"], step.get("params", {}))
        elif "zombie" in step:
            child = subprocess.Popen(["true"])
            children.append(child)
            while stat_state(child.pid) != b"Z":
                time.sleep(0.005)
            state["zombie"] = child.pid
        elif "escape" in step:
            subprocess.run([sys.executable, ESCAPE, step["escape"], step["pidfile"]], check=True)
        elif "exit" in step:
            os._exit(step["exit"])
    write({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def handle(message):
    method, rid = message.get("method"), message.get("id")
    if method is None or rid is None:
        return
    if method == "initialize":
        write({"jsonrpc": "2.0", "id": rid, "result": INIT})
    elif method == "session/new":
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        text = "".join(block.get("text", "") for block in message["params"]["prompt"])
        run(rid, json.loads(text))
    else:
        write({"jsonrpc": "2.0", "id": rid, "result": {}})


while True:
    handle(read())
