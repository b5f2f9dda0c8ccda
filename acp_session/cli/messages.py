"""Failures in plain words: one sentence saying what happened and what to do, and the agent's last stderr lines
when the agent failed (it usually says why there). The same facts go into ``--json`` ``error`` records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from acp_session.client_errors import CapabilityNotSupported, ReconnectFailed, SessionClosed, SessionLost, TurnLost
from acp_session.errors import (
    AcpError,
    ConnectionClosed,
    InitializeTimeout,
    InvalidParams,
    MessageTooLarge,
    MethodNotFound,
    RequestTimeout,
    ResourceNotFound,
    RpcError,
)
from acp_session.transport.exits import exit_words

__all__ = ["STDERR_LINES", "Failure", "describe", "error_record", "failure_lines", "stderr_tail_of"]

STDERR_LINES = 5
"""How many of the agent's last stderr lines a failure shows."""

_CAPABILITY_WORDS = {
    "session/list": "list its sessions",
    "session/load": "load earlier sessions",
    "session/resume": "resume earlier sessions",
    "session/delete": "delete sessions",
}


class Failure(msgspec.Struct, frozen=True):
    """What went wrong: the sentence shown, the error's kind for ``--json``, and the agent's stderr tail."""

    message: str
    kind: str
    stderr_tail: tuple[str, ...] = ()
    code: int | None = None
    exit_code: int | None = None


def _data_details(data: Any) -> str:
    """A short reason from an error's ``data`` (agents put it under ``details``, ``message`` or as a string)."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in ("details", "message", "reason", "error"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
    return ""


def stderr_tail_of(source: Any) -> tuple[str, ...]:
    """The agent's last stderr lines kept by its transport (or an error), if any."""
    tail = getattr(source, "stderr_tail", None)
    if callable(tail):
        tail = tail()
    return tuple(str(line) for line in tail) if isinstance(tail, (tuple, list)) else ()


def describe(exc: BaseException, *, session_id: str | None = None, stderr_tail: Sequence[str] = ()) -> Failure:
    """``exc`` in plain words (``session_id``: the session a command named; ``stderr_tail``: the agent's last
    stderr lines when the error itself carries none)."""
    tail = stderr_tail_of(exc) or tuple(stderr_tail)
    kind = type(exc).__name__
    code = exc.code if isinstance(exc, RpcError) else None
    if isinstance(exc, InitializeTimeout):
        who = f"the agent `{exc.agent}`" if exc.agent else "the agent"
        return Failure(
            f"{who} did not answer initialize within {exc.timeout:g} s (--init-timeout SECONDS to wait longer)",
            kind,
            tail,
        )
    if isinstance(exc, ReconnectFailed):
        if exc.status is not None:
            why = f"the server refused it with HTTP {exc.status}"
        else:
            why = "the time allowed ran out" if exc.deadline_reached else f"{exc.attempts} attempts failed"
            if exc.drops:
                flaps = f"it kept dropping right after each reconnect ({exc.drops} times)"
                why = flaps if not exc.deadline_reached else f"{flaps}, and {why}"
        return Failure(f"the connection to the agent was lost and could not be re-established ({why})", kind, tail)
    if isinstance(exc, SessionLost):
        return Failure(f"the agent no longer has session {exc.session_id} after reconnecting", kind, tail)
    if isinstance(exc, TurnLost):
        return Failure("the agent lost this turn's work while the connection was down (send it again)", kind, tail)
    if isinstance(exc, ConnectionClosed):
        return Failure(
            f"{exit_words(exc.exit_code)}; its last stderr lines may say why"
            if tail
            else f"{exit_words(exc.exit_code)}; run its command by hand to see why",
            kind,
            tail,
            exit_code=exc.exit_code,
        )
    if isinstance(exc, MessageTooLarge) and exc.outgoing:  # ours, refused before sending: not the agent's fault
        return Failure(
            f"the prompt is too large to send: {exc.size} bytes, over the {exc.limit}-byte frame limit "
            "(send a shorter one)",
            kind,
            (),
        )
    if isinstance(exc, ResourceNotFound):
        what = f"session {session_id}" if session_id else "what was asked for"
        return Failure(f"the agent does not know {what} (`acp-session sessions` lists its sessions)", kind, tail, code)
    if isinstance(exc, CapabilityNotSupported):
        words = _CAPABILITY_WORDS.get(exc.method, f"do {exc.method}")
        return Failure(f"this agent cannot {words} (it does not offer {exc.method})", kind, tail)
    if isinstance(exc, SessionClosed):
        return Failure(f"session {exc.session_id} is closed", kind, tail)
    if isinstance(exc, MethodNotFound):
        return Failure(f"the agent does not support this request ({exc.message})", kind, tail, code)
    if isinstance(exc, InvalidParams):
        detail = _data_details(exc.data)
        return Failure(f"the agent rejected the request as invalid{': ' + detail if detail else ''}", kind, tail, code)
    if isinstance(exc, RpcError):  # InternalError and any other JSON-RPC error
        detail = _data_details(exc.data) or exc.message
        hint = "; its last stderr lines may say more" if tail else ""
        return Failure(f"the agent failed: {detail}{hint}", kind, tail, code)
    if isinstance(exc, RequestTimeout):
        return Failure(f"the agent did not answer in time ({exc})", kind, tail)
    if isinstance(exc, UnicodeError):
        return Failure("text that is not valid UTF-8 cannot be sent to the agent", kind, tail)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return Failure(f"could not start the agent: {exc.filename} was not found", kind, tail)
    if isinstance(exc, PermissionError) and exc.filename:
        return Failure(f"could not start the agent: {exc.filename} is not executable", kind, tail)
    if isinstance(exc, OSError):
        return Failure(f"could not talk to the agent: {exc.strerror or exc}", kind, tail)
    if isinstance(exc, AcpError):
        return Failure(f"the agent failed: {exc}", kind, tail)
    return Failure(f"{exc}" or kind, kind, tail)


def error_record(failure: Failure, **extra: Any) -> dict[str, Any]:
    """The ``--json`` ``error`` record of a failure."""
    record: dict[str, Any] = {"event": "error", "error": failure.message, "error_type": failure.kind}
    if failure.code is not None:
        record["code"] = failure.code
    if failure.exit_code is not None:
        record["exit_code"] = failure.exit_code
    if failure.stderr_tail:
        record["stderr_tail"] = list(failure.stderr_tail[-STDERR_LINES:])
    record.update(extra)
    return record


def failure_lines(failure: Failure) -> list[str]:
    """The text form: ``acp-session: <sentence>``, then the agent's last stderr lines, indented."""
    lines = [f"acp-session: {failure.message}"]
    if failure.stderr_tail:
        lines.append("  the agent's last stderr lines:")
        lines += [f"  | {line}" for line in failure.stderr_tail[-STDERR_LINES:]]
    return lines
