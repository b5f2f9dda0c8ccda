"""Where a server may be told to depart from the remote profile's rules (``ServerOptions.hooks``).

The defaults follow the rules, and an application has no reason to change them. They exist for test servers: the
reference agent's ``--broken`` modes (``acp_conformance.agent.remote_modes``) each override one, so that clients
and conformance runners can be shown to notice a server that breaks that rule. A subclass sets the attributes or
overrides the methods; the server reads them per request (or per message), so they cost nothing when left alone.
"""

from __future__ import annotations

__all__ = ["ServerHooks"]


class ServerHooks:
    """The profile's rules where a test server may break them; every default is the rule."""

    check_media_types: bool = True
    """Refuse a ``POST`` that is not ``Content-Type: application/json`` (``415``) and a stream ``GET`` without
    ``Accept: text/event-stream`` (``406``)."""
    check_session_ids: bool = True
    """Refuse a session-scoped ``POST`` without its ``Acp-Session-Id``, or with another session's (``400``)."""
    answers_on_connection_stream: bool = False
    """Send the answers to session-scoped requests on the connection's stream instead of the session's."""
    end_when_stream_dropped: bool = True
    """End a connection whose own event stream lost its reader (the stream is the client's lifeline)."""

    def affinity_cookie(self, name: str, value: str) -> str:
        """The ``Set-Cookie`` value that gives the client its connection's affinity cookie."""
        return f"{name}={value}; Path=/; HttpOnly; SameSite=Lax"

    def websocket_message(self, frame: bytes) -> str | bytes:
        """One outgoing message as a WebSocket frame: text (``str``, the rule) or binary (``bytes``)."""
        return frame.decode("utf-8")

    async def after_websocket_message(self, raw: bytes) -> bool:
        """Called after each client message read from a WebSocket was handed on; False closes the socket."""
        return True
