"""A warm parent for reference agent processes: ``python agent_zygote.py SOCKET`` imports the agent once, then forks
one agent process per connection to SOCKET, on the standard streams the connecting launcher hands over.

The mutation tests run the whole v2 check set against ~90 broken variants of the reference agent, about 800 agent
processes; starting an interpreter and importing the agent for each would cost minutes of CPU. The runner still
starts a real process per agent (``agent_launcher.py``, a bare ``python -I -S``), which passes its stdin, stdout
and stderr here; the forked agent reads and writes those very pipes, so the runner talks to a real agent process
over real pipes, as ever. The launcher mirrors the agent: it exits with the agent's exit status and passes
SIGTERM, SIGINT and SIGHUP on; if it dies, its agent is killed.

Protocol on the socket: the launcher sends its argument list (JSON) with fds 0, 1, 2 attached; the zygote answers
``PID\\n`` once the agent runs and ``exit CODE\\n`` when it has exited (CODE as ``os.waitstatus_to_exitcode``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import traceback

import acp_conformance.agent.__main__ as agent_main  # imported once, here, for every agent forked later

# What the agent imports only on demand (its variants; its v1 front and v1's types, on a v1 offer), warm in every
# fork as well.
import acp_conformance.agent.v1_front
import acp_conformance.agent.variants  # noqa: F401
import acp_session.protocol.v1.convert  # noqa: F401


def _run_agent(conn: socket.socket, server: socket.socket, fds: list[int], argv: list[str]) -> None:
    """In the forked child: become the agent on the launcher's streams."""
    code = 1
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        server.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.argv = ["acp-reference-agent", *argv]
        agent_main.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(128)
    children: dict[int, socket.socket] = {}  # agent pid -> its launcher's connection

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    try:
        while True:
            readable, _, _ = select.select([server, *children.values()], [], [], 0.02)
            for ready in readable:
                if ready is server:
                    conn, _ = server.accept()
                    message, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
                    pid = os.fork()
                    if pid == 0:
                        _run_agent(conn, server, fds, json.loads(message))
                    for fd in fds:
                        os.close(fd)
                    conn.sendall(f"{pid}\n".encode())
                    children[pid] = conn
                elif not ready.recv(64):  # the launcher is gone: so is its agent
                    pid = next(p for p, c in children.items() if c is ready)
                    os.kill(pid, signal.SIGKILL)
            while children:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                conn = children.pop(pid, None)
                if conn is not None:
                    with contextlib.suppress(OSError):  # the launcher is gone
                        conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                    conn.close()
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1])
