"""The reference agent with every optional capability (``--all-capabilities``) or with a defect in one of its
handlers (``mutants.SERVER_MODES``): a subclass of ``ReferenceAgent``, so the healthy agent's code stays as it is.

``--all-capabilities`` adds what the plain reference agent does not offer: image and audio prompts, an ``agent``
login method served by ``auth/login`` and ``auth/logout`` (any login succeeds; the agent never requires one), and
a ``terminal`` login method for clients that enable terminal authentication. The conformance checks that judge
those features have nothing to observe on the plain agent.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import msgspec
from msgspec import UNSET

from acp_session.errors import AuthRequired, InternalError, InvalidParams, ResourceNotFound
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    AudioContent,
    CancelSessionNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    ConfigOptionUpdate,
    ContentBlock,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ImageContent,
    ListSessionsRequest,
    ListSessionsResponse,
    NewSessionResponse,
    PromptRequest,
    ReplayFromStart,
    ResumeSessionResponse,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    TextContent,
)

from .scenarios import available_commands
from .server import ReferenceAgent

__all__ = ["LOGIN_METHOD", "VariantAgent"]

LOGIN_METHOD = "reference-login"


def _terminal_enabled(params: Any) -> bool:
    caps = params.get("capabilities") if isinstance(params, dict) else None
    auth = caps.get("auth") if isinstance(caps, dict) else None
    return isinstance(auth, dict) and isinstance(auth.get("terminal"), dict)


def _text(blocks: list[ContentBlock]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextContent))


class VariantAgent(ReferenceAgent):
    """``ReferenceAgent`` with ``--all-capabilities`` and the handler-level ``--broken`` modes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.last_new: tuple[str, str] | None = None  # reuse-idle-session: the last new session and its cwd
        if self.options.all_capabilities:
            if not self.broken("auth-login-missing"):
                self.conn.on_request("auth/login", self.login)
            self.conn.on_request("auth/logout", self.logout)

    # -- --all-capabilities ----------------------------------------------------------------------------------

    def initialize(self, params: Any) -> Any:  # inline, as the reference agent's (server.py): a plain function
        answer = super().initialize(params)
        if self.v1 is not None or not self.options.all_capabilities:
            return answer
        plain: dict[str, Any] = answer if isinstance(answer, dict) else msgspec.to_builtins(answer)
        session = plain.setdefault("capabilities", {}).setdefault("session", {})
        session.setdefault("prompt", {}).update(image={}, audio={})
        plain["authMethods"] = self.auth_methods(params)
        return plain

    def auth_methods(self, params: Any) -> list[dict[str, Any]]:
        methods: list[dict[str, Any]] = [{"type": "agent", "methodId": LOGIN_METHOD, "name": "Reference login"}]
        if self.broken("duplicate-auth-ids"):
            methods.append({"type": "agent", "methodId": LOGIN_METHOD, "name": "Reference login, again"})
        if self.broken("unknown-auth-type"):
            methods.append({"type": "password", "methodId": "reference-password", "name": "Password"})
        if _terminal_enabled(params) or self.broken("terminal-auth-ungated"):
            env = [{"name": "REFERENCE_LOGIN", "value": "1"}]
            if self.broken("duplicate-terminal-env"):
                env.append({"name": "REFERENCE_LOGIN", "value": "2"})
            methods.append(
                {
                    "type": "terminal",
                    "methodId": "reference-terminal-login",
                    "name": "Log in in a terminal",
                    "args": ["--login"],
                    "env": env,
                }
            )
        return methods

    async def login(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or params.get("methodId") != LOGIN_METHOD:
            raise InvalidParams(data={"reason": f"not a login method of this agent: {params!r}"})
        return {}

    async def logout(self, params: Any) -> dict[str, Any]:
        return {}

    def _check_blocks(self, blocks: list[ContentBlock]) -> None:  # type: ignore[override]
        media = self.options.all_capabilities or self.broken("accept-image")
        super()._check_blocks([b for b in blocks if not (media and isinstance(b, (ImageContent, AudioContent)))])

    # -- handler-level defects ----------------------------------------------------------------------------

    async def new_session(self, request: mu.NewSessionRequest) -> NewSessionResponse:
        if self.broken("login-required-without-methods"):
            raise AuthRequired(message="Authentication required")
        reused = self.store.get(self.last_new[0]) if self.last_new and self.last_new[1] == request.cwd else None
        if self.broken("reuse-idle-session") and reused is not None and reused.open:
            return NewSessionResponse(
                session_id=reused.session_id,
                config_options=reused.config.options(),
                available_commands=list(available_commands()),
            )
        response = await super().new_session(request)
        self.last_new = (response.session_id, request.cwd)
        return response

    def _check_mcp(self, servers: Any) -> list[dict[str, Any]]:
        if self.broken("accept-unknown-mcp"):
            return msgspec.to_builtins(servers) if isinstance(servers, list) else []
        return super()._check_mcp(servers)

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        cwd = request.cwd if isinstance(request.cwd, str) else None
        if cwd is None or not (self.broken("list-empty-not-empty") or self.broken("list-prefix-cwd")):
            return await super().list_sessions(request)
        everything = await super().list_sessions(msgspec.structs.replace(request, cwd=UNSET))
        exact = [s for s in everything.sessions if s.cwd == cwd]
        if self.broken("list-prefix-cwd"):
            exact += [s for s in everything.sessions if s.cwd.startswith(cwd.rstrip(os.sep) + os.sep)]
            return msgspec.structs.replace(everything, sessions=exact)
        return everything if not exact else msgspec.structs.replace(everything, sessions=exact)

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        session = self.store.get(request.session_id)
        if session is None and self.broken("delete-twice-fails"):
            raise ResourceNotFound(message="Session not found")
        if session is not None and self.broken("delete-keeps-listing"):
            if session.open:
                await self._end_session_work(session)
                session.open = False
            return DeleteSessionResponse()
        return await super().delete_session(request)

    async def prompt(self, request: PromptRequest) -> Any:
        session = self.store.get(request.session_id)
        if session is not None and not session.open and self.broken("prompt-after-close"):
            session.open = True
        if self.last_new is not None and self.last_new[0] == request.session_id:
            self.last_new = None
        response = await super().prompt(request)
        if self.broken("error-turn-answers-error") and _text(request.prompt).startswith("/fail"):
            raise InternalError(message="the work failed")
        if self.broken("partial-config-update") and session is not None:
            await session.emit(ConfigOptionUpdate(config_options=session.config.options()[:1]))
        return response

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        session = self.store.get(request.session_id)
        if session is not None and session.open and session.busy:
            if self.broken("close-without-cancel"):
                session.open = False  # nothing more is sent for it, not even its cancelled idle update
                self.tg.start_soon(self._end_session_work, session)
                return CloseSessionResponse()
            if self.broken("close-drops-held"):
                session.held.clear()  # their requests wait for a turn that never comes
        return await super().close_session(request)

    def cancel(self, note: CancelSessionNotification) -> None:
        session = self._find(note.session_id)
        if session is None or not session.open or not self.broken("cancel-keeps-held"):
            super().cancel(note)
            return
        held = list(session.held)
        session.held.clear()
        self._cancel_foreground(session)
        session.held.extend(held)  # inserted once the cancelled work ends, instead of -32800

    async def resume_session(self, request: mu.ResumeSessionRequest) -> ResumeSessionResponse:
        replay = request.replay_from
        if self.broken("resume-replays-always") and (replay is UNSET or replay is None):
            request = msgspec.structs.replace(request, replay_from=ReplayFromStart())
        elif (
            self.broken("ignore-replay-cursor")
            and replay not in (UNSET, None)
            and not isinstance(replay, ReplayFromStart)
        ):
            request = msgspec.structs.replace(request, replay_from=UNSET)
        return await super().resume_session(request)

    async def set_config_option(self, request: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse:
        if not (self.broken("config-not-applied") or self.broken("config-accepts-unknown")):
            return await super().set_config_option(request)
        plain = request if isinstance(request, dict) else msgspec.to_builtins(request)
        session = self._session(str(plain.get("sessionId")))
        known = {msgspec.to_builtins(o).get("configId") for o in session.config.options()}
        if plain.get("configId") not in known and self.broken("config-accepts-unknown"):
            return SetSessionConfigOptionResponse(config_options=session.config.options())
        before = copy.copy(session.config)
        answer = await super().set_config_option(request)  # refuses what it refuses
        if self.broken("config-not-applied"):
            session.config = before  # ... but keeps the old value, and says so
            return SetSessionConfigOptionResponse(config_options=session.config.options())
        return answer
