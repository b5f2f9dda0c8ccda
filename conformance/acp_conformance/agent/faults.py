"""The wire-level broken modes (``mutants.WIRE_MODES``): the reference agent's stdio with one defect each, put
there on the way in (a request refused, a notification answered or swallowed) or on the way out (an answer or
an update changed, held back or added).

Only ``acp-reference-agent --broken MODE`` uses this; the healthy agent never passes through it. What changes
single messages is ``faults_out``; the state that spans messages is kept here: the client's requests by id (what
an answer answers), the agent's permission requests, and per session its last state, its resume window and
whether a plain ``session/cancel`` is in force.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from acp_session.transport import Transport

from .faults_out import change_error, change_result, change_update, permission_request
from .linefilter import LineFilter, dumps, loads
from .mutants import WIRE_MODES

__all__ = ["FaultyWire"]

_CLIENT_NOTIFICATIONS = frozenset({"session/cancel", "$/cancel_request"})
_BARRIER = "_acp_conformance/barrier"  # the runner's own probe: answered, so a run does not wait out each one
_OUTPUT = frozenset(
    {
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)
_REFUSED_BLOCKS = {
    "reject-resource-link": "resource_link",
    "reject-embedded-context": "resource",
    "reject-image": "image",
    "reject-audio": "audio",
}


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _error(id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


@dataclass
class _Session:
    state: str | None = None  # the last state the agent reported (whether or not it reached the client)
    held_running: bytes | None = None  # late-running: the turn's running update, until its first output
    resuming: bool = False  # between a session/resume request and its answer
    replaying: bool = False  # ... which asked for a replay
    held_replay: list[bytes] = field(default_factory=list)
    plain_cancel: bool = False  # a session/cancel without _meta and no permission pending is in force
    listings: int = 0  # state updates that listed background work


class FaultyWire(LineFilter):
    """The stdio of ``acp-reference-agent --broken MODE`` for the modes of ``WIRE_MODES``."""

    def __init__(self, inner: Transport, modes: frozenset[str]) -> None:
        super().__init__(inner)
        self.modes = modes & frozenset(WIRE_MODES)
        self.requests: dict[str, tuple[str, dict[str, Any], Any]] = {}  # the client's, by id: method, params, id
        self.answered: set[str] = set()
        self.asks: dict[str, tuple[Any, list[Any]]] = {}  # the agent's permission requests: session, options
        self.injected: set[str] = set()  # ids of requests this filter sent: their answers are swallowed
        self.sessions: dict[str, _Session] = {}
        self.count = 0

    def on(self, mode: str) -> bool:
        return mode in self.modes

    def session(self, session_id: Any) -> _Session:
        return self.sessions.setdefault(str(session_id), _Session())

    # -- what the client sends ---------------------------------------------------------------------------

    async def incoming(self, line: bytes) -> list[bytes]:
        message = loads(line)
        if not isinstance(message, dict):
            return [line]
        method = message.get("method")
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                return self._answer_to_agent(message, line)
            if message.get("id") is not None and self.on("stop-after-invalid-request"):
                os._exit(1)
            return [line]
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if "id" in message:
            return await self._request(message, method, params, line)
        return await self._notification(method, params, line)

    async def _request(self, message: dict[str, Any], method: str, params: dict[str, Any], line: bytes) -> list[bytes]:
        id = message["id"]
        refusal = self._refusal(method, params)
        if refusal is not None:
            self.answered.add(_key(id))
            await self.reply(_error(id, *refusal))
            return []
        if self.on("ignore-custom-requests") and method.startswith("_") and method != _BARRIER:
            return []
        self.requests[_key(id)] = (method, params, id)
        if method == "session/resume":
            session = self.session(params.get("sessionId"))
            session.resuming, session.replaying = True, params.get("replayFrom") is not None
        if method == "initialize" and self.on("bad-downgrade") and params.get("protocolVersion") == 1:
            message["params"] = {**params, "protocolVersion": 2}
            return [dumps(message)]
        return [line]

    def _refusal(self, method: str, params: dict[str, Any]) -> tuple[int, str] | None:
        on = self.on
        if method == "initialize" and on("initialize-error"):
            return -32603, "Internal error: initialization failed"
        if method == "session/new":
            if on("reject-empty-mcp-list") and params.get("mcpServers") == []:
                return -32602, "Invalid params: mcpServers"
            if on("reject-additional-directories") and "additionalDirectories" in params:
                return -32602, "Invalid params: additionalDirectories"
            if on("invalid-params-wrong-code") and not isinstance(params.get("cwd"), str):
                return -32603, "Internal error"
        if method == "session/resume" and on("reject-resume-directories") and "additionalDirectories" in params:
            return -32602, "Invalid params: additionalDirectories"
        if method == "session/list" and on("list-unfiltered-fails") and not params.get("cwd"):
            return -32603, "Internal error: cannot list every session"
        if method == "session/prompt":
            if on("reject-prompt-meta") and "_meta" in params:
                return -32602, "Invalid params: _meta"
            kinds = {b.get("type") for b in params.get("prompt") or [] if isinstance(b, dict)}
            for mode, kind in _REFUSED_BLOCKS.items():
                if on(mode) and kind in kinds:
                    return -32602, f"Invalid params: {kind} blocks are not supported"
        return None

    async def _notification(self, method: str, params: dict[str, Any], line: bytes) -> list[bytes]:
        if method == "session/cancel":
            if self.on("answer-cancel"):
                await self.reply(_error(None, -32601, "Method not found"))
            session_id = params.get("sessionId")
            pending = any(asked == session_id for asked, _ in self.asks.values())
            if (self.on("ignore-cancel-meta") and "_meta" in params) or (
                self.on("cancel-keeps-permission") and pending
            ):
                return []
            if "_meta" not in params and not pending:
                self.session(session_id).plain_cancel = True
        elif method == "$/cancel_request":
            if self.on("ignore-cancel-request"):
                return []
            target = params.get("requestId")
            if self.on("answer-stale-cancel-request") and _key(target) in self.answered:
                await self.reply(_error(target, -32600, "Invalid Request: that request was answered"))
        elif method not in _CLIENT_NOTIFICATIONS and self.on("answer-notifications"):
            await self.reply(_error(None, -32601, f"Method not found: {method}"))
        return [line]

    def _answer_to_agent(self, message: dict[str, Any], line: bytes) -> list[bytes]:
        key = _key(message.get("id"))
        if key in self.injected:
            return []
        asked = self.asks.pop(key, None)
        result = message.get("result")
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if asked is None or not isinstance(outcome, dict):
            return [line]
        kind = outcome.get("outcome")
        if self.on("exit-on-custom-outcome") and isinstance(kind, str) and kind.startswith("_"):
            os._exit(3)
        options = [o for o in asked[1] if isinstance(o, dict)]
        allow = [o.get("optionId") for o in options if str(o.get("kind")).startswith("allow")]
        offered = [o.get("optionId") for o in options]
        if (
            self.on("approve-unknown-option")
            and kind == "selected"
            and outcome.get("optionId") not in offered
            and allow
        ):
            outcome["optionId"] = allow[0]
            return [dumps(message)]
        return [line]

    # -- what the agent writes -----------------------------------------------------------------------------

    def outgoing(self, line: bytes) -> list[bytes]:
        message = loads(line)
        if not isinstance(message, dict):
            return [line]
        method = message.get("method")
        if not isinstance(method, str):
            return self._answer(message)
        params = message.get("params")
        if not isinstance(params, dict):
            return [line]
        if "id" in message:
            if method == "session/request_permission":
                self.asks[_key(message["id"])] = (params.get("sessionId"), list(params.get("options") or []))
                permission_request(self.modes, params)
            return [dumps(message)]
        if method == "session/update" and isinstance(params.get("update"), dict):
            return self._update(message, params.get("sessionId"), params["update"])
        return [line]

    def _answer(self, message: dict[str, Any]) -> list[bytes]:
        key = _key(message.get("id"))
        self.answered.add(key)
        method, params, id = self.requests.pop(key, ("", {}, message.get("id")))
        if "error" in message:
            message["error"] = change_error(self.modes, message["error"])
            if self.on("error-with-result"):
                message["result"] = None
        elif "result" in message:
            message["result"] = change_result(self.modes, method, params, message["result"])
        if self.on("numeric-string-ids") and isinstance(id, str) and id.isdigit():
            message["id"] = int(id)
        out = [dumps(message)]
        if method == "session/resume":
            session = self.session(params.get("sessionId"))
            session.resuming = session.replaying = False
            out += session.held_replay
            session.held_replay = []
        return out

    def _update(self, message: dict[str, Any], session_id: Any, update: dict[str, Any]) -> list[bytes]:
        session = self.session(session_id)
        kind = update.get("sessionUpdate")
        if kind == "state_update":
            return self._state(message, session_id, session, update)
        change_update(self.modes, update, resuming=session.resuming)
        line = dumps(message)
        if session.replaying and self.on("replay-after-response"):
            session.held_replay.append(line)
            return []
        out = [line]
        if kind in ("user_message", "user_message_chunk") and not session.resuming:
            session.plain_cancel = False  # a new turn
            out += self._extras(session_id)
        if session.held_running is not None and kind in _OUTPUT:
            out.append(session.held_running)
            session.held_running = None
        return out

    def _state(
        self, message: dict[str, Any], session_id: Any, session: _Session, update: dict[str, Any]
    ) -> list[bytes]:
        state, before = update.get("state"), session.state
        session.state = state if isinstance(state, str) else None
        reason = update.get("stopReason")
        out: list[bytes] = []
        if session.resuming and self.on("resume-no-state"):
            return []
        if state == "running" and before in (None, "idle"):
            if self.on("no-running"):
                return []
            if self.on("late-running"):
                session.held_running = dumps(message)
                return []
        if state == "requires_action" and self.on("no-requires-action"):
            return []
        if state == "idle":
            if session.held_running is not None:
                out.append(session.held_running)
                session.held_running = None
            if reason == "end_turn" and not session.resuming and self.on("no-idle-after-turn"):
                return out
            if reason == "end_turn" and not session.resuming and self.on("unknown-stop-reason"):
                update["stopReason"] = "done"
            if reason == "cancelled" and session.plain_cancel:
                session.plain_cancel = False
                if self.on("cancel-idle-no-reason"):
                    update.pop("stopReason", None)
                elif self.on("cancel-ends-error"):
                    update["stopReason"] = "error"
                elif self.on("cancel-aborted"):
                    update["stopReason"] = "aborted"
                elif self.on("update-after-cancel"):
                    late: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "messageId": "msg-late"}
                    late["content"] = {"type": "text", "text": "one more thing"}
                    return [*out, dumps(message), self._notice(session_id, late)]
        background = update.get("background")
        if isinstance(background, list) and background and self.on("background-omitted"):
            session.listings += 1
            if session.listings == 2:
                update.pop("background")
        return [*out, dumps(message)]

    def _notice(self, session_id: Any, update: dict[str, Any]) -> bytes:
        return dumps(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    def _extras(self, session_id: Any) -> list[bytes]:
        """What some modes add to each turn, right after the user message that starts it."""
        out: list[bytes] = []
        note = {"jsonrpc": "2.0", "method": "_reference/note", "params": {"sessionId": session_id, "text": "x"}}
        if self.on("invalid-utf8"):
            out.append(dumps(note).replace(b'"text":"x"', b'"text":"\xff"'))
        if self.on("multiline-json"):
            out.append(json.dumps(note, indent=2).encode())
        if self.on("bad-update"):
            chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "msg-bad", "content": {"type": "text"}}
            out.append(self._notice(session_id, chunk))
        if self.on("unknown-update-kind"):
            out.append(self._notice(session_id, {"sessionUpdate": "progress", "percent": 50}))
        for mode, method, params in (
            ("fs-call", "fs/read_text_file", {"sessionId": session_id, "path": "/etc/hostname"}),
            ("elicit-unadvertised", "elicitation/create", {"sessionId": session_id, "message": "Pick one"}),
        ):
            if self.on(mode):
                self.count += 1
                id = f"reference-broken-{self.count}"
                self.injected.add(_key(id))
                out.append(dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        return out
