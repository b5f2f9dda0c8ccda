"""What clients do through a host, as OpenTelemetry spans (``HostOptions.instrument``), or nothing.

``NoTracing`` is what a host without telemetry calls: every hook does nothing, and OpenTelemetry is never imported.
The host makes the real one (``spans.HostSpans``, the ``otel`` extra) when its options ask for it. The
hooks: a client connected and gone, a client's request the host handles (``session/new``, ``session/resume``,
``session/prompt``: the span current while it runs, so the host's own request to the agent is its child and
carries the trace on), a permission request relayed to each client and its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..rpc import Connection

__all__ = ["Handled", "NoTracing"]

H = TypeVar("H")


@dataclass
class Handled:
    """What the handling of a client's request found out, for its span: the session it named or made, the updates
    replayed to the client."""

    session_id: str | None = None
    replayed: int | None = None


class NoTracing:
    """The hooks a host calls, doing nothing (telemetry off)."""

    def connected(self, client: str, profile: str) -> None:
        """A client connection opened (``profile``: ``http`` or ``websocket``)."""

    def disconnected(self, client: str) -> None:
        """A client connection ended."""

    def serving(self, rpc: Connection) -> None:
        """The connection to a client: the host's requests on it carry the trace context in ``_meta``."""

    @contextmanager
    def handling(self, method: str, client: str, session_id: str | None, meta: Any) -> Iterator[Handled]:
        """A client's request handled by the host, current in the block, which fills in what it found out."""
        yield Handled(session_id)

    def permission_asked(self, ask: Hashable) -> None:
        """The agent asked (called where the agent's request is handled, so its trace is the parent)."""

    def asking(self, ask: Hashable, client: str, send: Callable[[], H]) -> H:
        """The request to one client, sent by ``send`` (its handle returned)."""
        return send()

    def client_answered(self, ask: Hashable, client: str, answer: Any, error: BaseException | None) -> None:
        """One client's request ended: ``answer``, or ``error`` (an error answer, withdrawn, the client gone)."""

    def permission_settled(self, ask: Hashable, answered_by: str | None, answer: Any) -> None:
        """The agent's request is answered: by a client (``answered_by``) or by the policy (None)."""
