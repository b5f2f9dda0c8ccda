"""A small MCP server on the official SDK for the /mcp tests: ``echo`` and ``add``.

argv: ``stdio`` | ``http PORT``. Over HTTP it serves streamable HTTP on 127.0.0.1:PORT/mcp and checks the
``Authorization`` header when ``MCP_TEST_TOKEN`` is set (to show configured headers reach it).
"""

import os
import sys

from mcp.server import MCPServer

server = MCPServer("echo-test")


@server.tool()
def echo(text: str) -> str:
    """Return the text, prefixed so a test can tell it went through this server."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def whoami() -> str:
    """Which environment variable MCP_TEST_GREETING the server was started with."""
    return os.environ.get("MCP_TEST_GREETING", "(unset)")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
