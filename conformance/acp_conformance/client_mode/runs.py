"""One run of the scripted agent against a client, read from its log, and the schema problems of the client's
messages in it (judged by the version offered before ``initialize`` is answered, by the negotiated one after).

Sans-IO: a ``Run`` holds what one run produced (the agent's log, the client's exit code and stderr tail);
``judge`` reads runs into verdicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import types as v2
from acp_session.schema import v1

__all__ = ["TRACEBACK", "Line", "Run", "versioned_problems"]

# Client -> agent methods and the agent's requests the client answers: the params / result type per version.
_REQUESTS: dict[int, dict[str, Any]] = {
    2: {
        "initialize": v2.InitializeRequest,
        "auth/login": v2.LoginAuthRequest,
        "auth/logout": v2.LogoutAuthRequest,
        "session/new": v2.NewSessionRequest,
        "session/list": v2.ListSessionsRequest,
        "session/delete": v2.DeleteSessionRequest,
        "session/resume": v2.ResumeSessionRequest,
        "session/close": v2.CloseSessionRequest,
        "session/prompt": v2.PromptRequest,
        "session/set_config_option": v2.SetSessionConfigOptionRequest,
        "tool_call/cancel": v2.CancelToolCallRequest,
        "terminal/cancel": v2.CancelTerminalRequest,
        "session/cancel": v2.CancelSessionNotification,
        "$/cancel_request": v2.CancelRequestNotification,
    },
    1: {
        "initialize": v1.InitializeRequest,
        "authenticate": v1.AuthenticateRequest,
        "logout": v1.LogoutRequest,
        "session/new": v1.NewSessionRequest,
        "session/load": v1.LoadSessionRequest,
        "session/list": v1.ListSessionsRequest,
        "session/delete": v1.DeleteSessionRequest,
        "session/resume": v1.ResumeSessionRequest,
        "session/close": v1.CloseSessionRequest,
        "session/prompt": v1.PromptRequest,
        "session/set_mode": v1.SetSessionModeRequest,
        "session/set_config_option": v1.SetSessionConfigOptionRequest,
        "session/cancel": v1.CancelNotification,
        "$/cancel_request": v1.CancelRequestNotification,
    },
}
_RESULTS: dict[int, dict[str, Any]] = {
    2: {"session/request_permission": v2.RequestPermissionResponse},
    1: {
        "session/request_permission": v1.RequestPermissionResponse,
        "fs/read_text_file": v1.ReadTextFileResponse,
        "fs/write_text_file": v1.WriteTextFileResponse,
        "terminal/create": v1.CreateTerminalResponse,
    },
}
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Line:
    direction: str  # "in" (client -> agent) or "out"
    t: float
    raw: str
    message: dict[str, Any] | None


@dataclass
class Run:
    scenario: str
    version: int  # the highest version the scripted agent speaks in this run
    lines: list[Line] = field(default_factory=list)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # first occurrence of each event
    exit_code: int | None = None  # None: the client did not exit in time (killed)
    stderr_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def from_log(cls, scenario: str, version: int, text: str) -> Run:
        run = cls(scenario, version)
        for raw in text.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if "event" in entry:
                run.events.setdefault(entry["event"], entry)
                continue
            try:
                message = json.loads(entry["line"])
            except ValueError:
                message = None
            run.lines.append(
                Line(entry["dir"], entry["t"], entry["line"], message if isinstance(message, dict) else None)
            )
        return run

    @property
    def negotiated(self) -> int | None:
        found = self.events.get("negotiated")
        return found["version"] if found else None

    @property
    def offered(self) -> Any:
        """The protocolVersion of the client's first initialize (None without one)."""
        for line in self.client_messages():
            if (line.message or {}).get("method") == "initialize":
                return ((line.message or {}).get("params") or {}).get("protocolVersion")
        return None

    def declined_version(self) -> bool:
        """The agent answered another version than the client offered, and the client went no further."""
        return self.negotiated is not None and self.negotiated != self.offered and "prompted" not in self.events

    @property
    def label(self) -> str:
        return f"{self.scenario} (agent v{self.version})"

    def client_messages(self) -> list[Line]:
        return [line for line in self.lines if line.direction == "in"]

    def agent_requests(self) -> dict[Any, Line]:
        return {
            line.message["id"]: line
            for line in self.lines
            if line.direction == "out" and line.message and "method" in line.message and "id" in line.message
        }

    def crashed(self) -> bool:
        return any(TRACEBACK in line for line in self.stderr_tail)

    def completed(self) -> bool:
        """The scenario's turn ended and the client then exited with status 0 (errors it only logged aside)."""
        return "turn-ended" in self.events and self.exit_code == 0

    def how_it_ended(self) -> str:
        if self.exit_code is None:
            state = "the client did not exit in time"
        else:
            state = f"the client exited with status {self.exit_code}"
        turn = "after the turn ended" if "turn-ended" in self.events else "before the turn ended"
        tail = f"; stderr: {' | '.join(self.stderr_tail[-3:])}" if self.stderr_tail else ""
        return f"{self.label}: {state} {turn}{tail}"


