"""Shared pieces of the MCP tests: the reference agent, the test MCP server (stdio and HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from acp_session import Conversation

REFERENCE = [sys.executable, "-m", "acp_conformance.agent"]
ECHO_SERVER = str(Path(__file__).parent / "servers" / "echo_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_echo_server() -> Iterator[str]:
    """The test MCP server over streamable HTTP on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, ECHO_SERVER, "http", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the HTTP MCP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def mcp_prompt(server: str, tool: str, arguments: dict[str, Any]) -> str:
    return f"/mcp {server} {tool} {json.dumps(arguments)}"


def mcp_calls(conversation: Conversation) -> list[Any]:
    """The tool calls the reference agent's /mcp reported, in order."""
    return [c for c in conversation.state.tool_calls.values() if str(c.tool_call_id).startswith("tc-mcp")]
