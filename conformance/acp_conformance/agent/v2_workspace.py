"""The workspace of a protocol version 2 session: the agent's own disk (v2 has no ``fs/*`` or ``terminal/*`` client
methods), and questions to the user through ``elicitation/create`` when the client offered form elicitation.

While a question waits, the session reports ``requires_action`` (ACP2-022), then ``running`` again (ACP2-023); a
question still waiting when the turn is cancelled is withdrawn with the session's permission requests (ACP2-024).
"""

from __future__ import annotations

from typing import Any, Protocol

from acp_session.errors import RpcError
from acp_session.rpc import Connection
from acp_session.schema.types import ClientCapabilities, ElicitationCapabilities, ElicitationFormCapabilities

from .sessions import Session
from .workspace import Workspace, WorkspaceError

__all__ = ["V2Workspace"]


def offers_form(capabilities: ClientCapabilities | None) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return isinstance(elicitation, ElicitationCapabilities) and isinstance(
        elicitation.form, ElicitationFormCapabilities
    )


class _Agent(Protocol):
    """What this needs of the agent's connection (``server.ReferenceAgent``)."""

    conn: Connection
    offered: Any  # the client's v2 capabilities, or None


class V2Workspace(Workspace):
    def __init__(self, agent: _Agent, session: Session) -> None:
        self.conn = agent.conn
        self.session = session
        self.elicits = offers_form(agent.offered)

    async def elicit(self, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if not self.elicits:  # a mode the client did not advertise is never requested (elicitation.mdx)
            return None
        session = self.session
        params = {"mode": "form", "sessionId": session.session_id, "message": message, "requestedSchema": schema}
        pending = self.conn.request("elicitation/create", params)
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
