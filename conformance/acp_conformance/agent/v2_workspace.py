"""The workspace of a protocol version 2 session: the agent's own disk (v2 has no ``fs/*`` or ``terminal/*`` client
methods), and questions to the user through ``elicitation/create`` when the client offered the mode (form; URL,
followed by ``elicitation/complete`` once accepted).

While a question waits, the session reports ``requires_action`` (ACP2-022), then ``running`` again (ACP2-023); a
question still waiting when the turn is cancelled is withdrawn with the session's permission requests (ACP2-024).
"""

from __future__ import annotations

from typing import Any, Protocol

from acp_session.errors import RpcError
from acp_session.rpc import Connection
from acp_session.schema.types import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
)

from .sessions import Session
from .workspace import Workspace, WorkspaceError

__all__ = ["V2Workspace"]


def offers(capabilities: ClientCapabilities | None, mode: str) -> bool:
    """Whether the client's capabilities offer elicitation ``mode`` (``form`` or ``url``)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if not isinstance(elicitation, ElicitationCapabilities):
        return False
    if mode == "form":
        return isinstance(elicitation.form, ElicitationFormCapabilities)
    return isinstance(elicitation.url, ElicitationUrlCapabilities)


class _Agent(Protocol):
    """What this needs of the agent's connection (``server.ReferenceAgent``)."""

    conn: Connection
    offered: Any  # the client's v2 capabilities, or None


class V2Workspace(Workspace):
    """A v2 session's workspace: the agent's own disk, questions through elicitation when the client offers it."""

    def __init__(self, agent: _Agent, session: Session) -> None:
        self.conn = agent.conn
        self.session = session
        self.offered = agent.offered

    async def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if not offers(self.offered, "form"):  # a mode the client did not advertise is never requested
            return None
        return await self._ask({"mode": "form", "message": message, "requestedSchema": schema})

    async def elicit_url(self, message: str, url: str) -> dict[str, Any] | None:
        """The URL elicitation, then (the page visited, as this agent pretends) ``elicitation/complete``."""
        if not offers(self.offered, "url"):
            return None
        elicitation_id = f"{self.session.session_id}-{self.session.next_id('url')}"
        answer = await self._ask({"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id})
        if answer.get("action") == "accept":
            await self.conn.notify("elicitation/complete", {"elicitationId": elicitation_id})
        return answer

    async def _ask(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        pending = self.conn.request("elicitation/create", {"sessionId": session.session_id, **params})
        session.permissions.add(pending)  # withdrawn by session/cancel, as a permission request is
        await session.set_state("requires_action")
        try:
            result = await pending
        except RpcError as exc:
            raise WorkspaceError(f"elicitation/create: {exc}") from None
        finally:
            session.permissions.discard(pending)
        await session.set_state("running")
        return result if isinstance(result, dict) else {}