def _problem(kind: Any, value: Any) -> str | None:
    try:
        decoder(kind)(msgspec.json.encode(value if value is not None else {}))
    except msgspec.ValidationError as exc:
        return str(exc)
    return None


def _judge_message(run: Run, line: Line, version: int) -> str | None:
    """Why ``line`` is not a valid client message of protocol ``version`` (None: it is)."""
    m = line.message
    if m is None:
        return f"not a JSON object: {line.raw[:80]!r}"
    if m.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"'
    method = m.get("method")
    if isinstance(method, str):
        if method.startswith("_"):
            return None
        kind = _REQUESTS[version].get(method)
        if kind is None:
            return f"{method} is not a client method of protocol v{version}"
        if "id" in m and m["id"] is None:
            return f"{method}: request id is null"
        problem = _problem(kind, m.get("params"))
        if (
            problem is None
            and version == 2
            and method == "session/prompt"
            and (m.get("params") or {}).get("prompt") == []
        ):
            problem = "ACP2-085: the prompt is an empty array"
        return f"{method} params: {problem}" if problem else None
    request = run.agent_requests().get(m.get("id"))
    if request is None:
        return f"a response to id {m.get('id')!r}, which the agent never sent"
    asked = request.message["method"] if request.message else "?"
    if "error" in m:
        error = m["error"]
        ok = isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
        return None if ok else f"the error answering {asked} is not {{code: int, message: str}}"
    if "result" not in m:
        return f"the answer to {asked} has neither result nor error"
    kind = _RESULTS[version].get(asked)
    if kind is None:
        if asked.startswith("_"):
            return None  # an extension request: any result is the client's business
        return f"a result for {asked}, which is not a method of protocol v{version}"
    problem = _problem(kind, m["result"])
    return f"the answer to {asked}: {problem}" if problem else None


def versioned_problems(run: Run) -> tuple[list[str], list[str]]:
    """(schema problems, negotiation problems) of a run's client messages.

    Before the agent answers ``initialize`` the client's messages are judged by the version it offers, after
    by the negotiated one; a message that is wrong for the negotiated version but right for the version the
    client had offered (it went on speaking what it offered) is a negotiation problem, not a schema one."""
    schema: list[str] = []
    negotiation: list[str] = []
    negotiated = run.negotiated
    offered_version: int | None = None
    for line in run.client_messages():
        m = line.message or {}
        if m.get("method") == "initialize":
            offered = (m.get("params") or {}).get("protocolVersion")
            version = 2 if isinstance(offered, int) and offered >= 2 else 1
            offered_version = version
        else:
            version = negotiated if negotiated in (1, 2) else 2
        problem = _judge_message(run, line, version)
        if problem is None:
            continue
        if (
            m.get("method") != "initialize"
            and offered_version is not None
            and offered_version != version
            and _judge_message(run, line, offered_version) is None
        ):
            negotiation.append(
                f"{run.label}: a protocol v{offered_version} message after v{version} was agreed: {problem}"
            )
        else:
            schema.append(f"{run.label}: {problem}")
    return schema, negotiation
