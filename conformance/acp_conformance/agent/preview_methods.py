"""The reference agent's Preview methods (``--preview``): fork, title, archive, status, auth status, providers.

A mixin of ``ReferenceAgent`` (``server``), kept apart because these methods are served only with ``--preview``
and share nothing with the baseline's turn machinery but the session store.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from acp_session.errors import InvalidParams
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    PromptCapabilities,
    PromptEmbeddedContextCapabilities,
    SessionAdditionalDirectoriesCapabilities,
    SessionDeleteCapabilities,
    SessionInfoUpdate,
)

from .scenarios import available_commands
from .sessions import Emit, Session

if TYPE_CHECKING:
    from .sessions import SessionStore
    from .shared import SharedSessions

__all__ = ["PreviewMethods", "now", "preview_capabilities"]


def now() -> str:
    """A timestamp as sessions record it (``updatedAt``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def preview_capabilities(mcp: Any) -> mu.AgentCapabilities:
    """``--preview``: the baseline's capabilities (``mcp``: the MCP transports) and every Preview one this
    agent serves."""
    return mu.AgentCapabilities(
        session=mu.SessionCapabilities(
            prompt=PromptCapabilities(embedded_context=PromptEmbeddedContextCapabilities()),
            delete=SessionDeleteCapabilities(),
            additional_directories=SessionAdditionalDirectoriesCapabilities(),
            mcp=mcp,
            fork=mu.SessionForkCapabilities(),
            title=mu.SessionTitleCapabilities(),
            system_prompt=mu.SessionSystemPromptCapabilities(
                mode=mu.SessionSystemPromptModeCapabilities(override=mu.SessionSystemPromptOverrideCapabilities())
            ),
            archive=mu.SessionArchiveCapabilities(),
            status=mu.SessionStatusCapabilities(),
        ),
        auth=mu.AgentAuthCapabilities(status=mu.AuthStatusCapabilities()),
        providers=mu.ProvidersCapabilities(),
        meta={"authStatus": {}},  # the extension marker real agents advertise
    )


class PreviewMethods:
    """The Preview handlers; ``ReferenceAgent`` provides the store, the session lookups and the checks."""

    if TYPE_CHECKING:
        store: SessionStore
        shared: SharedSessions | None
        providers: dict[str, mu.ProviderCurrentConfig | None]

        _emit: Emit

        def _serve_here(self, session_id: str) -> None: ...
        def _session(self, session_id: str, *, open_only: bool = True) -> Session: ...
        @staticmethod
        def _check_path(path: str, what: str) -> None: ...
        def _check_mcp(self, servers: Any) -> list[dict[str, Any]]: ...
        def _system_prompt(self, value: Any) -> mu.SystemPrompt | None: ...

    async def fork_session(self, request: mu.ForkSessionRequest) -> mu.ForkSessionResponse:
        source = self._session(request.session_id, open_only=False)
        self._check_path(request.cwd, "cwd")
        servers = self._check_mcp(request.mcp_servers)
        system_prompt = self._system_prompt(request.system_prompt)
        extra = [] if request.additional_directories is UNSET else list(request.additional_directories)
        session = Session(
            mcp_servers=servers,  # a fork is given its MCP servers anew, as a new session is
            session_id=self.store.new_id(),
            cwd=request.cwd,
            emit_raw=self._emit,
            additional_directories=extra,
            title=source.title,
            updated_at=now(),
            history=list(source.history),  # the fork starts from the source's context
            system_prompt=system_prompt if system_prompt is not None else source.system_prompt,
            subagents=dict(source.subagents),
        )
        session.config.mode, session.config.thoughts = source.config.mode, source.config.thoughts
        session.counters.update(source.counters)  # ids the copied history uses are not handed out again
        self.store.add(session)
        self._serve_here(session.session_id)
        return mu.ForkSessionResponse(
            session_id=session.session_id,
            config_options=session.config.options(),
            available_commands=list(available_commands()),
        )

    async def set_title(self, request: mu.SetSessionTitleRequest) -> mu.SetSessionTitleResponse:
        session = self._session(request.session_id, open_only=False)
        title = " ".join(request.title.split())
        if not title:
            raise InvalidParams(data={"reason": "the title is empty after normalization"})
        session.title = title
        self.store.save(session)
        if session.open:
            await session.emit(SessionInfoUpdate(title=title))
        return mu.SetSessionTitleResponse(title=title)

    async def archive(self, request: mu.ArchiveSessionRequest) -> mu.ArchiveSessionResponse:
        self._session(request.session_id, open_only=False).archived = True
        return mu.ArchiveSessionResponse()

    async def unarchive(self, request: mu.UnarchiveSessionRequest) -> mu.UnarchiveSessionResponse:
        self._session(request.session_id, open_only=False).archived = False
        return mu.UnarchiveSessionResponse()

    async def session_status(self, request: mu.SessionStatusRequest) -> mu.SessionStatusResponse:
        session = self._session(request.session_id, open_only=False)
        if not session.open:
            return mu.SessionStatusResponse(status="saved")
        return mu.SessionStatusResponse(
            status="open", state=session.state_update(session.state, session.last_stop_reason)
        )

    async def auth_status(self, request: mu.AuthStatusRequest) -> mu.AuthStatusResponse:
        return mu.AuthStatusResponse(state="not_required")

    async def list_providers(self, request: mu.ListProvidersRequest) -> mu.ListProvidersResponse:
        return mu.ListProvidersResponse(
            providers=[
                mu.ProviderInfo(provider_id=name, supported=["openai", "anthropic"], required=False, current=current)
                for name, current in self.providers.items()
            ]
        )

    async def set_provider(self, request: mu.SetProviderRequest) -> mu.SetProviderResponse:
        if request.provider_id not in self.providers:
            raise InvalidParams(data={"reason": f"unknown provider {request.provider_id!r}"})
        self.providers[request.provider_id] = mu.ProviderCurrentConfig(
            api_type=request.api_type, base_url=request.base_url
        )
        return mu.SetProviderResponse()

    async def disable_provider(self, request: mu.DisableProviderRequest) -> mu.DisableProviderResponse:
        if request.provider_id not in self.providers:
            raise InvalidParams(data={"reason": f"unknown provider {request.provider_id!r}"})
        self.providers[request.provider_id] = None
        return mu.DisableProviderResponse()
