"""The host's sessions in the store (``store.SessionStore``, ``--store DIR``): what is kept of a ``HostSession``
and how a host that starts again gets its sessions back (read-only until the agent resumes them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..codec import decoder
from ..schema import unstable as mu
from .core import HostSession, UpdateLog

if TYPE_CHECKING:
    from .options import HostOptions
    from .store import SessionStore, StoredSession

__all__ = ["params_of", "restore_sessions", "stored_message", "stored_session"]

_PREFIX = b'{"jsonrpc":"2.0","method":"session/update","params":'


class _Message(msgspec.Struct):
    params: msgspec.Raw = msgspec.Raw(b"null")


_message = msgspec.json.Decoder(_Message).decode
_update = decoder(mu.UpdateSessionNotification)  # the superset: subagent updates are typed too


def stored_message(params: bytes) -> bytes:
    """The ``session/update`` notification as sent to clients, from its params."""
    return _PREFIX + params + b"}"


def params_of(message: bytes) -> bytes:
    """A stored notification's params (the inverse of ``stored_message``)."""
    if message.startswith(_PREFIX) and message.endswith(b"}"):
        return message[len(_PREFIX) : -1]
    return bytes(_message(message).params)


def stored_session(session: HostSession) -> StoredSession:
    from .store import StoredSession

    return StoredSession(
        session_id=session.session_id,
        agent_session_id=session.session_id if session.resumable else None,
        cwd=session.cwd,
        title=session.title,
        agent=session.agent,
        protocol_version=session.protocol_version,
        created_at=session.created_at,
        updated_at=session.updated_at,
        resumable=session.resumable,
    )


async def restore_sessions(store: SessionStore, options: HostOptions) -> list[HostSession]:
    """Every stored session with its log, not live yet: the agent is asked to resume each once it runs."""
    restored: list[HostSession] = []
    for stored in await store.sessions():
        session = HostSession(
            stored.session_id,
            stored.cwd,
            stored.agent,
            protocol_version=stored.protocol_version,
            title=stored.title,
            created_at=stored.created_at,
            updated_at=stored.updated_at,
            resumable=stored.resumable and stored.agent_session_id is not None,
            live=False,
            log=UpdateLog(options.max_log_entries, options.max_log_bytes),
        )
        for seq, message in await store.messages(stored.session_id):
            params = params_of(message)
            try:
                note = _update(params)
            except (msgspec.ValidationError, msgspec.DecodeError):
                session.record(params, None, seq=seq)
                continue
            # A subagent's own update was kept in its root session's log under the child's id.
            session.record(params, note.update, seq=seq, subagent=note.session_id != stored.session_id)
        session.updated_at = stored.updated_at
        restored.append(session)
    return restored
