"""The reference agent's protocol surface: one handler per ACP v2 agent method, on ``acp_session.rpc``."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import TaskGroup
from msgspec import UNSET

from acp_session.codec import decoder
from acp_session.errors import (
    AcpError,
    InvalidParams,
    RequestCancelled,
    ResourceNotFound,
    RpcError,
)
from acp_session.rpc import Connection, PendingRequest
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    AgentCapabilities,
    CancelSessionNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentBlock,
    DeleteSessionRequest,
    DeleteSessionResponse,
    EmbeddedResource,
    Implementation,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    McpHttpCapabilities,
    McpStdioCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptEmbeddedContextCapabilities,
    PromptRequest,
    PromptResponse,
    ReplayFromStart,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResourceLink,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionDeleteCapabilities,
    SessionInfo,
    SessionNotFoundErrorData,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    TextContent,
    ToolCallUpdated,
    UserMessage,
)
from acp_session.schema.unstable import McpAcpCapabilities, McpCapabilities

from . import AGENT_NAME, AGENT_VERSION, PROTOCOL_VERSION, mcp_client, negotiation
from .config import apply_config
from .misbehave import rejection_as_approval
from .mutants import V2_BROKEN_MODES
from .preview_methods import PreviewMethods, now, preview_capabilities
from .scenarios import SCENARIOS, TurnContext, TurnFailed, available_commands, offline_reply, parse_prompt
from .sessions import HeldPrompt, Session, SessionStore
from .v2_workspace import V2Workspace

if TYPE_CHECKING:
    from .shared import SharedSessions
    from .v1_front import V1Front

__all__ = ["BROKEN_MODES", "AgentOptions", "ReferenceAgent"]

_log = logging.getLogger("acp_conformance.agent")

BROKEN_MODES: dict[str, str] = {
    "never-idle": "never send the idle state_update that ends foreground work (turn end, cancel, close)",
    "no-message-id": "answer session/prompt with an empty result (no messageId)",
    "junk-stdout": "write a line of plain text to stdout before serving",
    "ignore-cancel": "ignore session/cancel notifications entirely",
    "boolean-capability": "advertise session.delete as true (v1's boolean encoding) instead of an object marker",
    **V2_BROKEN_MODES,
    "act-after-reject": "take a permission refused with a reject option for an approval (/edit ask then writes)",
    "edit-unasked": "/edit ask writes its files without asking for permission first",
    "late-version": "fix the negotiated version only once initialize's task runs (a pipelined request gets v2's)",
}
PAGE_SIZE = 20
VENDOR_MARKER = {"acp-reference-agent": {"scenarios": True}}  # capabilities._meta: prompts starting /NAME
_PERMISSION_ANSWER = decoder(RequestPermissionResponse)


class _EmptyResult(msgspec.Struct):
    """Deliberately wrong prompt result, only for ``--broken no-message-id``."""


@dataclass
class AgentOptions:
    broken: frozenset[str] = frozenset()
    delay: float = 0.0  # seconds between streamed chunks of ordinary replies
    store: str | None = None  # JSON file that keeps sessions across agent processes (None: memory only)
    mcp: frozenset[str] = frozenset({"stdio", "http", "acp"})  # MCP transports advertised (with the mcp extra)
    preview: bool = False  # advertise and serve the Preview methods (fork, title, system prompt, ...)
    versions: tuple[int, ...] = negotiation.SUPPORTED_VERSIONS  # the protocol versions spoken, oldest first
    all_capabilities: bool = False  # image and audio prompts, login methods (variants.VariantAgent)


def _mcp_capabilities(offered: frozenset[str]) -> Any:
    """The MCP transports ``/mcp`` can reach (none without the ``mcp`` extra); ``acp`` is unstable."""
    if not offered:
        return UNSET
    return McpCapabilities(
        stdio=McpStdioCapabilities() if "stdio" in offered else UNSET,
        http=McpHttpCapabilities() if "http" in offered else UNSET,
        acp=McpAcpCapabilities() if "acp" in offered else UNSET,
    )


class ReferenceAgent(PreviewMethods):
    """Registers every baseline agent method on a ``Connection`` and runs the sessions' work."""

    offered: Any = None  # the v2 client's capabilities (form elicitation: v2_workspace)

    def __init__(
        self,
        conn: Connection,
        tg: TaskGroup,
        options: AgentOptions | None = None,
        shared: SharedSessions | None = None,
    ) -> None:
        self.conn = conn
        self.tg = tg
        self.options = options or AgentOptions()
        # --listen: one server-wide store; a session is served by the connection that last created or resumed it.
        self.shared = shared
        self.store = shared.store if shared is not None else SessionStore(self.options.store, self.send_update)
        self._emit = shared.send_update if shared is not None else self.send_update  # new sessions' emit_raw
        self.v1: V1Front | None = None  # set when the client negotiated protocol version 1
        on = conn.on_request
        # Plain params: the version is read before the shape (negotiation.py). Inline: the reader runs it before it
        # reads the next message, so a request pipelined after it finds the negotiated version's handlers.
        on("initialize", self.initialize, inline=not self.broken("late-version"))
        on("session/new", self.new_session, decoder(mu.NewSessionRequest))
        on("session/list", self.list_sessions, decoder(ListSessionsRequest))
        on("session/resume", self.resume_session, decoder(mu.ResumeSessionRequest))
        on("session/close", self.close_session, decoder(CloseSessionRequest))
        on("session/delete", self.delete_session, decoder(DeleteSessionRequest))
        on("session/set_config_option", self.set_config_option, decoder(SetSessionConfigOptionRequest))
        on("session/prompt", self.prompt, decoder(PromptRequest))
        conn.on_notification("session/cancel", self.cancel, decoder(CancelSessionNotification))
        if self.options.preview:
            on("session/fork", self.fork_session, decoder(mu.ForkSessionRequest))
            on("session/set_title", self.set_title, decoder(mu.SetSessionTitleRequest))
            on("session/archive", self.archive, decoder(mu.ArchiveSessionRequest))
            on("session/unarchive", self.unarchive, decoder(mu.UnarchiveSessionRequest))
            on("session/status", self.session_status, decoder(mu.SessionStatusRequest))
            on("auth/status", self.auth_status, decoder(mu.AuthStatusRequest))
            on("providers/list", self.list_providers, decoder(mu.ListProvidersRequest))
            on("providers/set", self.set_provider, decoder(mu.SetProviderRequest))
            on("providers/disable", self.disable_provider, decoder(mu.DisableProviderRequest))
        self.providers: dict[str, mu.ProviderCurrentConfig | None] = {"reference": None}

    def _serve_here(self, session_id: str) -> None:
        """--listen: this connection now serves ``session_id`` (its updates go to this connection's client)."""
        if self.shared is not None:
            self.shared.attach(session_id, self)

    def broken(self, mode: str) -> bool:
        return mode in self.options.broken

    # -- helpers ---------------------------------------------------------------------------------------

    async def send_update(self, session_id: str, update: mu.SessionUpdate) -> None:
        if self.v1 is not None:
            await self.v1.send_update(session_id, update)
            return
        await self.conn.notify("session/update", mu.UpdateSessionNotification(session_id=session_id, update=update))

    def _find(self, session_id: str) -> Session | None:
        """A session of the store, or a subagent (child) session of one."""
        session = self.store.get(session_id)
        if session is None:
            for parent in self.store.all():
                child = parent.subagents.get(session_id)
                if child is not None:
                    return child
        return session

    def _session(self, session_id: str, *, open_only: bool = True) -> Session:
        session = self.store.get(session_id)
        unserved = open_only and self.shared is not None and not self.shared.serves(session_id, self)
        if session is None or (open_only and not session.open) or unserved:
            raise ResourceNotFound(
                message="Session not found"
                if session is None
                else "Session is not active" + (" on this connection (resume it first)" if unserved else ""),
                data=msgspec.to_builtins(SessionNotFoundErrorData(session_id=session_id)),
            )
        return session

    @staticmethod
    def _check_path(path: str, what: str) -> None:
        if not os.path.isabs(path):
            raise InvalidParams(data={"reason": f"{what} must be an absolute path", "path": path})

    def _mcp_transports(self) -> frozenset[str]:
        return mcp_client.transports() & self.options.mcp

    def _check_mcp(self, servers: Any) -> list[dict[str, Any]]:
        """The session's MCP servers as plain objects; a transport not advertised is refused (ACP2-066)."""
        plain = msgspec.to_builtins(servers) if isinstance(servers, list) else []
        offered = self._mcp_transports()
        for server in plain:
            kind = server.get("type") if isinstance(server, dict) else None
            if kind not in offered:
                raise InvalidParams(data={"reason": f"MCP transport {kind!r} is not supported by this agent"})
            if kind == "stdio" and not os.path.isabs(server.get("command", "")):
                raise InvalidParams(data={"reason": "an MCP server's command must be an absolute path"})
        return plain

    # -- initialize ------------------------------------------------------------------------------------

    def initialize(self, params: Any) -> Any:
        versions = self.options.versions  # --listen negotiates as stdio does: a v1 offer gets v1's method set
        if negotiation.chosen_version(params, versions) == 1:
            from .v1_front import V1Front  # v1's front and types load when a client speaks v1, not at start-up

            self.v1 = V1Front(self)
            return self.v1.initialize(params)
        self.offered = negotiation.v2_request(params, versions).capabilities  # -32602 names the versions
        answer = InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the highest we support at or below the requested one
            info=Implementation(name=AGENT_NAME, version=AGENT_VERSION, title="ACP reference agent"),
            capabilities=preview_capabilities(_mcp_capabilities(self._mcp_transports()))
            if self.options.preview
            else AgentCapabilities(
                session=SessionCapabilities(
                    prompt=PromptCapabilities(embedded_context=PromptEmbeddedContextCapabilities()),
                    delete=SessionDeleteCapabilities(),
                    additional_directories=SessionAdditionalDirectoriesCapabilities(),
                    mcp=_mcp_capabilities(self._mcp_transports()),
                ),
                meta=VENDOR_MARKER,  # a vendor extension goes in _meta (extensibility.mdx, ACP-EXT-202)
            ),
        )
        if self.broken("boolean-capability"):
            plain = msgspec.to_builtins(answer)
            plain["capabilities"]["session"]["delete"] = True  # v1's encoding; v2 markers are objects
            return plain
        return answer

    def _system_prompt(self, value: Any) -> mu.SystemPrompt | None:
        """A lifecycle request's ``systemPrompt``: only with ``--preview``, a known mode and text content."""
        if value is UNSET or value is None:
            return None
        if not self.options.preview:
            raise InvalidParams(data={"reason": "systemPrompt is not supported (session.systemPrompt not advertised)"})
        if value.mode not in ("append", "override"):
            raise InvalidParams(data={"reason": f"unsupported systemPrompt mode {value.mode!r}"})
        if not value.content or not all(isinstance(b, TextContent) for b in value.content):
            raise InvalidParams(data={"reason": "systemPrompt needs text content blocks"})
        prompt: mu.SystemPrompt = value
        return prompt

    # -- session setup ---------------------------------------------------------------------------------

    async def new_session(self, request: mu.NewSessionRequest) -> NewSessionResponse:
        self._check_path(request.cwd, "cwd")
        extra = [] if request.additional_directories is UNSET else list(request.additional_directories)
        for path in extra:
            self._check_path(path, "additionalDirectories entry")
        servers = self._check_mcp(request.mcp_servers)
        system_prompt = self._system_prompt(request.system_prompt)
        session = Session(
            session_id=self.store.new_id(),
            cwd=request.cwd,
            emit_raw=self._emit,
            additional_directories=extra,
            updated_at=now(),
            mcp_servers=servers,
            system_prompt=system_prompt,
        )
        self.store.add(session)
        if self.shared is not None:
            self.shared.attach(session.session_id, self)
        return NewSessionResponse(
            session_id=session.session_id,
            config_options=session.config.options(),
            available_commands=list(available_commands()),
        )

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        sessions = self.store.all()
        if isinstance(request.cwd, str):
            self._check_path(request.cwd, "cwd")
            sessions = [s for s in sessions if os.path.normpath(s.cwd) == os.path.normpath(request.cwd)]
        start = 0
        if isinstance(request.cursor, str):
            prefix, _, number = request.cursor.partition(":")
            if prefix != "offset" or not number.isdigit():
                raise InvalidParams(data={"reason": "invalid cursor"})
            start = int(number)  # past the end when sessions went since (other clients): an empty page
        page = sessions[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(sessions)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.session_id,
                    cwd=s.cwd,
                    additional_directories=list(s.additional_directories) if s.additional_directories else UNSET,
                    title=s.title if s.title is not None else UNSET,
                    updated_at=s.updated_at if s.updated_at is not None else UNSET,
                )
                for s in page
            ],
            next_cursor=f"offset:{start + PAGE_SIZE}" if more else UNSET,
        )

    async def resume_session(self, request: mu.ResumeSessionRequest) -> ResumeSessionResponse:
        session = self._session(request.session_id, open_only=False)
        system_prompt = self._system_prompt(request.system_prompt)
        if system_prompt is not None:
            session.system_prompt = system_prompt
        self._check_path(request.cwd, "cwd")
        if os.path.normpath(request.cwd) != os.path.normpath(session.cwd):
            raise InvalidParams(data={"reason": "cwd differs from the session's working directory"})
        servers = self._check_mcp(request.mcp_servers)
        replay = request.replay_from
        if replay is not UNSET and replay is not None and not isinstance(replay, ReplayFromStart):
            # Never substitute another cursor or resume without replay (ACP2-070, ACP2-072).
            raise InvalidParams(data={"reason": "unsupported replay cursor", "replayFrom": replay})
        if request.additional_directories is not UNSET:
            for path in request.additional_directories:
                self._check_path(path, "additionalDirectories entry")
            session.additional_directories = list(request.additional_directories)
        else:
            session.additional_directories = []
        session.mcp_servers = servers  # a resume gives the session's MCP servers anew
        session.open = True
        if self.shared is not None:
            self.shared.begin_resume(session.session_id, self)  # live updates wait for the replay
        try:
            if isinstance(replay, ReplayFromStart):
                await self._replay(session)
            # The current-state snapshot after any replay and before the response (ACP2-039, ACP2-055).
            await self.send_update(session.session_id, session.state_update(session.state, session.last_stop_reason))
        finally:
            if self.shared is not None:
                await self.shared.end_resume(session.session_id)
        return ResumeSessionResponse(config_options=session.config.options(), available_commands=available_commands())

    async def _replay(self, session: Session) -> None:
        """Re-send a session's history; a subagent's own history follows the update that announced it."""
        announced: set[str] = set()
        for update in list(session.history):
            await self.send_update(session.session_id, update)
            if isinstance(update, mu.SubagentUpdate) and update.session_id not in announced:
                announced.add(update.session_id)
                child = session.subagents.get(update.session_id)
                if child is not None:
                    child.open = True
                    for child_update in list(child.history):
                        await self.send_update(child.session_id, child_update)

    async def close_session(self, request: CloseSessionRequest) -> CloseSessionResponse:
        session = self.store.get(request.session_id)
        if session is None or not session.open:
            return CloseSessionResponse()  # closing what is not active succeeds (ACP2-074)
        await self._end_session_work(session)
        session.open = False  # nothing more is sent for it after the response
        return CloseSessionResponse()

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        session = self.store.remove(request.session_id)
        if self.shared is not None:
            self.shared.forget(request.session_id)
        if session is not None and session.open:
            await self._end_session_work(session)
            session.open = False
        return DeleteSessionResponse()  # deleting an unknown session succeeds silently

    async def _end_session_work(self, session: Session) -> None:
        """Cancel foreground work as session/cancel would, wait for its final updates, stop background work."""
        self._cancel_foreground(session)
        if session.work_done is not None:
            with anyio.move_on_after(5):
                await session.work_done.wait()
        for scope in session.background_scopes:
            scope.cancel()
        session.background_scopes.clear()

    async def set_config_option(self, request: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse:
        session_id = request.get("sessionId") if isinstance(request, dict) else request.session_id
        session = self._session(str(session_id))
        apply_config(session.config, request)
        self.store.save(session)
        return SetSessionConfigOptionResponse(config_options=session.config.options())

    # -- prompts ---------------------------------------------------------------------------------------

    @staticmethod
    def _check_blocks(blocks: list[ContentBlock]) -> None:
        for block in blocks:
            if not isinstance(block, (TextContent, ResourceLink, EmbeddedResource)):
                kind = block.tag if isinstance(block, dict) else type(block).__name__
                # Content types this agent did not advertise are rejected (ACP2-012).
                raise InvalidParams(data={"reason": f"unsupported content block type {kind!r}"})

    async def prompt(self, request: PromptRequest) -> Any:
        session = self._session(request.session_id)
        self._check_blocks(request.prompt)
        if session.busy:
            held = HeldPrompt()
            session.held.append(held)
            inserted = False
            try:
                await held.go.wait()
                if held.withdrawn:
                    raise RequestCancelled(message="the prompt was withdrawn before it was inserted")
                if not session.open:
                    raise RequestCancelled(message="the session was closed")
                inserted = True
            finally:
                if held in session.held:
                    session.held.remove(held)
                elif held.go.is_set() and not held.withdrawn and not inserted:
                    self._release(session)  # our turn came but we were cancelled: pass it on
        else:
            session.busy = True
        message_id = session.next_id("msg-user")
        session.updated_at = now()
        await session.set_state("running")
        await session.emit(UserMessage(message_id=message_id, content=list(request.prompt)))
        session.work_done = anyio.Event()
        # The scope exists before the task starts, so a session/cancel right after insertion is not lost.
        session.work_scope = anyio.CancelScope()
        session.cancelling = False
        self.tg.start_soon(self._run_work, session, session.work_scope, message_id, list(request.prompt))
        if self.broken("no-message-id"):
            return _EmptyResult()
        return PromptResponse(message_id=message_id)

    def _release(self, session: Session) -> None:
        """The foreground work ended: insert the next held prompt, if any."""
        while session.held:
            held = session.held.popleft()
            if not held.withdrawn:
                held.go.set()
                return
        session.busy = False

    async def _request_permission(
        self, session: Session, request: RequestPermissionRequest
    ) -> RequestPermissionResponse | None:
        answer = await self._ask_and_wait(session, request)
        if self.broken("act-after-reject") and answer is not None:
            return rejection_as_approval(request, answer)
        return answer

    async def _ask_and_wait(
        self, session: Session, request: RequestPermissionRequest
    ) -> RequestPermissionResponse | None:
        if self.shared is not None:
            return await self.shared.request_permission(session, request)  # asked again after a reconnect
        session = self._find(request.session_id) or session  # a subagent's request waits on the child
        pending = self.ask_permission(request)
        session.permissions.add(pending)
        # The whole foreground workflow waits for the user now (ACP2-048, ACP2-052).
        await session.set_state("requires_action")
        try:
            return await pending
        except RpcError:
            return None  # any error answer is not an approval
        finally:
            session.permissions.discard(pending)

    def ask_permission(self, request: RequestPermissionRequest) -> PendingRequest[RequestPermissionResponse]:
        """Send ``request`` to this connection's client in the shape of the version it negotiated (v1: a bare
        ``toolCall``); one place, so the stdio and --listen paths cannot ask a v1 client in v2's shape."""
        if self.v1 is not None:
            return self.v1.request_permission(request)
        return self.conn.request("session/request_permission", request, decode=_PERMISSION_ANSWER)

    def _start_background(self, session: Session, work: Callable[[], Awaitable[None]]) -> None:
        scope = anyio.CancelScope()
        session.background_scopes.append(scope)

        async def run() -> None:
            with scope:
                try:
                    await work()
                except Exception:
                    _log.exception("background work failed")
            if scope in session.background_scopes:
                session.background_scopes.remove(scope)

        self.tg.start_soon(run)

    async def _run_work(
        self, session: Session, scope: anyio.CancelScope, message_id: str, blocks: list[ContentBlock]
    ) -> None:
        name, args = parse_prompt(blocks)
        ctx = TurnContext(
            session=session,
            message_id=message_id,
            args=args,
            blocks=blocks,
            request_permission=lambda request: self._request_permission(session, request),
            start_background=lambda work: self._start_background(session, work),
            delay=self.options.delay,
            connection=self.conn,
            notify=self.conn.notify,
            workspace=V2Workspace(self, session) if self.v1 is None else self.v1.workspace(session.session_id),
            protocol_version=1 if self.v1 is not None else PROTOCOL_VERSION,
            broken=self.options.broken,
        )
        stop_reason: str | None = "end_turn"
        error = None
        try:
            with scope:
                try:
                    if name is None:
                        stop_reason = await offline_reply(ctx, args)
                    else:
                        stop_reason = await SCENARIOS[name][1](ctx)
                except TurnFailed as exc:
                    stop_reason, error = "error", exc.error
                except (AcpError, Exception):
                    if not session.cancelling:
                        _log.exception("scenario %r failed", name)
                        stop_reason = "error"
            if session.cancelling or scope.cancelled_caught:
                # Errors caused by aborting are reported as cancelled, never as error (ACP2-047, ACP2-095).
                stop_reason, error = "cancelled", None
                for tc in sorted(ctx.open_tool_calls):
                    # Final updates go out before the idle update that reports cancellation (ACP2-096).
                    await session.emit(ToolCallUpdated(tool_call_id=tc, status="cancelled"))
        finally:
            session.work_scope = None
            session.cancelling = False
            with anyio.CancelScope(shield=True):
                if not self.broken("never-idle"):
                    session.state = "idle"
                    session.last_stop_reason = stop_reason
                    update = session.state_update("idle", stop_reason)
                    if error is not None:
                        update.error = error
                    if ctx.turn_usage is not None:
                        update.usage = ctx.turn_usage
                    if ctx.idle_meta is not None:
                        update.meta = ctx.idle_meta
                    await session.emit(update)
                else:
                    session.state = "idle"
                try:
                    self.store.save(session)
                except OSError:
                    _log.exception("could not save the session store")
                if session.work_done is not None:
                    session.work_done.set()
                if session.open:
                    self._release(session)
                else:
                    self._withdraw_held(session)
                    session.busy = False

    # -- cancellation ----------------------------------------------------------------------------------

    def _withdraw_held(self, session: Session) -> None:
        while session.held:
            held = session.held.popleft()
            held.withdrawn = True
            held.go.set()  # its handler answers -32800 (ACP2-076 for close)

    def _cancel_foreground(self, session: Session) -> None:
        # session/cancel also covers prompts not yet inserted.
        self._withdraw_held(session)
        if session.work_scope is not None:
            session.cancelling = True
            for pending in list(session.permissions):
                pending.cancel()  # $/cancel_request for each pending permission request (ACP2-003, ACP2-092)
            session.work_scope.cancel()  # and stop waiting for them: not approved (ACP2-091)

    def cancel(self, note: CancelSessionNotification) -> None:
        if self.broken("ignore-cancel"):
            return
        session = self._find(note.session_id)
        if session is not None and session.open:
            self._cancel_foreground(session)

    # -- what the v1 front shares (v1_front.V2Agent) ----------------------------------------------------------

    session_or_error = _session
    check_path = _check_path
    check_mcp = _check_mcp
    mcp_transports = _mcp_transports
