"""A tiny agent speaking raw JSON lines on stdin/stdout (deliberately not using acp_session).

Methods: echo (result = params), sleep {seconds} (answers later; $/cancel_request answers -32800 now),
burst {count} (that many "tick" notifications, then the result), drip {lines, gap} (like raw, but each line
and the result alone, ``gap`` seconds apart), ask {method, params} (sends that
request to the client and returns the client's answer), crash {code, stderr: [lines]} (exits without
answering), raw {lines: [str]} (writes those lines verbatim, then the result), ignore (never answers).
Every line received is also logged to stderr as "GOT <line>" when started with --log.
"""

import json
import os
import sys
import threading
import time

from agent_io import answer, messages, write  # this folder, sys.path[0] of the script

lock = threading.Lock()  # the timers of pending sleeps
timers = {}
waiting = {}  # our request id -> original request id
log = "--log" in sys.argv
stubborn = "--stubborn" in sys.argv


def finish_sleep(rid):
    with lock:
        pending = timers.pop(json.dumps(rid), None)
    if pending is not None:
        answer(rid, {"slept": True})


def handle(msg):
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    if method is None:
        origin = waiting.pop(json.dumps(rid), None)
        if origin is not None:
            answer(origin, {"client_said": msg.get("result", msg.get("error"))})
        return
    if method == "$/cancel_request":
        key = json.dumps(params.get("requestId"))
        with lock:
            timer = timers.pop(key, None)
        if timer is not None:
            timer.cancel()
            answer(params["requestId"], error={"code": -32800, "message": "cancelled"})
        return
    if rid is None:
        return
    if method == "echo":
        answer(rid, params)
    elif method == "sleep":
        timer = threading.Timer(params.get("seconds", 10), finish_sleep, (rid,))
        timer.daemon = True
        with lock:
            timers[json.dumps(rid)] = timer
        timer.start()
    elif method == "burst":
        for i in range(params.get("count", 10)):
            write({"jsonrpc": "2.0", "method": "tick", "params": {"n": i}})
        answer(rid, {"sent": params.get("count", 10)})
    elif method == "ask":
        our_id = "agent-" + str(rid)
        waiting[json.dumps(our_id)] = rid
        write({"jsonrpc": "2.0", "id": our_id, "method": params["method"], "params": params.get("params")})
    elif method == "crash":
        for line in params.get("stderr", []):
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        os._exit(params.get("code", 1))
    elif method == "raw":
        for line in params.get("lines", []):
            write(line)
        answer(rid, "done")
    elif method == "drip":
        for line in params.get("lines", []):
            time.sleep(params.get("gap", 0.02))
            write(line)
        time.sleep(params.get("gap", 0.02))
        answer(rid, "dripped")
    elif method == "ignore":
        pass
    else:
        answer(rid, error={"code": -32601, "message": "Method not found"})


def got(line):
    sys.stderr.write("GOT " + line)
    sys.stderr.flush()


def main():
    if stubborn:
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for msg in messages(got if log else None):
        handle(msg)
    if stubborn:
        import time

        time.sleep(60)
    for timer in list(timers.values()):
        timer.cancel()


if __name__ == "__main__":
    main()
