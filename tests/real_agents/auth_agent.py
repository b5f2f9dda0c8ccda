"""A v1 agent that wants a login, in raw JSON lines (deliberately not using acp_session).

It advertises two auth methods, a plain one and codex-acp's ``env_var`` shape, and answers ``session/new`` and
``session/list`` with -32000 "Authentication required" until ``authenticate`` succeeds with ``x-key``, which
needs X_KEY in its environment. A prompt is answered "pong", then ``end_turn``.

--env-dump PATH   write the names of the environment variables it got, and HOME, to PATH (JSON)
--grandchild PATH start ``sleep 300`` in a session of its own (so it leaves the agent's process group) and
                  write its pid to PATH
"""

import json
import os
import subprocess
import sys

AUTH_METHODS = [
    {"id": "plain-login", "name": "Log in", "description": "Log in through the agent"},
    {"type": "env_var", "id": "x-key", "name": "Use X_KEY", "description": "Set X_KEY", "vars": [{"name": "X_KEY"}]},
]
REQUIRED = {"code": -32000, "message": "Authentication required"}


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    dump = option("--env-dump")
    if dump:
        with open(dump, "w") as f:
            json.dump({"names": sorted(os.environ), "home": os.environ.get("HOME")}, f)
    pidfile = option("--grandchild")
    if pidfile:
        child = subprocess.Popen(
            ["sleep", "300"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        with open(pidfile, "w") as f:
            f.write(str(child.pid))
    logged_in = False
    for line in sys.stdin:
        message = json.loads(line)
        rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if rid is None or method is None:
            continue
        result = error = None
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"list": {}}},
                "authMethods": AUTH_METHODS,
                "agentInfo": {"name": "auth-agent", "version": "1.0.0"},
            }
        elif method == "authenticate":
            if params.get("methodId") == "x-key" and os.environ.get("X_KEY"):
                logged_in = True
                result = {}
            else:
                error = {"code": -32602, "message": "X_KEY is not set"}
        elif method in ("session/new", "session/list") and not logged_in:
            error = REQUIRED
        elif method == "session/new":
            result = {"sessionId": "s-1"}
        elif method == "session/list":
            result = {"sessions": [{"sessionId": "s-1", "cwd": os.getcwd()}]}
        elif method == "session/prompt":
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "pong"}}
            write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1", "update": chunk}})
            result = {"stopReason": "end_turn"}
        else:
            error = {"code": -32601, "message": "Method not found"}
        if error is not None:
            write({"jsonrpc": "2.0", "id": rid, "error": error})
        else:
            write({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
