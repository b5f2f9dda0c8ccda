"""The line I/O every scripted test agent repeats: JSON-RPC messages one per line on stdout, read from stdin.

Stdlib only, and imported by path rather than as ``tests.helpers.agent_io``: the agents run as subprocess scripts
(some on purpose where acp_session is not importable), so an agent puts this folder on ``sys.path`` first::

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
    from agent_io import answer, serve, update, write

Writes are whole lines under one lock, so threads of an agent never interleave inside a message.
The agents that put many lines into one write on purpose (order_agent, flood_agent, v1_requests_agent, the
permission storm's requests) keep their own writer; tree_agent speaks no JSON-RPC.
"""

import json
import sys
import threading

lock = threading.Lock()
COMPACT = False
"""Encode messages without spaces (``{"a":1}``); an agent that counts bytes on the wire sets it."""


def write(obj):
    """Write one line: ``bytes`` as they are, a ``str`` as it is, anything else as JSON."""
    if isinstance(obj, bytes):
        data = obj
    elif isinstance(obj, str):
        data = (obj + "\n").encode()
    else:
        data = (json.dumps(obj, separators=(",", ":")) if COMPACT else json.dumps(obj)).encode() + b"\n"
    with lock:
        sys.stdout.flush()  # anything the agent wrote through the text layer goes first
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def answer(rid, result=None, error=None):
    """The response to request ``rid``: ``error`` when given, else ``result``."""
    msg = {"jsonrpc": "2.0", "id": rid}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    write(msg)


def notify(method, params):
    write({"jsonrpc": "2.0", "method": method, "params": params})


def update(sid, upd):
    """A ``session/update`` notification for session ``sid``."""
    notify("session/update", {"sessionId": sid, "update": upd})


def messages(log=None):
    """Each JSON object read from stdin until it closes. A blank line, one that is not JSON or not an object is
    skipped; ``log`` (a callable) gets every other line as received, stripped, with its newline."""
    for data in sys.stdin.buffer:
        line = data.decode("utf-8", "replace").strip()
        if not line:
            continue
        if log is not None:
            log(line + "\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            yield msg


def serve(handle, log=None):
    """Call ``handle`` with each message of ``messages(log)``. An exception in it goes to stderr and the agent
    reads on: the test notices the missing answer, and the agent's other sessions keep working."""
    for msg in messages(log):
        try:
            handle(msg)
        except Exception as exc:
            sys.stderr.write(f"agent error: {exc!r}\n")
            sys.stderr.flush()
