"""The reference agent's ``--broken`` modes of the remote server: each breaks one rule of the remote transport, for
testing that ``acp-conformance --url`` (and clients) notice. They plug into the library's server through its
``ServerHooks`` (``acp_session.server.hooks``), which follow every rule unless told otherwise.
"""

from __future__ import annotations

import anyio

from acp_session.server import ServerHooks

__all__ = ["REMOTE_BROKEN_MODES", "BrokenRules", "hooks_for"]

REMOTE_BROKEN_MODES: dict[str, str] = {
    "wrong-stream": "with --listen: answer session-scoped POSTs on the connection's stream, not the session's",
    "drop-cookies": "with --listen: set the affinity cookie for another path, so no client can send it back",
    "lax-media-types": "with --listen: take any Accept and Content-Type (no 406, no 415)",
    "no-session-check": "with --listen: take session-scoped POSTs without (or with a wrong) Acp-Session-Id",
    "keep-dropped": "with --listen: keep a connection whose event stream was dropped (its answers go nowhere)",
    "binary-frames": "with --listen: send WebSocket messages as binary frames",
    "close-socket": "with --listen: end the whole WebSocket when one session is closed",
}
"""``--broken`` modes of the remote server, each breaking one transport rule (for testing ``--url`` checks)."""


class BrokenRules(ServerHooks):
    """The server's hooks with the remote ``--broken`` modes in ``broken`` switched on."""

    def __init__(self, broken: frozenset[str]) -> None:
        self.broken = broken & REMOTE_BROKEN_MODES.keys()
        self.check_media_types = "lax-media-types" not in broken
        self.check_session_ids = "no-session-check" not in broken
        self.answers_on_connection_stream = "wrong-stream" in broken
        self.end_when_stream_dropped = "keep-dropped" not in broken

    def affinity_cookie(self, name: str, value: str) -> str:
        cookie = super().affinity_cookie(name, value)
        return cookie.replace("Path=/;", "Path=/elsewhere;") if "drop-cookies" in self.broken else cookie

    def websocket_message(self, frame: bytes) -> str | bytes:
        return frame if "binary-frames" in self.broken else super().websocket_message(frame)

    async def after_websocket_message(self, raw: bytes) -> bool:
        if "close-socket" in self.broken and b'"session/close"' in raw:
            await anyio.sleep(0.2)  # the close's answer goes out; then one session's close ends the whole socket
            return False
        return True


def hooks_for(broken: frozenset[str]) -> ServerHooks:
    """The hooks for these ``--broken`` modes: the rules themselves when none is a remote one."""
    return BrokenRules(broken) if broken & REMOTE_BROKEN_MODES.keys() else ServerHooks()
