"""One line of an agent's stdout as the runner keeps it (``Frame``), whether it is a well-formed message at all
(``line_problem``: the judging of the framing), a line of the transcript (``WireLine``), and a turn's frames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["OUTPUT_KINDS", "Frame", "Turn", "WireLine", "line_problem"]

_json = msgspec.json.Decoder()


@dataclass(frozen=True)
class WireLine:
    """One line of the wire traffic, for a failed check's transcript (long lines shortened)."""

    direction: str  # "sent" (runner to agent) or "received"
    seconds: float  # since the probe started
    line: str

    LIMIT = 4000

    @classmethod
    def of(cls, direction: str, seconds: float, raw: bytes) -> WireLine:
        text = raw.rstrip(b"\n").decode("utf-8", "replace")
        if len(text) > cls.LIMIT:
            text = f"{text[: cls.LIMIT]}... ({len(text)} characters)"
        return cls(direction, round(seconds, 3), text)


@dataclass
class Frame:
    index: int
    raw: bytes
    message: dict[str, Any] | None  # None when the line is not a JSON object
    problem: str | None  # why the line is not a well-formed message, if it is not
    time: float

    @property
    def method(self) -> str | None:
        m = self.message
        return m.get("method") if m is not None and isinstance(m.get("method"), str) else None

    @property
    def is_response(self) -> bool:
        m = self.message
        return m is not None and "method" not in m and ("result" in m or "error" in m)

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.message is not None and "id" in self.message

    @property
    def params(self) -> dict[str, Any]:
        params = self.message.get("params") if self.message else None
        return params if isinstance(params, dict) else {}

    @property
    def update(self) -> dict[str, Any] | None:
        """The ``update`` object of a ``session/update`` notification."""
        if self.method != "session/update":
            return None
        update = self.params.get("update")
        return update if isinstance(update, dict) else None

    @property
    def session_id(self) -> Any:
        return self.params.get("sessionId")

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.message.get("error") if self.message else None
        return error if isinstance(error, dict) else None

    @property
    def error_code(self) -> int | None:
        error = self.error
        return error.get("code") if error is not None else None

    @property
    def result(self) -> Any:
        return self.message.get("result") if self.message else None

    def update_kind(self) -> str | None:
        u = self.update
        return u.get("sessionUpdate") if u is not None else None

    def state(self) -> str | None:
        u = self.update
        return u.get("state") if u is not None and u.get("sessionUpdate") == "state_update" else None


@dataclass
class Turn:
    start: int  # frame index when the prompt was sent
    request_id: int
    response: Frame
    end: Frame | None  # v2: the idle update (None when the agent went quiet without one); v1: the response

    @property
    def stop_reason(self) -> Any:
        if self.end is None:
            return None
        source = self.end.update if self.end.method == "session/update" else self.end.result
        return source.get("stopReason") if isinstance(source, dict) else None


def line_problem(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The message a stdout line holds (None when it is not a JSON object) and why it is not a well-formed
    JSON-RPC message, if it is not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not valid UTF-8"
    if not text.strip():
        return None, "blank line"
    try:
        value = _json.decode(raw)
    except msgspec.DecodeError:
        return None, f"not JSON: {text[:60]!r}"
    if isinstance(value, list):
        return None, "a JSON array (batch); ACP messages are single objects"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    if value.get("jsonrpc") != "2.0":
        return value, 'missing "jsonrpc": "2.0"'
    if "id" in value and value["id"] is None and "method" in value:
        return value, "request id is null"
    return value, None


OUTPUT_KINDS = frozenset(
    {
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)
