"""``python -I -S agent_launcher.py SOCKET ARGS...``: a reference agent process forked by ``agent_zygote.py``, on
this process's standard streams. Exits with the agent's status; SIGTERM, SIGINT and SIGHUP go on to the agent.
Standard library only, no ``site``: it starts in a few milliseconds."""

import json
import os
import signal
import socket
import sys

conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
socket.send_fds(conn, [json.dumps(sys.argv[2:]).encode()], [0, 1, 2])
os.close(0)  # the agent has them now: its end of input and of output are the runner's to see
os.close(1)
replies = conn.makefile("rb")
pid = int(replies.readline())


def forward(signum, _frame):
    try:  # noqa: SIM105 (no contextlib: every import costs start-up time here)
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


for each in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(each, forward)
line = replies.readline()
code = int(line.split()[1]) if line.startswith(b"exit ") else 1
os._exit(128 - code if code < 0 else code)
