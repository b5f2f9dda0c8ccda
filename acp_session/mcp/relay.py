"""``python -m acp_session.mcp.relay SOCKET TOKEN``: the stdio MCP server a v2 agent starts for a session's
built-in tools when it takes no MCP-over-ACP. It only moves bytes: stdin to the Unix socket of the client that
gave the agent this command (after a first line with TOKEN, which names the session's server), the socket's
bytes to stdout. It ends when either side closes, so it ends with the session or the client. No imports beyond
the standard library: it starts fast and needs nothing installed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading


def _pump(read: object, write: object) -> None:
    try:
        while True:
            data = read()  # type: ignore[operator]
            if not data:
                break
            write(data)  # type: ignore[operator]
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m acp_session.mcp.relay SOCKET TOKEN", file=sys.stderr)
        return 2
    path, token = args
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        print(f"acp-session MCP relay: cannot reach the client at {path}: {exc}", file=sys.stderr)
        return 1
    sock.sendall(token.encode("ascii") + b"\n")
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()

    def to_stdout(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(stdout, view) :]

    def upstream() -> None:
        _pump(lambda: os.read(stdin, 65536), sock.sendall)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    _pump(lambda: sock.recv(65536), to_stdout)  # the client closed: the server is gone
    return 0


if __name__ == "__main__":
    sys.exit(main())
