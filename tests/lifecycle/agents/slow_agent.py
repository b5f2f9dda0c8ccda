"""An ACP v2 agent (raw JSON lines) that is slow, silent or noisy on purpose.

argv: CONFIG_JSON. ``stdout`` / ``stderr``: lines written first (a banner, log lines); ``exit``: then exit with
this code; ``initialize``: false to never answer it, or an error object to answer with; ``hang``: methods
never answered (``session/prompt`` included); ``errors``: {method: error object} answered with that error, after
writing ``errors_stderr`` lines to stderr; ``log``: a file every received line is appended to. Everything
else is answered at once: session/new (``s1``), session/list, session/set_config_option, session/close.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import messages, write

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
LOG = open(CONFIG["log"], "a", buffering=1) if CONFIG.get("log") else None  # noqa: SIM115


for line in CONFIG.get("stdout", []):
    write(line)
for line in CONFIG.get("stderr", []):
    sys.stderr.write(line + "\n")
sys.stderr.flush()
if "exit" in CONFIG:
    sys.exit(CONFIG["exit"])

OPTION = {"type": "boolean", "configId": "fast", "name": "Fast", "currentValue": True}
RESULTS = {
    "initialize": {"protocolVersion": 2, "info": {"name": "slow", "version": "0"}, "capabilities": {"session": {}}},
    "session/new": {"sessionId": "s1"},
    "session/list": {"sessions": []},
    "session/set_config_option": {"configOptions": [OPTION]},
    "session/close": {},
}

for message in messages(LOG.write if LOG is not None else None):
    method = message.get("method")
    if "id" not in message or method is None:
        continue
    answer = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize" and CONFIG.get("initialize", True) is not True:
        if CONFIG["initialize"] is False:
            continue
        answer["error"] = CONFIG["initialize"]
    elif method in CONFIG.get("hang", []):
        continue
    elif method in CONFIG.get("errors", {}):
        for text in CONFIG.get("errors_stderr", []):
            sys.stderr.write(text + "\n")
        sys.stderr.flush()
        time.sleep(0.2)  # the client has read the lines before the answer arrives
        answer["error"] = CONFIG["errors"][method]
    elif method in RESULTS:
        answer["result"] = RESULTS[method]
    else:
        answer["error"] = {"code": -32601, "message": "Method not found"}
    write(answer)
time.sleep(float(CONFIG.get("linger", 0)))
