"""Errors raised locally by the client layer, before anything is sent to the agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import AcpError, ConnectionClosed, UnsupportedProtocolVersion

__all__ = [
    "CapabilityNotSupported",
    "MissingExtra",
    "ProtocolVersionMismatch",
    "ReconnectFailed",
    "SessionClosed",
    "SessionLost",
    "TurnLost",
]


class CapabilityNotSupported(AcpError):
    """The agent did not advertise what this call needs, so it was not sent (the agent would reject it)."""

    def __init__(self, method: str, capability: str) -> None:
        self.method = method
        self.capability = capability
        super().__init__(f"{method}: the agent did not advertise {capability}")


class SessionClosed(AcpError):
    """This session was closed through this connection; the agent would answer -32002."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} is closed")


class ProtocolVersionMismatch(UnsupportedProtocolVersion):
    """Initialize failed: the agent answered -32022 or offered a version this client does not speak.

    ``requested`` is what we asked for; ``supported`` is what the agent offered (possibly empty);
    ``agent`` is the agent's name when it gave one; ``accepted`` the versions this client was allowed to use.
    """

    def __init__(
        self,
        requested: int,
        supported: list[int],
        data: Any = None,
        *,
        agent: str | None = None,
        accepted: Sequence[int] | None = None,
    ) -> None:
        self.requested = requested
        self.supported = supported
        self.agent = agent
        self.accepted = list(accepted) if accepted is not None else [requested]
        payload = data if data is not None else {"requested": requested, "supported": supported}
        who = agent or "agent"
        super().__init__(
            None,
            f"{who} does not speak protocol version {requested} (offers {supported}; "
            f"this client speaks {self.accepted})",
            payload,
        )


class MissingExtra(AcpError):
    """A feature needs an optional extra that is not installed (``pip install 'acp-session[NAME]'``)."""

    def __init__(self, extra: str, feature: str) -> None:
        self.extra = extra
        super().__init__(f"{feature} needs the optional '{extra}' extra: pip install 'acp-session[{extra}]'")


class ReconnectFailed(ConnectionClosed):
    """The connection was lost and the reconnect policy (``ClientBuilder.reconnect``) gave up: every attempt
    failed, the total deadline passed, the connection kept dropping right after each reconnect (``drops``: how
    many times it came back and dropped again within the policy's ``stable_after``; a flapping server), or the
    server refused a re-dial with a status that waiting does not change (``status``: 401, 403, 407 or 410,
    ``acp_session.client.reconnect.FINAL_REDIAL_STATUSES``). ``attempts`` counts the dials of the whole outage,
    and ``elapsed`` runs from its first drop. ``cause`` is the last attempt's error (or the drop itself; a
    ``RemoteHttpError`` when ``status`` is set)."""

    def __init__(
        self,
        attempts: int,
        elapsed: float,
        cause: BaseException,
        *,
        deadline_reached: bool,
        status: int | None = None,
        drops: int = 0,
    ) -> None:
        self.attempts = attempts
        self.elapsed = elapsed
        self.cause = cause
        self.deadline_reached = deadline_reached
        self.status = status
        self.drops = drops
        if status is not None:
            why = f"the server refused the reconnect with HTTP {status}"
        elif deadline_reached:
            why = "the reconnect deadline passed"
        elif drops:
            why = f"it kept dropping right after coming back ({drops} times: flapping)"
        else:
            why = f"{attempts} reconnect attempts failed"
        if drops and (status is not None or deadline_reached):
            why += f", after it had dropped again right after coming back {drops} times (flapping)"
        super().__init__(f"the connection was lost and {why} after {elapsed:.1f} s (last error: {cause})")

    @property
    def flapping(self) -> bool:
        """Whether the connection came back and dropped again within the outage (``drops``)."""
        return self.drops > 0


class SessionLost(AcpError):
    """After a reconnect the agent no longer has this session (it refused the resume, e.g. -32002, or cannot
    resume at all): its turns in flight end with this error, never with a silent empty reply."""

    def __init__(self, session_id: str, cause: BaseException | None = None) -> None:
        self.session_id = session_id
        self.cause = cause
        detail = f": {cause}" if cause is not None else ""
        super().__init__(f"session {session_id!r} was lost while reconnecting{detail}")


class TurnLost(AcpError):
    """After a reconnect the session is back but the agent no longer holds this turn's work (a restarted
    subprocess agent keeps only the turns it had saved): the turn ends with this error; the prompt is never
    sent again on its own (its work might have had effects). ``partial`` is what the turn had shown."""

    def __init__(self, session_id: str, partial: str = "") -> None:
        self.session_id = session_id
        self.partial = partial
        super().__init__(f"the agent of session {session_id!r} lost this turn's work while the connection was down")
