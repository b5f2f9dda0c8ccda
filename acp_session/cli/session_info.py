"""``acp-session sessions show ID|NAME`` (one session's metadata) and ``sessions history ID|NAME`` (its
conversation, replayed by the agent through ``session/resume`` and rendered, or ``--json``)."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from acp_session.client import ClientConnection
from acp_session.client_errors import CapabilityNotSupported
from acp_session.conversation import Conversation
from acp_session.errors import AcpError

from .exits import EXIT_ERROR, EXIT_OK
from .messages import Failure
from .named_sessions import NamedSessions
from .render_json import JsonRenderer
from .screen import Screen

if TYPE_CHECKING:
    from .app import ChatApp

__all__ = ["local_time", "session_info"]


def local_time(stamp: Any) -> str:
    """An ISO 8601 time as ``YYYY-MM-DD HH:MM`` in local time (as ``sessions`` lists it); ``-`` when there is none,
    the text as it is when it is not such a time."""
    if not isinstance(stamp, str) or not stamp:
        return "-"
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M")


async def _listed(client: ClientConnection, session_id: str) -> Any:
    """The agent's ``session/list`` entry for ``session_id``, or None (not listed, or no session/list)."""
    try:
        async for info in client.list_sessions():
            if info.session_id == session_id:
                return info
    except (AcpError, CapabilityNotSupported):
        return None
    return None


async def session_info(app: ChatApp, client: ClientConnection) -> int:
    args = app.args
    names = NamedSessions()
    named = names.find(args.target, args.agent_key)
    session_id = named["session_id"] if named is not None else args.target
    info = await _listed(client, session_id)
    cwd = args.cwd_given or (info.cwd if info is not None else None) or (named or {}).get("cwd") or args.cwd
    if args.action == "history":
        conversation = await Conversation.resume(client, session_id, cwd)
        app.announce(conversation)
        app.renderer.history(conversation.history())
        if isinstance(app.renderer, JsonRenderer):
            app.renderer.emit({"event": "done"})
        await conversation.disconnect(timeout=3)
        return EXIT_OK
    if info is None and named is None and app.recent.title(session_id) is None:
        app.report(Failure(f"no session {args.target!r} (`acp-session sessions --all` lists them)", "NoSuchSession"))
        return EXIT_ERROR
    record = {
        "event": "session_info",
        "session_id": session_id,
        "names": names.names_of(session_id, args.agent_key),
        "cwd": cwd,
        "title": info.title if info is not None and isinstance(info.title, str) else None,
        "updated_at": info.updated_at if info is not None and isinstance(info.updated_at, str) else None,
        "first_prompt": app.recent.title(session_id),
        "listed_by_agent": info is not None,
        "agent": args.agent_key,
    }
    if isinstance(app.renderer, JsonRenderer):
        app.renderer.emit(record)
        return EXIT_OK
    screen = Screen(sys.stdout)
    for key in ("session_id", "names", "agent", "cwd", "title", "updated_at", "first_prompt", "listed_by_agent"):
        value = local_time(record[key]) if key == "updated_at" else record[key]  # as `sessions` shows it
        shown = ", ".join(value) if isinstance(value, list) else "-" if value is None else str(value)
        screen.line(f"{key.replace('_', ' ')}: {shown or '-'}")
    return EXIT_OK
