"""The reference agent's broken v1 front (``--broken v1-...``, for testing conformance runners): each mode breaks
one rule of protocol version 1 in what a method answers, advertises or sends, and nothing else, so a runner's
check for that rule must fail while every other check passes. The wire-level modes (ids, error shapes, bytes)
are ``v1_mutant_wire``'s; ``V1Mutants`` is what the v1 front (``v1_front.py``) asks at each point a mode acts.

A mode acts only on a connection that negotiated version 1; a v2 client gets the healthy agent.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Protocol

import msgspec

from acp_session.codec import convert, to_builtins
from acp_session.errors import AuthRequired, InvalidParams, MethodNotFound, RequestCancelled, ResourceNotFound
from acp_session.rpc import Connection
from acp_session.schema.v1 import types as v1

from .sessions import SessionStore
from .v1_modes import V1_BROKEN_MODES
from .v1_mutant_wire import MutantWire

__all__ = ["V1_BROKEN_MODES", "MutatedFront", "V1Mutants"]


class MutatedAgent(Protocol):
    """What the modes call on the v2 agent behind the front (``v1_front.V2Agent`` has it all)."""

    store: SessionStore

    def cancel(self, note: Any) -> None: ...
    async def close_session(self, request: Any) -> Any: ...
    async def list_sessions(self, request: Any) -> Any: ...
    async def delete_session(self, request: Any) -> Any: ...


class MutatedFront(Protocol):
    """What the modes need of the v1 front (``v1_front.V1Front``), a protocol so the two modules stay apart."""

    @property
    def conn(self) -> Connection: ...
    @property
    def agent(self) -> MutatedAgent: ...
    async def new_session(self, request: v1.NewSessionRequest) -> dict[str, Any]: ...


LOGIN = "reference-login"
FOREIGN_SESSION = "acp-reference-no-such-session"


class V1Mutants:
    """The modes one v1 connection runs with, and what each changes where the front asks."""

    def __init__(self, front: MutatedFront, broken: frozenset[str]) -> None:
        self.front = front
        self.modes = frozenset(mode for mode in broken if mode in V1_BROKEN_MODES)
        transport = front.conn.transport
        self.wire = transport if isinstance(transport, MutantWire) else None
        self.last_new: tuple[str, dict[str, Any]] | None = None  # the previous session/new: cwd, answer
        self.prompted: set[str] = set()
        self.cancelled: set[str] = set()  # sessions whose turn session/cancel ended
        self.closing: set[str] = set()  # sessions closed while a turn ran

    def on(self, mode: str) -> bool:
        return mode in self.modes

    # -- initialize and the methods it brings ----------------------------------------------------------------

    def initialize(self, params: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
        caps = answer["agentCapabilities"]
        if self.on("v1-bad-initialize"):
            caps["mcpCapabilities"] = []
        if self.on("v1-no-agent-info"):
            del answer["agentInfo"]
        if self.on("v1-version-by-client-info") and "clientInfo" not in params:
            answer["protocolVersion"] = 2
        offered = params.get("protocolVersion")
        if self.on("v1-echo-version") and isinstance(offered, int) and offered > 1:
            answer["protocolVersion"] = offered
        methods: list[dict[str, Any]] = []
        if self.on("v1-terminal-auth"):
            methods.append({"type": "terminal", "id": "reference-terminal", "name": "Log in in a terminal"})
        if self.on("v1-duplicate-auth-ids"):
            methods += [{"id": LOGIN, "name": "Log in"}, {"id": LOGIN, "name": "Log in again"}]
        if self.on("v1-no-authenticate") or self.on("v1-login-ineffective"):
            methods.append({"id": LOGIN, "name": "Log in"})
        if methods:
            answer["authMethods"] = methods
        if self.on("v1-image-unsupported"):
            caps["promptCapabilities"]["image"] = True
        if self.on("v1-audio-unsupported"):
            caps["promptCapabilities"]["audio"] = True
        return answer

    def install(self) -> None:
        """Register the changed handlers of methods the front shares with the v2 agent."""
        conn = self.front.conn
        if self.on("v1-no-authenticate"):
            conn.on_request("authenticate", self._no_authenticate)
        if self.on("v1-login-ineffective"):
            conn.on_request("authenticate", self._authenticate_anything)
        if self.modes & {"v1-list-needs-cwd", "v1-list-prefix-cwd", "v1-list-empty-null"}:
            conn.on_request("session/list", self._list)
        if self.modes & {"v1-delete-bad-result", "v1-delete-keeps", "v1-delete-unknown-error"}:
            conn.on_request("session/delete", self._delete)
        if self.modes & {"v1-cancel-as-error", "v1-updates-after-cancel", "v1-close-busy-error", "v1-close-idle-fails"}:
            conn.on_request("session/close", self._close)  # to tell a closed turn from a cancelled one
            conn.on_notification("session/cancel", self._cancel)
        if self.on("v1-unknown-method-code"):
            conn.set_fallback_request_handler(self._unknown_method)
        if self.on("v1-invalid-params-code"):
            conn.on_request("session/new", self._new_session_any_params)

    async def _no_authenticate(self, params: Any) -> Any:
        raise MethodNotFound(data={"method": "authenticate"})

    async def _authenticate_anything(self, params: Any) -> Any:
        return {}

    async def _unknown_method(self, method: str, params: bytes) -> Any:
        raise RuntimeError(f"unknown method {method}")  # answered -32603 (an internal error), not -32601

    async def _new_session_any_params(self, params: Any) -> Any:
        try:
            request = convert(params, v1.NewSessionRequest)
        except (msgspec.ValidationError, TypeError):
            raise RuntimeError("malformed session/new params") from None  # -32603, not -32602
        return await self.front.new_session(request)

    async def _list(self, params: Any) -> Any:
        from acp_session.schema.types import ListSessionsRequest

        cwd = params.get("cwd") if isinstance(params, dict) else None
        if cwd is None and self.on("v1-list-needs-cwd"):
            raise InvalidParams(data={"reason": "cwd is required"})
        if isinstance(cwd, str) and self.on("v1-list-prefix-cwd"):
            sessions = [
                {"sessionId": s.session_id, "cwd": s.cwd}
                for s in self.front.agent.store.all()
                if os.path.normpath(s.cwd).startswith(os.path.normpath(cwd))
            ]
            return {"sessions": sessions}
        answer = to_builtins(
            await self.front.agent.list_sessions(ListSessionsRequest(cwd=cwd) if cwd else ListSessionsRequest())
        )
        if not answer.get("sessions") and self.on("v1-list-empty-null"):
            answer["sessions"] = None
        return answer

    async def _delete(self, params: Any) -> Any:
        from acp_session.schema.types import DeleteSessionRequest

        sid = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(sid, str):
            raise InvalidParams(data={"reason": "sessionId is required"})
        known = self.front.agent.store.get(sid) is not None
        if not known and self.on("v1-delete-unknown-error"):
            raise ResourceNotFound(data={"sessionId": sid})
        if not self.on("v1-delete-keeps"):
            await self.front.agent.delete_session(DeleteSessionRequest(session_id=sid))
        return {"_meta": "deleted"} if self.on("v1-delete-bad-result") else {}

    async def _close(self, params: Any) -> Any:
        from acp_session.schema.types import CloseSessionRequest

        sid = params.get("sessionId") if isinstance(params, dict) else None
        session = self.front.agent.store.get(sid) if isinstance(sid, str) else None
        busy = session is not None and session.work_done is not None and not session.work_done.is_set()
        if session is not None and busy:
            self.closing.add(session.session_id)
        elif self.on("v1-close-idle-fails"):
            raise RuntimeError("closing an idle session failed")  # answered -32603
        return to_builtins(await self.front.agent.close_session(CloseSessionRequest(session_id=str(sid))))

    def _cancel(self, params: Any) -> None:
        from acp_session.schema.types import CancelSessionNotification

        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(sid, str):
            self.cancelled.add(sid)
            self.front.agent.cancel(CancelSessionNotification(session_id=sid))

    # -- sessions --------------------------------------------------------------------------------------------

    def check_new(self, request: v1.NewSessionRequest) -> dict[str, Any] | None:
        """Refuse the session/new, or answer it with an earlier session (None: create one)."""
        if self.on("v1-session-needs-login") or self.on("v1-login-ineffective"):
            raise AuthRequired(message="Authentication required")
        if self.on("v1-refuse-additional-dirs") and request.additional_directories:
            raise InvalidParams(data={"reason": "additionalDirectories are not supported"})
        last = self.last_new
        if self.on("v1-reuse-empty-session") and last is not None and last[0] == request.cwd:
            session = self.front.agent.store.get(last[1]["sessionId"])
            if session is not None and session.open and session.session_id not in self.prompted:
                return copy.deepcopy(last[1])
        return None

    def new_session(self, request: v1.NewSessionRequest, answer: dict[str, Any]) -> dict[str, Any]:
        self.last_new = (request.cwd, copy.deepcopy(answer))
        if self.on("v1-bad-new-session"):
            answer["_meta"] = "not an object"
        if self.on("v1-bad-current-mode"):
            answer["modes"]["currentModeId"] = "no-such-mode"
        if self.on("v1-bad-config-value"):
            for option in answer["configOptions"]:
                if option.get("type") == "select":
                    option["currentValue"] = "no-such-value"
        return answer

    def commands(self, update: dict[str, Any]) -> dict[str, Any]:
        if self.on("v1-bad-commands"):
            for command in update["availableCommands"]:
                command.pop("description", None)
        return update

    def boolean_options(self) -> bool:
        return self.on("v1-boolean-option")

    def notices(self) -> bool:
        return self.on("v1-unasked-notice")

    def update(self, plain: dict[str, Any]) -> dict[str, Any]:
        """A v1 update as sent (tool kinds, plan priorities)."""
        kind = plain.get("sessionUpdate")
        if kind in ("tool_call", "tool_call_update") and "kind" in plain and self.on("v1-bad-tool-kind"):
            plain["kind"] = "hammer"
        if kind == "plan" and self.on("v1-bad-plan-priority"):
            for entry in plain.get("entries") or []:
                entry["priority"] = "urgent"
        return plain

    def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.on("v1-bad-permission"):
            for option in params["options"]:
                option.pop("name", None)
        return params

    def set_mode(self) -> None:
        if self.on("v1-set-mode-fails"):
            raise RuntimeError("setting the mode failed")  # answered -32603

    def config_answer(self, config_id: str, answer: dict[str, Any]) -> dict[str, Any]:
        if self.on("v1-partial-config-answer"):
            answer["configOptions"] = [o for o in answer["configOptions"] if o.get("id") != config_id]
        return answer

    # -- load and resume -------------------------------------------------------------------------------------

    def replays(self) -> bool:
        """Whether session/load replays before its answer (not: nothing, or after it)."""
        return not (self.on("v1-no-replay") or self.on("v1-replay-after-answer"))

    def replay_after(self, session_id: str, updates: list[dict[str, Any]]) -> None:
        if self.on("v1-replay-after-answer") and self.wire is not None:
            for update in updates:
                message = {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": session_id, "update": update},
                }
                self.wire.after_answer("session/load", session_id, message)

    def load_answer(self, answer: dict[str, Any]) -> dict[str, Any] | None:
        if self.on("v1-load-null"):
            return None
        if self.on("v1-load-bad-result"):
            answer["_meta"] = "not an object"
        return answer

    def check_resume(self, request: v1.ResumeSessionRequest) -> None:
        if self.on("v1-resume-needs-mcp") and not isinstance(request.mcp_servers, list):
            raise InvalidParams(data={"reason": "mcpServers is required"})

    def resume_replays(self) -> bool:
        return self.on("v1-resume-replays")

    # -- prompts ---------------------------------------------------------------------------------------------

    def check_prompt(self, request: v1.PromptRequest) -> None:
        self.prompted.add(request.session_id)
        if self.on("v1-reject-meta") and isinstance(request.meta, dict):
            raise InvalidParams(data={"reason": "_meta is not accepted"})
        for block in request.prompt:
            if isinstance(block, v1.ResourceLink) and self.on("v1-refuse-resource-link"):
                raise InvalidParams(data={"reason": "resource_link blocks are not supported"})
            if isinstance(block, v1.EmbeddedResource) and self.on("v1-embedded-refused"):
                raise InvalidParams(data={"reason": "resource blocks are not supported"})

    async def turn_started(self, session_id: str) -> None:
        notify = self.front.conn.notify
        if self.on("v1-foreign-session-update"):
            thought = {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Thinking."}}
            await notify("session/update", {"sessionId": FOREIGN_SESSION, "update": thought})
        if self.on("v1-unasked-notice"):
            notice = {"sessionUpdate": "notice", "severity": "info", "title": "A notice nobody asked for"}
            await notify("session/update", {"sessionId": session_id, "update": notice})

    def prompt_result(self, session_id: str, result: dict[str, Any]) -> dict[str, Any]:
        reason = result.get("stopReason")
        closed = session_id in self.closing
        self.closing.discard(session_id)
        by_cancel = session_id in self.cancelled
        self.cancelled.discard(session_id)
        if reason == "cancelled" and closed and self.on("v1-close-busy-error"):
            raise RuntimeError("the session was closed")  # answered -32603
        if reason == "cancelled" and by_cancel and not closed:
            if self.on("v1-cancel-as-error"):
                raise RequestCancelled(message="the turn was cancelled")
            if self.on("v1-updates-after-cancel") and self.wire is not None:
                late = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "One more thing."}}
                message = {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": session_id, "update": late},
                }
                self.wire.after_answer("session/prompt", session_id, message)
        if reason == "end_turn" and self.on("v1-bad-stop-reason"):
            result["stopReason"] = "done"
        if self.on("v1-root-field"):
            result["turnSeconds"] = 0.1
        return result

    # -- the client's methods ----------------------------------------------------------------------------------

    def forces(self, what: str) -> bool:
        """Whether the workspace calls the client's ``what`` (fs, terminal, elicit) though it was not advertised."""
        return self.on(f"v1-{what}-unasked")

    def read_path(self, path: str) -> str:
        return os.path.basename(path) if self.on("v1-relative-fs-path") else path

    def output_terminal(self, terminal_id: str) -> str:
        return f"{terminal_id}-elsewhere" if self.on("v1-foreign-terminal") else terminal_id
