"""A scripted v2 agent (raw JSON lines, not acp_session) that reaches the client's MCP-over-ACP server itself.

argv: LOGFILE. Advertises ``session.mcp.acp``; after ``session/new`` it sends ``mcp/message`` requests for the
session's ``acp`` server (``tools/list``, then a ``tools/call`` outside the session's directory) and one for a
server never declared; on a ``_poke`` request (sent after the session was closed) one more for the closed
session's server. Every line it reads is
appended to LOGFILE.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "helpers"))
from agent_io import messages, write

LOG = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115
# The MCP 2026-07-28 per-request envelope (what the TypeScript SDK's McpOverAcpCaller adds).
META = {
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
}
state = {"server": None}


def mcp(rid, server_id, method, params=None):
    body = {"serverId": server_id, "requestId": f"inner-{rid}", "method": method, "params": {**(params or {}), **META}}
    write({"jsonrpc": "2.0", "id": rid, "method": "mcp/message", "params": body})


for msg in messages(LOG.write):
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        caps = {"session": {"prompt": {}, "mcp": {"acp": {}}}}
        write(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"protocolVersion": 2, "info": {"name": "m", "version": "1"}, "capabilities": caps},
            }
        )
    elif method == "session/new":
        [server] = [s for s in params["mcpServers"] if s.get("type") == "acp"]
        state["server"] = server["serverId"]
        write({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        mcp("m1", state["server"], "tools/list")
        mcp("m2", state["server"], "tools/call", {"name": "read_text_file", "arguments": {"path": "/etc/hostname"}})
        mcp("m3", "never-declared", "tools/list")
    elif method == "_poke":  # sent by the test once session/close was answered and handled
        write({"jsonrpc": "2.0", "id": rid, "result": {}})
        mcp("m4", state["server"], "tools/list")
    elif rid is not None and method is not None:
        write({"jsonrpc": "2.0", "id": rid, "result": {}})
