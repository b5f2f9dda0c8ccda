"""An ACP v2 agent (raw JSON lines) that starts other processes, as real agents do.

argv: ROLE CONFIG_JSON. Roles:
- ``agent``: answers ``initialize``; with ``helper`` set it first starts a helper process (``helper`` role) and
  writes ``helper <pid>`` on stderr.
- ``wrapper``: starts the real agent (``agent`` role, same CONFIG) with this process's stdin/stdout/stderr, as
  codex-acp's node wrapper starts its native binary, writes ``child <pid>`` on stderr and waits for it (or, with
  ``detach``, exits at once, leaving it running in the group).
- ``helper``: sleeps; ignores SIGTERM with ``helper_ignores_term``.

CONFIG: ``ignore_eof`` (the agent keeps running after stdin ends), ``ignore_term`` (the agent ignores SIGTERM),
``helper`` (start a helper), ``helper_ignores_term``, ``detach`` (wrapper), ``exit_after_init`` (the agent exits
with code 3 right after answering initialize, leaving its helper behind).
"""

import json
import os
import signal
import subprocess
import sys
import time

ROLE = sys.argv[1]
CONFIG = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}


def me(role):
    return [sys.executable, os.path.abspath(__file__), role, json.dumps(CONFIG)]


def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def sleep_forever():
    while True:
        time.sleep(60)


def helper():
    if CONFIG.get("helper_ignores_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleep_forever()


def wrapper():
    child = subprocess.Popen(me("agent"))  # inherits stdin, stdout and stderr
    say(f"child {child.pid}")
    if CONFIG.get("detach"):
        return
    sys.exit(child.wait())


def agent():
    if CONFIG.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if CONFIG.get("helper"):
        started = subprocess.Popen(
            me("helper"), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        say(f"helper {started.pid}")
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {"protocolVersion": 2, "info": {"name": "tree", "version": "0"}, "capabilities": {}}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
            sys.stdout.flush()
            if CONFIG.get("exit_after_init"):
                sys.exit(3)
        elif "id" in message and "method" in message:
            error = {"code": -32601, "message": "Method not found"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\n")
            sys.stdout.flush()
    say("stdin ended")
    if CONFIG.get("ignore_eof"):
        sleep_forever()


{"agent": agent, "wrapper": wrapper, "helper": helper}[ROLE]()
